"""The heartbeat lane: Heartbeat requests answered straight from their frame.

Heartbeats are most of what a coordinator serves (every member, every few seconds) and
each is a lookup, a check and a moved deadline. Through the general path one costs a
request header and body object, an input object, an Effects, a token, an Outcome, a
response object and its encoding: about four times the work of the answer itself. The
lane reads the fields it needs with a view decoder generated from the same declarations
(``codec.compiled_view``), calls the state machine's one heartbeat implementation
(``GroupCoordinator.heartbeat_now``) and answers with a cached response for that error
code, with the request's correlation id copied in. Everything the general path checks is
checked here too, by the same admission (``admission.HEARTBEAT``: authorization, the
group's coordinator in a cluster); the tests hold
the two paths to the same bytes, timers and metrics.

A member sends the same heartbeat, byte for byte but for its correlation id, until its
generation changes: the lane keeps recent frames' decoded fields, so a repeated heartbeat
is not decoded at all. The memo holds what the frame says, never an answer: the group's
state is read afresh each time. It is one memo for all connections (the key is all of the
frame after the correlation id, client id included, so a frame means the same whichever
connection sent it): a per-connection memo either thrashed on a connection that carries
many members (64 per connection in the depth-64 benchmark halved the rate) or, sized for
them, let every connection hold that much.
"""

from __future__ import annotations

from protocol import codec
from protocol.apis import BY_KEY
from protocol.apis.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.errors import DecodeError
from protocol.frames import encode_response
from protocol.headers import RequestHeader

from .admission import HEARTBEAT, heartbeat_refused_code, note_admitted, refusal
from .connection_context import ConnectionContext
from .node import Node

HEARTBEAT_KEY = 12
#: Decoded heartbeat frames remembered (of all connections); a full memo is simply
#: cleared. With the frame size cap it stays under about 13 MB, whatever clients send.
MEMO_ENTRIES = 16_384
#: Misses decoded without being remembered after a memo's worth of frames gave fewer than
#: a quarter of its size in hits.
MEMO_BYPASS = 8 * MEMO_ENTRIES
#: Frames longer than this are decoded every time rather than remembered.
MEMO_FRAME_BYTES = 256

_BODY_FIELDS = ("group_id", "generation_id", "member_id", "group_instance_id")
_HEADER_FIELDS = ("client_id",)


#: What a heartbeat frame says (its correlation id aside): version, client id, group id,
#: generation, member id, group instance id. A plain tuple, not a NamedTuple: the collector
#: stops tracking a plain tuple of strings and ints at its first young collection, while a
#: NamedTuple stays tracked, so with 100,000 members the memo's entries were promoted to
#: the old generation and set off full collections (a p99 of 371 ms at 33,000/s).
Heard = tuple[int, str, str, int, str, str | None]


#: A heartbeat lane's answer (this one's and the consumer lane's): the size-prefixed
#: response frame, the request version, the error code, and a session timer to (re)arm
#: (its key, or None) with its deadline.
LaneAnswer = tuple[bytes, int, int, str | None, int]


class _Version:
    """One Heartbeat version's view decoders and its answers' bytes around the
    correlation id (one per error code, made on first use)."""

    __slots__ = ("answers", "body", "header", "version")

    def __init__(self, version: int) -> None:
        api_header = 2 if version >= 4 else 1
        self.version = version
        self.header = codec.compiled_view(RequestHeader, api_header, _HEADER_FIELDS)
        self.body = codec.compiled_view(HeartbeatRequest, version, _BODY_FIELDS)
        self.answers: dict[int, tuple[bytes, bytes]] = {}

    def answer(self, correlation: bytes, error: int) -> bytes:
        parts = self.answers.get(error)
        if parts is None:
            # The general path's own encoder makes the template: the bytes cannot differ.
            body = HeartbeatResponse(error_code=error)
            frame = encode_response(BY_KEY[HEARTBEAT_KEY], self.version, 0, body)
            parts = self.answers[error] = (frame[:4], frame[8:])
        return parts[0] + correlation + parts[1]

    def read(self, frame: bytes) -> Heard:
        size = len(frame)
        (client_id,), offset = self.header(frame, 0, size)
        (group_id, generation_id, member_id, instance), end = self.body(frame, offset, size)
        if end != size:
            raise ValueError("trailing bytes")
        return (self.version, client_id or "", group_id, generation_id, member_id, instance)


class HeartbeatLane:
    def __init__(self, node: Node) -> None:
        self.node = node
        self._security = node.security
        self._heartbeat_now = node.groups.heartbeat_now
        api = BY_KEY[HEARTBEAT_KEY]
        self._versions = {v: _Version(v) for v in range(api.min_version, api.max_version + 1)}
        self.memo: dict[bytes, Heard] = {}
        #: Frames decoded (not answered from the memo): what the memo saves is seen here.
        self.decoded = 0
        self._hits = 0  # since the memo was last cleared
        self._bypass = 0  # misses left to decode without remembering

    def hits_elsewhere(self, hits: int) -> None:
        """Count memo hits of frames the compiled lane (``coordinator/fastlane``) answered
        from this memo, so that it is not taken for thrashing."""
        self._hits += hits

    def answer(self, frame: bytes, conn: ConnectionContext, now_ms: int) -> LaneAnswer | None:
        """The answer to a Heartbeat frame of an authenticated connection; None when the
        general path must take it (a version not served here, or bytes that do not decode:
        the general path refuses them as it refuses any malformed request)."""
        # A remembered frame (most heartbeats) is looked up here, without a call.
        heard = self.memo.get(frame[8:]) if len(frame) >= 8 else None
        if heard is not None and heard[0] == frame[2] << 8 | frame[3]:
            self._hits += 1
        else:
            heard = self._heard(frame)
            if heard is None:
                return None
        version, conn.client_id, group_id, generation_id, member_id, instance = heard
        error: int
        key: str | None
        # Admission as the general path's (``admission.HEARTBEAT``), skipped outright when
        # there is nothing to check: no ACLs, one node (``admission.checks``, inlined: this
        # runs for every heartbeat).
        refused = None
        if self._security.acls_enabled or self.node.routing.clustered:
            refused = refusal(
                self.node, conn.principal, conn.client_host, HEARTBEAT, group_id, None, now_ms
            )
            if refused is None:
                note_admitted(self.node, conn, group_id)  # for the compiled walker too
        if refused is not None:
            error, key, deadline = heartbeat_refused_code(refused), None, 0
        else:
            error, key, deadline = self._heartbeat_now(
                group_id, generation_id, member_id, instance, now_ms
            )
        return self._versions[version].answer(frame[4:8], error), version, error, key, deadline

    def _heard(self, frame: bytes) -> Heard | None:
        if len(frame) < 8:
            return None
        memo = self.memo
        tail = frame[8:]  # all but the api key, version and correlation id
        version = frame[2] << 8 | frame[3]
        heard = memo.get(tail)
        if heard is not None and heard[0] == version:
            self._hits += 1
            return heard
        plan = self._versions.get(version)
        if plan is None:
            return None
        self.decoded += 1
        try:
            heard = plan.read(frame)
        except (DecodeError, *codec.DECODE_FAULTS):
            return None
        if self._bypass:
            self._bypass -= 1
        elif len(frame) <= MEMO_FRAME_BYTES:
            if len(memo) >= MEMO_ENTRIES:
                memo.clear()
                if self._hits < MEMO_ENTRIES // 4:
                    # Thrashing (more members heartbeating than it holds, in turn): each
                    # entry would be garbage before its next use, and that churn made the
                    # collector's generations fill (full collections of a 100,000-member
                    # heap). Decode without remembering for a while, then try again.
                    self._bypass = MEMO_BYPASS
                    self._hits = 0
                    return heard
                self._hits = 0
            memo[tail] = heard
        return heard
