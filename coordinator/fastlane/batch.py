"""The compiled heartbeat lane's Python side: a read's leading Heartbeat and steady
ConsumerGroupHeartbeat frames answered in one call to C (``_heartbeats.c``), with no Python
per frame.

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

KIP-848's steady heartbeat (a reconciled member sending its ids and epoch only) costs the
pure-Python consumer lane (``handlers/consumer_heartbeat_lane.py``) some 8 µs, ten times
a compiled classic one, though it does no more: so the walker answers those frames too, in
the same pass (a read of both kinds stays in C). It makes ``group/consumer/steady.py``'s
``beat`` tests in C on the same objects (the group, its member, the ledger's records in
flight, the regex refresh, the partition counts against the topic catalog, the group's own
configs, the session timer) and answers only where ``beat`` answers with no timer to tell
the driver of; its answer is the consumer lane's template (the general path's encoder's
bytes, for the member, its epoch and the daemon's heartbeat interval) with the correlation
id copied in. Whatever ``beat`` declines, or the walker cannot read as expected, stops it:
the consumer lane and the general path answer it, and nothing needing a record is ever
answered here (a group with records in flight is declined as ``beat`` declines it).

It is used only where the Python lanes would skip admission (no ACLs, one node: nothing to
refuse), and only when the module was built (``setup.py``: optional, so an install without
a compiler still works) and ``COORDINATOR_PURE_PYTHON`` is unset; the tests run both and
compare bytes and state (``tests/coordinator/fastlane/test_heartbeat_batch.py``,
``tests/coordinator/fastlane/test_consumer_heartbeat_batch.py``).
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocol.apis import BY_KEY
from protocol.apis.heartbeat import HeartbeatResponse
from protocol.errors import ErrorCode
from protocol.frames import encode_response

from ..group.classic.group import ClassicGroup
from ..group.classic.member import Member
from ..group.classic.states import COMPLETING_REBALANCE, PREPARING_REBALANCE, STABLE
from ..group.consumer.group import ConsumerGroup
from ..group.consumer.member import ConsumerMember, MemberState
from ..group.coordinator import GroupCoordinator
from ..group.deadlines import Armed, consumer_session_key
from ..group.ledger import Ledger
from ..handlers.admission import admitted_groups
from ..handlers.connection_context import ConnectionContext
from ..handlers.consumer_heartbeat_lane import CONSUMER_GROUP_HEARTBEAT_KEY, ConsumerHeartbeatLane
from ..handlers.heartbeat_lane import HEARTBEAT_KEY, HeartbeatLane
from ..handlers.node import Node
from ..shared.catalog import Topic

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
#: A hot connection's reader answers a whole read (64 KiB) however many frames it holds:
#: it is one read of one connection either way, and the loop serves the others after it.
READER_FRAMES = 65536 // 12

_API = BY_KEY[HEARTBEAT_KEY]
_CONSUMER_API = BY_KEY[CONSUMER_GROUP_HEARTBEAT_KEY]


def compiled() -> bool:
    """Whether the compiled module was built (and imports)."""
    return _heartbeats is not None


def forced_pure() -> bool:
    return os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0")


class HeartbeatBatch:
    """Answers the heartbeat frames at the start of a read (see the module's doc)."""

    def __init__(
        self, node: Node, lane: HeartbeatLane, consumer_lane: ConsumerHeartbeatLane | None = None
    ) -> None:
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
        self.consumer_lane = consumer_lane
        if consumer_lane is not None:
            self._consumer_setup(node, consumer_lane)
        self._walk = self._walker.walk
        #: Frames answered here (the Python lane's own count is in its memo statistics),
        #: and of them ConsumerGroupHeartbeats.
        self.answered = 0
        self.consumer_answered = 0

    def _consumer_setup(self, node: Node, consumer_lane: ConsumerHeartbeatLane) -> None:
        ledgers, group_configs = node.groups.consumer_heartbeat_tables()
        consumer = node.groups.config.consumer  # frozen, never replaced
        self._walker.consumer(
            consumer_lane.memo,
            (ConsumerGroup, ConsumerMember, Ledger, Topic, deque),
            MemberState.STABLE,
            (_CONSUMER_API.min_version, _CONSUMER_API.max_version),
            # The catalog's own dict, which the state machine's ``topic_partitions`` and
            # ``topic_count`` read (Node wires them to it; cleared, never replaced).
            (ledgers, group_configs, node.catalog.live_by_name()),
            (
                consumer.session_timeout_ms,
                consumer.heartbeat_interval_ms,
                consumer.regex_refresh_interval_ms,
            ),
            consumer_session_key,
            consumer_lane.template,
        )

    def answer_read(
        self,
        data: bytes,
        conn: ConnectionContext,
        now_ms: int,
        max_frame_bytes: int,
        metrics: Metrics | None,
    ) -> tuple[int, bytes]:
        """(bytes of ``data`` answered, their answers): the complete Heartbeat frames at its
        start that the walker may answer; the rest is the caller's to frame as usual.
        Where admission checks something (ACLs, a cluster), only frames of groups the
        connection was admitted to (``admission.admitted_groups``), and in a cluster none
        once this node's lease may have run out."""
        node = self.node
        admitted = None
        if node.security.acls_enabled or node.routing.clustered:
            if node.routing.stale(now_ms):
                return 0, b""
            admitted = admitted_groups(node, conn)
        started = time.perf_counter() if metrics is not None else 0.0
        consumed, out, answered, consumers = self._walk(
            data,
            self._groups,
            self._armed,
            now_ms,
            max_frame_bytes,
            FRAMES_PER_READ,
            conn.client_host,
            admitted,
        )
        if answered or consumers:
            self.told(conn, answered, consumers, started, metrics)
        return consumed, out

    def told(
        self,
        conn: ConnectionContext,
        answered: int,
        consumers: int,
        started: float,
        metrics: Metrics | None,
    ) -> None:
        """The bookkeeping after a walk that answered ``answered`` Heartbeats and
        ``consumers`` ConsumerGroupHeartbeats (started at ``started``, perf_counter):
        the lanes' counts, the connection's client id, the metrics."""
        self.settled(conn, answered, consumers, self._walker.client_id)
        if metrics is not None:
            if answered:
                _count(metrics, self._walker.counts(), answered, started)
            if consumers:
                _count_consumer(metrics, self._walker.consumer_counts(), started)

    def settled(
        self, conn: ConnectionContext, answered: int, consumers: int, client: str | None
    ) -> None:
        """The counts and client id of frames answered (``told`` without the metrics:
        a hot connection's reader owes them when the daemon has none)."""
        self.answered += answered + consumers
        if client is not None:
            conn.client_id = client
        if answered:
            self.lane.hits_elsewhere(answered)
        if consumers:
            self.consumer_answered += consumers
            assert self.consumer_lane is not None
            self.consumer_lane.answered += consumers

    def reader(
        self,
        fd: int,
        conn: ConnectionContext,
        clock: Callable[[], float],
        offset_ms: float | None,
        max_frame_bytes: int,
        tally: Callable[[int, int, float], None] | None,
        leave: Callable[[bytes, bytes, BaseException | None], None],
    ) -> Any:
        """A ``_heartbeats.Reader`` answering what ``answer_read`` answers, read by itself
        from ``fd`` (which it then owns) and written back there (``shell/hot_reads.py``).
        ``clock``: the loop's time(), read as LoopClock reads it with ``offset_ms``, or
        (``offset_ms`` None) the milliseconds themselves. ``tally`` None: the bookkeeping
        waits for the reader's settle()."""
        assert _heartbeats is not None
        return _heartbeats.Reader(
            self._walker,
            fd,
            self._groups,
            self._armed,
            clock,
            offset_ms,
            max_frame_bytes,
            READER_FRAMES,
            conn.client_host,
            tally,
            leave,
        )


def heartbeat_batch(
    node: Node, lane: HeartbeatLane | None, consumer_lane: ConsumerHeartbeatLane | None = None
) -> HeartbeatBatch | None:
    """The compiled lane for ``node``, or None: not built, forced off, no Python lane to
    share its memo with, or a state machine other than the one it was written for. Without
    a consumer lane, ConsumerGroupHeartbeats are all left to the Python way."""
    if lane is None or _heartbeats is None or forced_pure():
        return None
    if type(node.groups) is not GroupCoordinator:
        return None
    return HeartbeatBatch(node, lane, consumer_lane)


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


def _count_consumer(metrics: Metrics, counts: tuple[int, ...], started: float) -> None:
    """ConsumerGroupHeartbeats answered, counted as the consumer lane counts each (no
    error), one tally per version, as ``_count`` counts Heartbeats."""
    for slot, n in enumerate(counts):
        if n:
            version = _CONSUMER_API.min_version + slot
            metrics.requests_answered_code(_CONSUMER_API, version, ErrorCode.NONE, n, started)


_ERRORS = (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS)
#: The walker's count slots: (version - min version) * 2 + (1 if rebalancing), as (version, error).
_SLOTS = tuple(
    (version, error)
    for version in range(_API.min_version, _API.max_version + 1)
    for error in _ERRORS
)
