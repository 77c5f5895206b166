"""Every group's committed offsets, kept apart from the groups (Kafka's
OffsetMetadataManager): one store keyed by group id, whatever the group's kind.

A commit is *pending* from when it is accepted until the driver reports it stored
(durability.py); only stored offsets are fetched, expired or reported. Offsets outlive
their group's kind: a classic group that becomes a consumer group (or back) keeps them,
and so does a group whose deletion failed to be stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .records import OffsetCommitRecord

#: Stored offsets of one group: topic -> partition -> the commit as stored.
Committed = dict[str, dict[int, OffsetCommitRecord]]
#: Commits of one group not yet stored, oldest first, by (topic, partition).
CommitsInFlight = dict[tuple[str, int], list[OffsetCommitRecord]]

_NO_COMMITTED: Committed = {}
_NO_PENDING: CommitsInFlight = {}


@dataclass(slots=True)
class OffsetsManager:
    committed: dict[str, Committed] = field(default_factory=dict)
    pending: dict[str, CommitsInFlight] = field(default_factory=dict)

    def of(self, group_id: str) -> Committed:
        """The group's stored offsets (read only: an empty mapping when it has none)."""
        return self.committed.get(group_id, _NO_COMMITTED)

    def pending_of(self, group_id: str) -> CommitsInFlight:
        return self.pending.get(group_id, _NO_PENDING)

    def has_any(self, group_id: str) -> bool:
        """Stored or in flight: a group with either is not "without offsets"."""
        return bool(self.committed.get(group_id)) or bool(self.pending.get(group_id))

    def count(self, group_id: str) -> int:
        return sum(len(parts) for parts in self.of(group_id).values())

    def accept(self, record: OffsetCommitRecord) -> None:
        """A commit accepted: pending until ``stored``."""
        # Looked up before made: ``setdefault`` made a dict and a list per commit, to drop
        # them (every consumer commits every few seconds).
        group = self.pending.get(record.group_id)
        if group is None:
            group = self.pending[record.group_id] = {}
        key = (record.topic, record.partition)
        in_flight = group.get(key)
        if in_flight is None:
            group[key] = [record]
        else:
            in_flight.append(record)

    def accept_all(self, group_id: str, records: list[OffsetCommitRecord]) -> None:
        """``accept`` of each of one group's commits (the commit lane's: a request's)."""
        group = self.pending.get(group_id)
        if group is None:
            group = self.pending[group_id] = {}
        for record in records:
            key = (record.topic, record.partition)
            in_flight = group.get(key)
            if in_flight is None:
                group[key] = [record]
            else:
                in_flight.append(record)

    def stored(self, record: OffsetCommitRecord, ok: bool) -> None:
        """The driver wrote ``record`` (or failed to): a stored commit becomes visible."""
        group = self.pending.get(record.group_id)
        if group is None:
            return
        key = (record.topic, record.partition)
        in_flight = group.get(key)
        if in_flight is None:
            return  # deleted (OffsetDelete, DeleteGroups) while it was in flight
        if in_flight[0] is record:  # writes are reported in order: the oldest, mostly
            del in_flight[0]
        else:
            at = next((i for i, r in enumerate(in_flight) if r is record), None)
            if at is None:
                return  # deleted while in flight, and committed again since
            del in_flight[at]
        if not in_flight:
            del group[key]
            if not group:
                del self.pending[record.group_id]
        if ok:
            self.put(record)

    def put(self, record: OffsetCommitRecord) -> None:
        group = self.committed.get(record.group_id)
        if group is None:
            group = self.committed[record.group_id] = {}
        topic = group.get(record.topic)
        if topic is None:
            topic = group[record.topic] = {}
        topic[record.partition] = record

    def delete(self, group_id: str, topic: str, partition: int) -> bool:
        """Forget one partition's offset, stored or in flight; whether there was one."""
        in_flight = None
        pending = self.pending.get(group_id)
        if pending is not None:
            in_flight = pending.pop((topic, partition), None)
            if not pending:
                del self.pending[group_id]
        stored = None
        committed = self.committed.get(group_id)
        if committed is not None:
            known = committed.get(topic)
            if known is not None:
                stored = known.pop(partition, None)
                if not known:
                    del committed[topic]
            if not committed:
                del self.committed[group_id]
        return stored is not None or bool(in_flight)

    def take(self, group_id: str) -> Committed:
        """Forget the group's offsets (its deletion): returns what was stored, to bring
        back should the deletion not be stored."""
        self.pending.pop(group_id, None)
        return self.committed.pop(group_id, {})

    def restore(self, group_id: str, committed: Committed) -> None:
        if committed:
            self.committed[group_id] = committed

    def groups(self) -> list[str]:
        return [*self.committed.keys() | self.pending.keys()]
