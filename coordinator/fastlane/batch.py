"""The compiled heartbeat lane's Python side: a read's leading Heartbeat frames answered
in one call to C (``_heartbeats.c``), with no Python per frame.

The pure-Python heartbeat lane (``handlers/heartbeat_lane.py``) costs some 3 µs of Python
per frame (framing, the turn's loop, the memo, ``membership.beat``, the answer's bytes):
at 64 requests in flight that is a fifth of what a C server answering canned bytes
reaches, and a uvloop server answering canned bytes is itself under half of it. So the
steady case moves to C: the server hands a read to ``HeartbeatBatch.answer_read`` before
framing it; the walker answers every complete Heartbeat frame at its start that the Python
lane would answer without error or with REBALANCE_IN_PROGRESS and needs no timer change,
from the same memo of decoded frames and the same group state, moving the session in place
as ``membership.beat`` does; the first frame it cannot answer stops it, and the rest of the
read goes the Python way, after the answers, in order. Everything else (refusals, errors,
new or earlier session timers, undecoded frames, other APIs) is the Python lane's and the
dispatcher's, so the walker holds no logic of its own beyond the success case.

It is used only where the Python lane would skip admission (no ACLs, one node: nothing to
refuse), and only when the module was built (``setup.py``: optional, so an install without
a compiler still works) and ``COORDINATOR_PURE_PYTHON`` is unset; the tests run both and
compare bytes and state (``tests/coordinator/fastlane/test_heartbeat_batch.py``).
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

from protocol.apis import BY_KEY
from protocol.apis.heartbeat import HeartbeatResponse
from protocol.errors import ErrorCode
from protocol.frames import encode_response

from ..group.classic.group import ClassicGroup
from ..group.classic.member import Member
from ..group.classic.states import COMPLETING_REBALANCE, PREPARING_REBALANCE, STABLE
from ..group.coordinator import GroupCoordinator
from ..group.deadlines import Armed
from ..handlers.connection_context import ConnectionContext
from ..handlers.heartbeat_lane import HEARTBEAT_KEY, HeartbeatLane
from ..handlers.node import Node

if TYPE_CHECKING:
    from ..telemetry.metrics import Metrics

try:
    from . import _heartbeats  # type: ignore[attr-defined]
except ImportError:  # built without a compiler: the Python lane answers everything
    _heartbeats = None

#: Set (to anything but "" or "0"): the compiled lane is not used, the Python one answers.
PURE_PYTHON_ENV = "COORDINATOR_PURE_PYTHON"
#: Frames the walker answers per read at most: a C answer costs about a twentieth of a
#: Python one, so this is about as long as the Python path's turn of 64 heartbeats, after
#: which other connections are served (the rest of the read goes the Python way).
FRAMES_PER_READ = 1024

_API = BY_KEY[HEARTBEAT_KEY]


def compiled() -> bool:
    """Whether the compiled module was built (and imports)."""
    return _heartbeats is not None


def forced_pure() -> bool:
    return os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0")


class HeartbeatBatch:
    """Answers the Heartbeat frames at the start of a read (see the module's doc)."""

    def __init__(self, node: Node, lane: HeartbeatLane) -> None:
        assert _heartbeats is not None
        self.node = node
        self.lane = lane
        # The shard's dicts themselves (never replaced: groups and timers change in them).
        self._groups, self._armed = node.groups.heartbeat_tables()
        answers = tuple(
            (_answer(version, ErrorCode.NONE), _answer(version, ErrorCode.REBALANCE_IN_PROGRESS))
            for version in range(_API.min_version, _API.max_version + 1)
        )
        self._walker = _heartbeats.Walker(
            lane.memo,
            (ClassicGroup, Member, Armed),
            (STABLE, COMPLETING_REBALANCE, PREPARING_REBALANCE),
            _API.min_version,
            answers,
        )
        self._walk = self._walker.walk
        #: Frames answered here (the Python lane's own count is in its memo statistics).
        self.answered = 0

    def answer_read(
        self,
        data: bytes,
        conn: ConnectionContext,
        now_ms: int,
        max_frame_bytes: int,
        metrics: Metrics | None,
    ) -> tuple[int, bytes]:
        """(bytes of ``data`` answered, their answers): the complete Heartbeat frames at its
        start that the walker may answer; the rest is the caller's to frame as usual."""
        security, routing = self.node.security, self.node.routing
        if security.acls_enabled or routing.clustered:
            return 0, b""  # admission has something to check: the Python lane does it
        started = time.perf_counter() if metrics is not None else 0.0
        consumed, out, answered = self._walk(
            data, self._groups, self._armed, now_ms, max_frame_bytes, FRAMES_PER_READ
        )
        if answered:
            self.answered += answered
            conn.client_id = self._walker.client_id
            self.lane.hits_elsewhere(answered)
            if metrics is not None:
                _count(metrics, self._walker.counts(), answered, started)
        return consumed, out


def heartbeat_batch(node: Node, lane: HeartbeatLane | None) -> HeartbeatBatch | None:
    """The compiled lane for ``node``, or None: not built, forced off, no Python lane to
    share its memo with, or a state machine other than the one it was written for."""
    if lane is None or _heartbeats is None or forced_pure():
        return None
    if type(node.groups) is not GroupCoordinator:
        return None
    return HeartbeatBatch(node, lane)


def _answer(version: int, error: int) -> bytes:
    # The general path's own encoder makes the bytes (as the Python lane's do).
    return encode_response(_API, version, 0, HeartbeatResponse(error_code=error))


def _count(metrics: Metrics, counts: tuple[int, ...], answered: int, started: float) -> None:
    """The frames answered counted as the Python lane counts each (``request_received``,
    ``request_answered_code``: a request, its latency, its error), in one tally per
    (version, error) rather than one per frame; each timed as waiting for the whole walk.
    A read's frames are mostly of one version and one answer: that slot is found in C."""
    if answered in counts:
        slot = counts.index(answered)
        version, error = _SLOTS[slot]
        metrics.requests_answered_code(_API, version, error, answered, started)
        return
    for slot, n in enumerate(counts):
        if n:
            version, error = _SLOTS[slot]
            metrics.requests_answered_code(_API, version, error, n, started)


_ERRORS = (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS)
#: The walker's count slots: (version - min version) * 2 + (1 if rebalancing), as (version, error).
_SLOTS = tuple(
    (version, error)
    for version in range(_API.min_version, _API.max_version + 1)
    for error in _ERRORS
)
