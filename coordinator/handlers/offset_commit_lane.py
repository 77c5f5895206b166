"""The commit lane: a stable member's OffsetCommit (an auto-commit) taken straight from its
frame, its answer the general path's bytes.

Every consumer commits its partitions' positions every few seconds; through the general
path one such commit cost 60 to 80 compiled-lane heartbeats (``bench.commit_metadata``:
89 µs at depth 64): a full decode, admission, an input object per partition, a Context
and an Effects, a token, an Outcome, a result object per partition, the answer's objects
and their encoding, a store write and a future per commit, the driver's report of it.
The lane reads the frame with a view decoder generated from the same declaration
(``codec.compiled_view``), once per member and topics: a member's next auto-commits are
the same bytes but for the correlation id and the offsets, fixed 8-byte fields, so a
template of the first frame (the codec's own encoding of it, the offsets' places found by
encoding markers in them) reads the next ones' offsets and checks every other byte in
one ``struct`` call (a frame the encoder would not have written is decoded every time).
It makes the records
with the state machine's own ``offsets.commit_now`` (the same records, accepted by the
same offsets manager, pending until stored) and answers with the general path's encoded
answer for that version and those topics and partitions, with the correlation id copied
in. The runtime writes the records of every lane commit of a loop turn in one batch
(``Runtime.answer_commit``), through the same driver (``groups.written``, the ledger, the
events), and the server answers each commit only once that batch is stored: the
durability rule holds as on the general path. A failed write answers every partition
NOT_COORDINATOR, as the general path does.

Only the common case is taken: a member of a Stable classic group at its generation, or
a consumer group's member at its epoch, every partition of a known topic, no metadata too
long, one node (no cluster: its coordinator checks and handovers stay on the general
path). Anything else is left to the general path (None): other versions' bytes that do
not decode, OffsetCommit v0 and simple commits (generation -1), unknown groups and
members, stale or newer generations and epochs (KIP-1251's per-partition checks
included), groups rebalancing, unknown topics, topic ids or partitions, and, with ACLs,
any refusal (the general path answers it with its own words). The comparison test
(``tests/coordinator/handlers/test_offset_commit_lane.py``) holds the two paths to the same bytes,
records, stored offsets and sessions over generated commits of every version.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from copy import copy

from protocol import codec
from protocol.apis import BY_KEY
from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from protocol.errors import DecodeError, EncodeError, ErrorCode
from protocol.frames import encode_request, encode_response
from protocol.headers import RequestHeader

from ..group.offsets import LaneShape
from ..group.records import OffsetCommitRecord
from ..security.authz import may_topic
from . import versions as V
from .admission import OFFSET_COMMIT, refusal
from .connection_context import ConnectionContext
from .node import Node
from .offsets import OFFSET_COMMIT_KEY, OFFSET_COMMIT_TOPICS, commit_refused

#: What a commit whose write failed is told (the general path's ``runtime.STORE_FAILED``:
#: Kafka maps a failed append to NOT_COORDINATOR, which clients retry after rediscovery).
STORE_FAILED = ErrorCode.NOT_COORDINATOR
#: Encoded answers remembered (per version, topics and partitions); a full cache is
#: simply cleared.
ANSWERS_HELD = 4_096
#: Frame templates remembered (one per member and topics: about a frame's size each);
#: a full memo is simply cleared.
TEMPLATES_HELD = 16_384
#: Distinct places of a frame's first offset looked up (one per length of the ids
#: before it: client, group, member); frames of more shapes are decoded every time.
FIRSTS_HELD = 8
#: A commit names at most this many partitions to be remembered (each is marked).
MARKED_PARTITIONS = 1_024

_INT64 = struct.Struct(">q")
#: Offsets no commit sends (their bytes are searched for in an encoding: unlikely
#: elsewhere in it, and a misplaced one is caught by the check that follows).
_MARKERS_IN_ORDER = [0x6B61_666B_6100_0000 + i for i in range(MARKED_PARTITIONS)]
_MARKERS = frozenset(_MARKERS_IN_ORDER)
_MARKER_BYTES = [_INT64.pack(m) for m in _MARKERS_IN_ORDER]
_ABSENT: object = object()

_API = BY_KEY[OFFSET_COMMIT_KEY]
_HEADER_FIELDS = ("client_id",)
_BODY_FIELDS = (
    "group_id",
    "generation_id_or_member_epoch",
    "member_id",
    "group_instance_id",
    "retention_time_ms",
    "topics",
)

#: What a request's answer depends on: its version and, in order, each topic (name, id)
#: with its partitions' indexes.
AnswerKey = tuple[int, tuple[tuple[str, object, tuple[int, ...]], ...]]

#: The ok answer's bytes before and after the correlation id, the failed answer's, and the
#: failed answer's body.
_Answers = tuple[bytes, bytes, bytes, bytes, OffsetCommitResponse]


class LaneCommit:
    """A commit the lane took: its records (accepted, to be written), its answers once
    they are stored (``ok``) or failed to be (``failed``, whose body metrics count), and
    the session timer to (re)arm (``key`` None: none) with its deadline."""

    __slots__ = ("answers", "correlation", "deadline", "key", "records", "version")

    def __init__(
        self,
        records: list[OffsetCommitRecord],
        correlation: bytes,
        answers: _Answers,
        version: int,
        key: str | None,
        deadline: int,
    ) -> None:
        self.records = records
        self.correlation = correlation
        self.answers = answers
        self.version = version
        self.key = key
        self.deadline = deadline

    @property
    def ok(self) -> bytes:
        answers = self.answers
        return answers[0] + self.correlation + answers[1]

    @property
    def failed(self) -> bytes:
        answers = self.answers
        return answers[2] + self.correlation + answers[3]

    @property
    def failed_body(self) -> OffsetCommitResponse:
        return self.answers[4]


class _Version:
    """One version's view decoders."""

    __slots__ = ("body", "header", "version")

    def __init__(self, version: int) -> None:
        flexible = version >= 8
        self.version = version
        self.header = codec.compiled_view(RequestHeader, 2 if flexible else 1, _HEADER_FIELDS)
        self.body = codec.compiled_view(OffsetCommitRequest, version, _BODY_FIELDS)


#: A commit's topics as the lane keeps them: (name, [(partition, leader epoch,
#: metadata)]) in request order; the offsets come from each frame.
Shape = LaneShape


class _Read:
    """What a commit frame says but for its correlation id and offsets, with its answers
    and the catalog it was checked against (its change count)."""

    __slots__ = (
        "answers",
        "catalog",
        "client_id",
        "generation",
        "group_id",
        "instance",
        "member_id",
        "retention",
        "shape",
        "version",
    )

    def __init__(
        self,
        version: int,
        client_id: str,
        fields: tuple[str, int, str, str | None, int],
        shape: Shape,
        answers: _Answers,
        catalog: int,
    ) -> None:
        self.version = version
        self.client_id = client_id
        self.group_id, self.generation, self.member_id, self.instance, self.retention = fields
        self.shape = shape
        self.answers = answers
        self.catalog = catalog


class _Template:
    """A frame's bytes around its offsets: a frame of the same length whose bytes are the
    same but for the correlation id and the offsets says what ``read`` says, with its own
    offsets (each a fixed 8 bytes, at ``positions``)."""

    __slots__ = ("first", "head", "layout", "read", "segments", "size")

    def __init__(self, frame: bytes, positions: list[int], read: _Read) -> None:
        self.head = frame[:4]
        self.size = len(frame)
        self.first = positions[0]
        # The bytes after each offset, up to the next one (the last: to the end).
        ends = [*positions[1:], len(frame)]
        self.segments = tuple(frame[at + 8 : end] for at, end in zip(positions, ends, strict=True))
        # From the first offset to the end: each offset and the bytes after it, read in one
        # call (offsets at even places, the bytes between at odd ones).
        self.layout = struct.Struct(">" + "".join(f"q{len(b)}s" for b in self.segments))
        self.read = read


class OffsetCommitLane:
    def __init__(self, node: Node) -> None:
        self.node = node
        api = _API
        # v0 names no member: every v0 commit is a simple one (the general path's).
        first = max(1, api.min_version)
        self._versions = {v: _Version(v) for v in range(first, api.max_version + 1)}
        #: Answer key -> (ok answer, failed answer) around the correlation id, and the
        #: failed answer's body.
        self.answers: dict[AnswerKey, _Answers] = {}
        #: Templates by the frame's bytes from the correlation id to the first offset
        #: (None: that frame's encoding is not the codec's own: decoded every time).
        self.templates: dict[bytes, _Template | None] = {}
        #: Where the first offset is in the frames remembered (few: one per shape of ids).
        self._firsts: list[int] = []
        #: Commits taken here, and commits left to the general path; frames decoded.
        self.taken = 0
        self.declined = 0
        self.decoded = 0

    def commit(self, frame: bytes, conn: ConnectionContext, now_ms: int) -> LaneCommit | None:
        """The commit of an OffsetCommit frame of an authenticated connection, its records
        accepted; None (nothing changed) when the general path must take it."""
        taken = self._commit(frame, conn, now_ms)
        if taken is None:
            self.declined += 1
        else:
            self.taken += 1
        return taken

    def _commit(self, frame: bytes, conn: ConnectionContext, now_ms: int) -> LaneCommit | None:
        node = self.node
        if node.routing.clustered or len(frame) < 8:
            return None
        found = self._remembered(frame)
        if not isinstance(found, tuple):
            found = self._decode(frame, remember=found is None)
            if found is None:
                return None
        read, offsets = found
        security = node.security
        if security.acls_enabled and not self._allowed(read, conn, now_ms):
            return None
        taken = node.groups.commit_now(
            read.group_id,
            read.generation,
            read.member_id,
            read.instance,
            read.retention,
            read.version,
            read.shape,
            offsets,
            now_ms,
        )
        if taken is None:
            return None
        conn.client_id = read.client_id
        records, key, deadline = taken
        return LaneCommit(records, frame[4:8], read.answers, read.version, key, deadline)

    def _remembered(self, frame: bytes) -> tuple[_Read, Sequence[int]] | bool | None:
        """The frame read from a template (its offsets read at their places), if one
        matches it and the catalog is as it was checked against; False: a frame known
        to have none (not the codec's encoding); None: no template."""
        templates = self.templates
        for first in self._firsts:
            template = templates.get(frame[8:first], _ABSENT)
            if template is _ABSENT:
                continue
            if template is None:
                return False
            assert isinstance(template, _Template)
            if (
                len(frame) != template.size
                or frame[:4] != template.head
                or template.read.catalog != self.node.catalog.changes
            ):
                return None
            values = template.layout.unpack_from(frame, first)
            if values[1::2] != template.segments:
                return None
            return template.read, values[::2]
        return None

    def _decode(self, frame: bytes, remember: bool) -> tuple[_Read, Sequence[int]] | None:
        """The frame decoded by the view decoders, checked against the catalog (every
        topic and partition known), a template made of it (``remember``); None: not the
        lane's."""
        size = len(frame)
        plan = self._versions.get(frame[2] << 8 | frame[3])
        if plan is None:
            return None
        self.decoded += 1
        try:
            (client_id,), offset = plan.header(frame, 0, size)
            (group_id, generation, member_id, instance, retention, topics), end = plan.body(
                frame, offset, size
            )
        except (DecodeError, *codec.DECODE_FAULTS):
            return None
        if end != size or generation < 0 or not topics:
            return None
        version = plan.version
        shape = self._shape(topics, version)
        if shape is None:
            return None
        if version not in V.OFFSET_COMMIT_RETENTION:
            retention = -1
        read = _Read(
            version,
            client_id or "",
            (group_id, generation, member_id, instance, retention),
            shape,
            self._answers(version, topics),
            self.node.catalog.changes,
        )
        offsets = [p.committed_offset for t in topics for p in t.partitions]
        if remember:
            self._remember(frame, client_id, read, topics, offsets)
        return read, offsets

    def _remember(
        self,
        frame: bytes,
        client_id: str | None,
        read: _Read,
        topics: list[OffsetCommitRequestTopic],
        offsets: list[int],
    ) -> None:
        """Make a template of the frame: where the codec's encoder puts each offset (found
        by encoding the request with markers for them), kept when the frame is the codec's
        own encoding of what it says (its bytes, the offsets put back in the marked
        encoding, are the frame's: then a frame equal to it but for the offsets decodes
        the same, with those offsets)."""
        if _MARKERS.intersection(offsets) or len(offsets) > len(_MARKER_BYTES):
            return
        body = OffsetCommitRequest(
            group_id=read.group_id,
            generation_id_or_member_epoch=read.generation,
            member_id=read.member_id,
            group_instance_id=read.instance,
            retention_time_ms=read.retention if read.version in V.OFFSET_COMMIT_RETENTION else -1,
            topics=[
                OffsetCommitRequestTopic(
                    name=t.name, topic_id=t.topic_id, partitions=[copy(p) for p in t.partitions]
                )
                for t in topics
            ],
        )
        marks = iter(_MARKERS_IN_ORDER)
        for t in body.topics:
            for p in t.partitions:
                p.committed_offset = next(marks)
        try:
            marked = encode_request(body, read.version, 0, client_id)[4:]
        except (EncodeError, *codec.ENCODE_FAULTS):
            return
        positions = []
        at = 8
        for i in range(len(offsets)):
            at = marked.find(_MARKER_BYTES[i], at)
            if at < 0:
                return
            positions.append(at)
            at += 8
        if not positions:
            return
        rebuilt = bytearray(marked)
        rebuilt[4:8] = frame[4:8]
        for at, value in zip(positions, offsets, strict=True):
            _INT64.pack_into(rebuilt, at, value)
        first = positions[0]
        template = _Template(marked, positions, read) if rebuilt == frame else None
        if first not in self._firsts:
            if len(self._firsts) >= FIRSTS_HELD:
                return
            self._firsts.append(first)
        if len(self.templates) >= TEMPLATES_HELD:
            self.templates.clear()
        self.templates[frame[8:first]] = template

    def _allowed(self, read: _Read, conn: ConnectionContext, now_ms: int) -> bool:
        """Admission as the general path's, and every topic authorized (with ACLs)."""
        node = self.node
        principal, host = conn.principal, conn.client_host
        if refusal(node, principal, host, OFFSET_COMMIT, read.group_id, None, now_ms) is not None:
            return False
        security = node.security
        return all(
            may_topic(security, conn, OFFSET_COMMIT_TOPICS, name) for name, _parts in read.shape
        )

    def _shape(self, topics: list[OffsetCommitRequestTopic], version: int) -> Shape | None:
        """The topics by name with their partitions, when every one is known; None
        otherwise."""
        catalog = self.node.catalog
        by_id = version >= V.OFFSET_COMMIT_BY_TOPIC_ID
        shape: Shape = []
        for t in topics:
            found = catalog.by_id(t.topic_id) if by_id else catalog.get(t.name)
            if found is None:
                return None
            count = found.partitions
            parts = []
            for p in t.partitions:
                index = p.partition_index
                if not 0 <= index < count:
                    return None
                parts.append((index, p.committed_leader_epoch, p.committed_metadata))
            if not parts:
                return None
            shape.append((found.name, parts))
        return shape

    def _answers(self, version: int, topics: list[OffsetCommitRequestTopic]) -> _Answers:
        key: AnswerKey = (
            version,
            tuple(
                (t.name, t.topic_id, tuple(p.partition_index for p in t.partitions)) for t in topics
            ),
        )
        found = self.answers.get(key)
        if found is not None:
            return found
        # The general path's own answers (``commit_refused``: every partition with one
        # code, in request order) and encoder: the bytes cannot differ.
        request = OffsetCommitRequest(group_id="", topics=topics)
        ok = encode_response(_API, version, 0, commit_refused(request, version, ErrorCode.NONE))
        failed_body = commit_refused(request, version, STORE_FAILED)
        failed = encode_response(_API, version, 0, failed_body)
        if len(self.answers) >= ANSWERS_HELD:
            self.answers.clear()
        found = self.answers[key] = (ok[:4], ok[8:], failed[:4], failed[8:], failed_body)
        return found
