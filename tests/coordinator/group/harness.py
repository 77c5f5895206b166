"""The sans-IO coordinator driven by the daemon's own driver (``coordinator/shell/driver.py``) with
a fake clock, timers fired in deadline order, a store the test reports writes of, and
replies collected by request token."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from coordinator.group import Effects, GroupConfig, GroupCoordinator
from coordinator.group.classic.group import ClassicGroup
from coordinator.group.classic.states import GroupState
from coordinator.group.records import Record
from coordinator.group.requests import (
    HeartbeatInput,
    JoinGroupInput,
    LeaveGroupInput,
    LeavingMember,
    OffsetCommitInput,
    PartitionCommit,
    SyncGroupInput,
    TopicCommit,
)
from coordinator.group.results import (
    DeleteGroupsResult,
    GroupError,
    JoinGroupResult,
    LeaveGroupResult,
    OffsetCommitResult,
    OffsetDeleteResult,
    SyncGroupResult,
)
from coordinator.shell.driver import Batch, EffectsDriver

GROUP = "group"
PROTOCOLS = [("range", b"range-metadata"), ("roundrobin", b"roundrobin-metadata")]


class WriteFailed(Exception):
    """How ``Harness.store(ok=False)`` fails a write."""


@dataclass(frozen=True)
class Failed:
    """The reply of a request whose write failed (the daemon answers NOT_COORDINATOR, or
    closes the connection)."""

    error: BaseException


@dataclass
class Harness:
    """Drives a ``GroupCoordinator`` the way the server does."""

    config: GroupConfig = field(default_factory=GroupConfig)
    now: int = 0
    #: Whether records are reported stored as soon as a call returns them; if not, they
    #: wait in ``writes`` for ``store()`` (a slow or failing disk), and so do the replies
    #: that came with them, as in the daemon.
    store_at_once: bool = True

    def __post_init__(self) -> None:
        ids = itertools.count(1)
        self.co = GroupCoordinator(self.config, lambda prefix: f"{prefix}-{next(ids)}")
        self.timers = OrderedTimers()
        self.replies: dict[int, Any] = {}
        self.records: list[object] = []
        self.writes: list[Batch[int]] = []  # written, not yet reported (store_at_once off)
        self.stored: list[Record] = []  # what a restart would load
        self.events: list[object] = []
        self._tokens = itertools.count(1)
        self._driver: EffectsDriver[int, None] | None = None

    @property
    def driver(self) -> EffectsDriver[int, None]:
        """The daemon's driver, on ``co`` (which a subclass may have replaced)."""
        if self._driver is None or self._driver.groups is not self.co:
            self._driver = EffectsDriver(
                self.co,
                timers=self.timers,
                write=self._write,
                emit=self.events.append,
                answer=self._answer,
                fail=lambda token, error: self._answer(token, Failed(error)),
                now_ms=lambda: self.now,
            )
        return self._driver

    # -- plumbing --------------------------------------------------------------------------

    def apply(self, effects: Effects) -> Effects:
        self.driver.apply(effects)
        return effects

    def _answer(self, token: int, result: object) -> None:
        assert token not in self.replies, f"token {token} answered twice"
        self.replies[token] = result

    def _write(self, batch: Batch[int]) -> None:
        self.records += batch.records
        if self.store_at_once:
            self.stored += batch.records
            self.driver.written(batch, None)
        else:
            self.writes.append(batch)

    def store(self, ok: bool = True) -> None:
        """Report the oldest outstanding write stored (or failed)."""
        batch = self.writes.pop(0)
        if ok:
            self.stored += batch.records
        self.driver.written(batch, None if ok else WriteFailed())

    def advance(self, ms: int) -> None:
        """Move the clock; every timer due on the way fires at its deadline, in order."""
        target = self.now + ms
        while True:
            due = [(d, order, k) for k, (d, order) in self.timers.items() if d <= target]
            if not due:
                break
            deadline, _, key = min(due)
            del self.timers[key]
            self.now = max(self.now, deadline)
            self.driver.fire_timer(key)
        self.now = target

    def advance_to(self, t: int) -> None:
        self.advance(t - self.now)

    def group(self, group_id: str = GROUP) -> ClassicGroup:
        return self.co.groups[group_id]

    def result(self, token: int) -> Any:
        return self.replies.get(token)

    def _token(self) -> int:
        self.last_token = next(self._tokens)
        return self.last_token

    # -- requests ------------------------------------------------------------------------------

    def join(
        self,
        member_id: str = "",
        instance: str | None = None,
        *,
        group: str = GROUP,
        client_id: str = "client",
        session: int = 10000,
        rebalance: int = 30000,
        protocol_type: str = "consumer",
        protocols: list[tuple[str, bytes]] | None = None,
        version: int | None = None,
        reason: str | None = None,
    ) -> int:
        """Send a JoinGroup; returns its token (``result(token)`` is None while parked).
        Dynamic joins default to v3 (no MEMBER_ID_REQUIRED round trip), static ones to v5."""
        token = self._token()
        req = JoinGroupInput(
            group_id=group,
            member_id=member_id,
            group_instance_id=instance,
            client_id=client_id,
            client_host="/127.0.0.1",
            session_timeout_ms=session,
            rebalance_timeout_ms=rebalance,
            protocol_type=protocol_type,
            protocols=PROTOCOLS if protocols is None else protocols,
            api_version=version if version is not None else (3 if instance is None else 5),
            reason=reason,
        )
        self.apply(self.co.join_group(token, req, self.now))
        return token

    def join_result(self, token: int) -> JoinGroupResult:
        result = self.replies[token]
        assert isinstance(result, JoinGroupResult)
        return result

    def sync(
        self,
        member_id: str,
        generation: int,
        instance: str | None = None,
        assignments: list[tuple[str, bytes]] | None = None,
        *,
        group: str = GROUP,
        protocol_type: str | None = "consumer",
        protocol_name: str | None = None,
        version: int = 3,
    ) -> int:
        token = self._token()
        req = SyncGroupInput(
            group_id=group,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments=assignments or [],
            api_version=version,
        )
        self.apply(self.co.sync_group(token, req, self.now))
        return token

    def sync_result(self, token: int) -> SyncGroupResult:
        result = self.replies[token]
        assert isinstance(result, SyncGroupResult)
        return result

    def heartbeat(
        self, member_id: str, generation: int, instance: str | None = None, group: str = GROUP
    ) -> int:
        token = self._token()
        req = HeartbeatInput(group, generation, member_id, instance)
        self.apply(self.co.heartbeat(token, req, self.now))
        return int(self.replies[token].error_code)

    def leave(self, *members: tuple[str, str | None] | str, group: str = GROUP) -> LeaveGroupResult:
        token = self._token()
        identities = [
            LeavingMember(m) if isinstance(m, str) else LeavingMember(*m) for m in members
        ]
        self.apply(self.co.leave_group(token, LeaveGroupInput(group, identities), self.now))
        result = self.replies[token]
        assert isinstance(result, LeaveGroupResult)
        return result

    def delete_groups(self, *group_ids: str) -> tuple[list[GroupError] | None, Effects[object]]:
        """DeleteGroups: (its answer, None while it waits for its write; effects)."""
        token = self._token()
        effects = self.co.delete_groups(token, list(group_ids), self.now)
        self.apply(effects)
        result = self.replies.get(token)
        if result is None:
            return None, effects
        assert isinstance(result, DeleteGroupsResult)
        return result.groups, effects

    def delete_offsets(
        self, topics: list[tuple[str, list[int]]], group: str = GROUP
    ) -> tuple[int | None, dict[tuple[str, int], int], Effects[object]]:
        """OffsetDelete: (top-level error, error per (topic, partition), effects); the
        error is None while the answer waits for its write."""
        token = self._token()
        effects = self.co.delete_offsets(token, group, topics, self.now)
        self.apply(effects)
        result = self.replies.get(token)
        if result is None:
            return None, {}, effects
        assert isinstance(result, OffsetDeleteResult)
        errors = {(t.topic, p.partition): p.error_code for t in result.topics for p in t.partitions}
        return result.error_code, errors, effects

    def commit(
        self,
        offsets: dict[tuple[str, int], int],
        *,
        member_id: str = "",
        generation: int = -1,
        instance: str | None = None,
        group: str = GROUP,
        metadata: str | None = None,
        retention: int = -1,
        version: int = 8,
    ) -> dict[tuple[str, int], int] | None:
        """OffsetCommit; returns the error per (topic, partition), None while the answer
        waits for its write (``result(last_token)`` once it is stored)."""
        by_topic: dict[str, list[PartitionCommit]] = {}
        for (topic, partition), offset in offsets.items():
            by_topic.setdefault(topic, []).append(PartitionCommit(partition, offset, -1, metadata))
        token = self._token()
        topics = [TopicCommit(t, parts) for t, parts in by_topic.items()]
        req = OffsetCommitInput(group, generation, member_id, instance, retention, topics, version)
        self.apply(self.co.commit_offsets(token, req, self.now))
        result = self.replies.get(token)
        if result is None:
            return None
        assert isinstance(result, OffsetCommitResult)
        return {(t.topic, p.partition): p.error_code for t in result.topics for p in t.partitions}

    # -- scenarios --------------------------------------------------------------------------

    def stable_group(
        self, count: int = 2, *, static: bool = False, session: int = 10000, rebalance: int = 30000
    ) -> tuple[list[str], int]:
        """``count`` members joined and synced; returns (member ids, leader first; generation)."""
        tokens = [
            self.join(
                instance=f"instance-{i}" if static else None, session=session, rebalance=rebalance
            )
            for i in range(count)
        ]
        # Each newcomer during the initial delay extends it by one delay (spec 4.5).
        while any(self.result(t) is None for t in tokens):
            self.advance(self.config.initial_rebalance_delay_ms)
        results = [self.join_result(t) for t in tokens]
        generation = results[0].generation_id
        leader = results[0].leader
        ids = [r.member_id for r in results]
        assignments = [(m, f"assignment-{m}".encode()) for m in ids]
        instances = [f"instance-{i}" if static else None for i in range(count)]
        for member_id, instance in sorted(
            zip(ids, instances, strict=True), key=lambda p: p[0] != leader
        ):
            self.sync(member_id, generation, instance, assignments if member_id == leader else [])
        assert self.group().state == GroupState.STABLE
        return sorted(ids, key=lambda m: m != leader), generation


class OrderedTimers(dict[str, tuple[int, int]]):
    """The armed timers: key -> (deadline, order of scheduling), so that timers due at the
    same moment fire in the order they were armed."""

    def __init__(self) -> None:
        super().__init__()
        self._order = itertools.count()

    def schedule(self, key: str, deadline_ms: int) -> None:
        self[key] = (deadline_ms, next(self._order))

    def cancel(self, key: str) -> None:
        self.pop(key, None)
