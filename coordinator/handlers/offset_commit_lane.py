"""The commit lane: a stable member's OffsetCommit (an auto-commit) taken straight from its
frame, its answer the general path's bytes.

Every consumer commits its partitions' positions every few seconds; through the general
path one such commit cost about 20 heartbeats (``bench.commit_metadata``): a full decode,
admission, an input object per partition, a Context and an Effects, a token, an Outcome,
a result object per partition, the answer's objects and their encoding, a store write
and a future per commit, the driver's report of it. The lane reads the frame with a view
decoder generated from the same declaration (``codec.compiled_view``), makes the records
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
(``tests/coordinator/test_offset_commit_lane.py``) holds the two paths to the same bytes,
records, stored offsets and sessions over generated commits of every version.
"""

from __future__ import annotations

from protocol import codec
from protocol.apis import BY_KEY
from protocol.apis.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
)
from protocol.errors import DecodeError, ErrorCode
from protocol.frames import encode_response
from protocol.headers import RequestHeader

from ..group.offsets import LaneTopics
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

    __slots__ = ("deadline", "failed", "failed_body", "key", "ok", "records", "version")

    def __init__(
        self,
        records: list[OffsetCommitRecord],
        ok: bytes,
        failed: bytes,
        failed_body: OffsetCommitResponse,
        version: int,
        key: str | None,
        deadline: int,
    ) -> None:
        self.records = records
        self.ok = ok
        self.failed = failed
        self.failed_body = failed_body
        self.version = version
        self.key = key
        self.deadline = deadline


class _Version:
    """One version's view decoders."""

    __slots__ = ("body", "header")

    def __init__(self, version: int) -> None:
        flexible = version >= 8
        self.header = codec.compiled_view(RequestHeader, 2 if flexible else 1, _HEADER_FIELDS)
        self.body = codec.compiled_view(OffsetCommitRequest, version, _BODY_FIELDS)


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
        #: Commits taken here, and commits left to the general path.
        self.taken = 0
        self.declined = 0

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
        size = len(frame)
        if size < 8:
            return None
        version = frame[2] << 8 | frame[3]
        plan = self._versions.get(version)
        if plan is None:
            return None
        try:
            (client_id,), offset = plan.header(frame, 0, size)
            (group_id, generation, member_id, instance, retention, topics), end = plan.body(
                frame, offset, size
            )
        except (DecodeError, *codec.DECODE_FAULTS):
            return None
        if end != size or generation < 0 or not topics:
            return None
        node = self.node
        if node.routing.clustered:
            return None
        security = node.security
        if security.acls_enabled and (
            refusal(node, conn.principal, conn.client_host, OFFSET_COMMIT, group_id, None, now_ms)
            is not None
        ):
            return None
        named = self._named(topics, version, conn)
        if named is None:
            return None
        if version not in V.OFFSET_COMMIT_RETENTION:
            retention = -1
        taken = node.groups.commit_now(
            group_id, generation, member_id, instance, retention, version, named, now_ms
        )
        if taken is None:
            return None
        conn.client_id = client_id or ""
        records, key, deadline = taken
        ok_head, ok_tail, failed_head, failed_tail, failed_body = self._answers(version, topics)
        correlation = frame[4:8]
        return LaneCommit(
            records,
            ok_head + correlation + ok_tail,
            failed_head + correlation + failed_tail,
            failed_body,
            version,
            key,
            deadline,
        )

    def _named(
        self, topics: list[OffsetCommitRequestTopic], version: int, conn: ConnectionContext
    ) -> LaneTopics | None:
        """The topics by name with their partitions, when every one is known (and, with
        ACLs, allowed); None otherwise."""
        catalog = self.node.catalog
        security = self.node.security
        by_id = version >= V.OFFSET_COMMIT_BY_TOPIC_ID
        named: LaneTopics = []
        for t in topics:
            found = catalog.by_id(t.topic_id) if by_id else catalog.get(t.name)
            if found is None:
                return None
            name = found.name
            if security.acls_enabled and not may_topic(security, conn, OFFSET_COMMIT_TOPICS, name):
                return None
            count = found.partitions
            parts = []
            for p in t.partitions:
                index = p.partition_index
                if not 0 <= index < count:
                    return None
                parts.append(
                    (index, p.committed_offset, p.committed_leader_epoch, p.committed_metadata)
                )
            if not parts:
                return None
            named.append((name, parts))
        return named

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
