"""The consumer heartbeat lane: a KIP-848 member's steady ConsumerGroupHeartbeat answered
straight from its frame.

A reconciled member heartbeats with its group, member id and epoch and nothing else
(every other field absent: null, or -1 for the rebalance timeout), and is told its epoch
and the heartbeat interval again. Through the general path that is a full decode, an
input object, a call through validation, the member's epoch check, subscription and
metadata comparisons, an Effects, a token, an Outcome, a response object and its
encoding. The lane reads the frame with a view decoder generated from the same
declaration (``codec.compiled_view``), admits it by the same admission
(``admission.CONSUMER_GROUP_HEARTBEAT``) and asks the state machine whether it is that
steady heartbeat (``GroupCoordinator.steady_consumer_heartbeat``, ``group/consumer/
steady.py``), which moves the member's session as the general path would. The answer's
bytes are the general path's encoder's, kept per (version, member, epoch, interval) with
the correlation id copied in.

Anything else goes the general path (None): a frame that carries any other field, a
version not served here, bytes that do not decode, a refusal by admission (the general
path answers it with its own words), and whatever the state machine declines: an unknown
or fenced member, a stale epoch, a member not at its group's target (revoking, or a new
target to be told), a group with records in flight (the answer would wait for them: the
lane never answers what a restart would not load), changed partitions, a regex refresh.
``tests/coordinator/handlers/test_consumer_heartbeat_lane.py`` holds the lane to the general
path's bytes and timers over generated heartbeats of every version.

Where the compiled heartbeat lane is built (``coordinator/fastlane``), a read's leading
steady heartbeats are answered in C before they get here, from this lane's memo and with
its templates (``template``): this lane decodes each frame the first time, and answers
whatever the walker leaves (a read's rest, and everything when it is not built).
"""

from __future__ import annotations

from protocol import codec
from protocol.apis import BY_KEY
from protocol.apis.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from protocol.errors import DecodeError
from protocol.frames import encode_response
from protocol.headers import RequestHeader

from .admission import CONSUMER_GROUP_HEARTBEAT, note_admitted, refusal
from .connection_context import ConnectionContext
from .heartbeat_lane import LaneAnswer
from .node import Node

CONSUMER_GROUP_HEARTBEAT_KEY = 68
#: Decoded frames (and answers) remembered; a full memo is simply cleared.
MEMO_ENTRIES = 16_384
#: Frames longer than this are not steady heartbeats (ids and an epoch) and not read.
STEADY_FRAME_BYTES = 512
_NO_CORRELATION = bytes(4)

_HEADER_FIELDS = ("client_id",)
_ALL_FIELDS = (
    "group_id",
    "member_id",
    "member_epoch",
    "instance_id",
    "rack_id",
    "rebalance_timeout_ms",
    "subscribed_topic_names",
    "subscribed_topic_regex",
    "server_assignor",
    "topic_partitions",
)

#: What a steady heartbeat frame says (its correlation id aside): version, client id,
#: group id, member id, epoch, instance id. None: not a steady heartbeat.
Heard = tuple[int, str, str, str, int, str | None]


class _Version:
    """One version's view decoders and its answers' bytes around the correlation id."""

    __slots__ = ("answers", "body", "fields", "header", "version")

    def __init__(self, version: int) -> None:
        self.version = version
        self.header = codec.compiled_view(RequestHeader, 2, _HEADER_FIELDS)
        self.fields = tuple(name for name in _ALL_FIELDS if _present(name, version))
        self.body = codec.compiled_view(ConsumerGroupHeartbeatRequest, version, self.fields)
        self.answers: dict[tuple[str, int, int], tuple[bytes, bytes]] = {}

    def read(self, frame: bytes) -> Heard | None:
        size = len(frame)
        (client_id,), offset = self.header(frame, 0, size)
        values, end = self.body(frame, offset, size)
        if end != size:
            raise ValueError("trailing bytes")
        group_id, member_id, epoch, instance_id, rack_id, rebalance_timeout = values[:6]
        if rack_id is not None or rebalance_timeout != -1 or any(v is not None for v in values[6:]):
            return None  # says more than a steady heartbeat does
        return (self.version, client_id or "", group_id, member_id, epoch, instance_id)

    def answer(self, correlation: bytes, member_id: str, epoch: int, interval: int) -> bytes:
        key = (member_id, epoch, interval)
        parts = self.answers.get(key)
        if parts is None:
            if len(self.answers) >= MEMO_ENTRIES:
                self.answers.clear()
            # The general path's own encoder makes the template: the bytes cannot differ.
            body = ConsumerGroupHeartbeatResponse(
                throttle_time_ms=0,
                error_code=0,
                member_id=member_id,
                member_epoch=epoch,
                heartbeat_interval_ms=interval,
            )
            api = BY_KEY[CONSUMER_GROUP_HEARTBEAT_KEY]
            frame = encode_response(api, self.version, 0, body)
            parts = self.answers[key] = (frame[:4], frame[8:])
        return parts[0] + correlation + parts[1]


def _present(name: str, version: int) -> bool:
    return name != "subscribed_topic_regex" or version >= 1


class ConsumerHeartbeatLane:
    def __init__(self, node: Node) -> None:
        self.node = node
        self._steady = node.groups.steady_consumer_heartbeat
        api = BY_KEY[CONSUMER_GROUP_HEARTBEAT_KEY]
        self._versions = {v: _Version(v) for v in range(api.min_version, api.max_version + 1)}
        #: Frames (all but the api key, version and correlation id) read, by their bytes.
        self.memo: dict[bytes, Heard | None] = {}
        #: Frames decoded (not answered from the memo), and heartbeats answered.
        self.decoded = 0
        self.answered = 0

    def answer(self, frame: bytes, conn: ConnectionContext, now_ms: int) -> LaneAnswer | None:
        """The answer to a ConsumerGroupHeartbeat frame of an authenticated connection;
        None when the general path must take it."""
        tail = frame[8:]
        heard = self.memo[tail] if tail in self.memo else self._heard(frame, tail)
        if heard is None or heard[0] != frame[2] << 8 | frame[3]:
            return None
        version, client_id, group_id, member_id, epoch, instance_id = heard
        node = self.node
        if node.security.acls_enabled or node.routing.clustered:
            refused = refusal(
                node,
                conn.principal,
                conn.client_host,
                CONSUMER_GROUP_HEARTBEAT,
                group_id,
                _NO_BODY,
                now_ms,
            )
            if refused is not None:
                return None  # refused: answered by the general path, in its words
            note_admitted(node, conn, group_id)  # for the compiled walker too
        steady = self._steady(
            group_id, member_id, epoch, instance_id, client_id, conn.client_host, now_ms
        )
        if steady is None:
            return None
        conn.client_id = client_id
        self.answered += 1
        member_epoch, interval, key, deadline = steady
        data = self._versions[version].answer(frame[4:8], member_id, member_epoch, interval)
        return data, version, 0, key, deadline  # answered without error

    def template(self, version: int, member_id: str, epoch: int, interval: int) -> bytes:
        """The answer to a steady heartbeat of ``version`` (correlation id 0), as ``answer``
        makes it: for the compiled lane (``coordinator/fastlane``), which copies the
        correlation id in."""
        return self._versions[version].answer(_NO_CORRELATION, member_id, epoch, interval)

    def _heard(self, frame: bytes, tail: bytes) -> Heard | None:
        """A frame not in the memo, read (and remembered)."""
        if len(frame) < 8 or len(frame) > STEADY_FRAME_BYTES:
            return None
        memo = self.memo
        plan = self._versions.get(frame[2] << 8 | frame[3])
        if plan is None:
            return None
        self.decoded += 1
        try:
            heard = plan.read(frame)
        except (DecodeError, *codec.DECODE_FAULTS):
            return None
        if len(memo) >= MEMO_ENTRIES:
            memo.clear()
        memo[tail] = heard
        return heard


class _NoBody:
    """What admission reads of a steady heartbeat's body: no topics subscribed by name."""

    subscribed_topic_names = None


_NO_BODY = _NoBody()
