"""Random request/timer sequences against the state machine (Hypothesis).

Several clients (some static, possibly sharing an instance id) join, sync, heartbeat,
commit and leave while time jumps forward. After every step the group's counters must
match a recount and its timers must keep it live; throughout, no member id is handed to two
clients, every successful SyncGroup carries exactly what that generation's leader assigned
to the member, and by the end (after ``shutdown``) every request was answered exactly once.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.group import GroupConfig
from coordinator.group.classic.states import (
    COMPLETING_REBALANCE,
    EMPTY,
    PREPARING_REBALANCE,
    STABLE,
)
from coordinator.group.deadlines import heartbeat_key, join_key, sync_key
from coordinator.group.effects import Effects, Schedule
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
    HeartbeatResult,
    JoinGroupResult,
    MemberMetadata,
    SyncGroupResult,
)
from protocol.errors import ErrorCode
from tests.hypothesis_profiles import examples

from .harness import Harness

GROUP = "g"
SLOTS = 4
PROTOCOL_CHOICES = [
    [("range", b"r")],
    [("range", b"r2"), ("roundrobin", b"x")],
    [("roundrobin", b"y"), ("range", b"r")],
    [("sticky", b"s")],
]


@dataclass
class Client:
    instance: str | None
    member_id: str = ""
    generation: int = -1
    leader_members: list[MemberMetadata] | None = None
    synced: bool = False  # got its assignment for `generation`
    rejoin: bool = True  # told to (re)join
    waiting: int = 0  # parked requests


slot = st.integers(0, SLOTS - 1)
act = st.tuples(st.just("act"), slot, st.sampled_from([3, 4, 8, 9]), st.integers(0, 2))
# Mostly well-behaved clients and small clock steps; some chaos (explicit joins with any
# version and protocols, leaves, long pauses, timers fired when not due).
operation = st.one_of(
    *[act] * 8,
    *[st.tuples(st.just("advance"), st.integers(1, 3000))] * 3,
    st.tuples(st.just("advance"), st.integers(1, 20000)),
    st.tuples(st.just("join"), slot, st.sampled_from([3, 4, 8, 9]), st.integers(0, 3)),
    st.tuples(st.just("sync"), slot),
    st.tuples(st.just("leave"), slot),
    st.tuples(st.just("commit"), slot),
    st.tuples(st.just("stale"), st.integers(0, 50)),
)
# One to four clients, dynamic or static (two may share an instance id: fencing).
instances = st.lists(st.sampled_from([None, None, "i0", "i1"]), min_size=1, max_size=SLOTS)


def expected_assignment(generation: int, member_id: str, instance: str | None) -> bytes:
    return f"{generation}/{instance or member_id}".encode()


def _answered(effects: Effects[object], token: object, result: object) -> Effects[object]:
    effects.replies.append((token, result))
    return effects


class Run:
    def __init__(self, statics: list[str | None]) -> None:
        self.h = Harness(GroupConfig(initial_rebalance_delay_ms=500))
        self.clients = [Client(instance) for instance in statics]
        self.requests: dict[int, tuple[str, int, int, str, str | None]] = {}
        self.seen: set[int] = set()
        self.owner: dict[str, int] = {}  # member id -> the client it was handed to
        self.tokens = 0

    def send(self, kind: str, i: int, call: object) -> None:
        self.tokens += 1
        token = self.tokens
        c = self.clients[i]
        self.requests[token] = (kind, i, c.generation, c.member_id, c.instance)
        self.h.apply(call(token))  # type: ignore[operator]
        self.collect()

    def collect(self) -> None:
        for token in self.h.replies.keys() - self.seen:
            self.seen.add(token)
            kind, i, generation, member_id, instance = self.requests[token]
            result = self.h.replies[token]
            c = self.clients[i]
            if kind in ("join", "sync"):
                c.waiting -= 1
            if kind == "join":
                self.on_join(i, result)
            elif kind == "sync" and result.error_code == ErrorCode.NONE:
                assert isinstance(result, SyncGroupResult)
                assert result.protocol_name is not None
                assert result.assignment == expected_assignment(generation, member_id, instance)
                c.synced = generation == c.generation
            elif kind in ("sync", "heartbeat") and result.error_code in (
                ErrorCode.ILLEGAL_GENERATION,
                ErrorCode.UNKNOWN_MEMBER_ID,
                ErrorCode.REBALANCE_IN_PROGRESS,
                ErrorCode.FENCED_INSTANCE_ID,
            ):
                c.rejoin = True
                if result.error_code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
                    c.member_id = ""

    def on_join(self, i: int, r: JoinGroupResult) -> None:
        c = self.clients[i]
        if r.error_code in (ErrorCode.NONE, ErrorCode.MEMBER_ID_REQUIRED):
            assert self.owner.setdefault(r.member_id, i) == i, "member id handed out twice"
            c.member_id = r.member_id
        if r.error_code == ErrorCode.NONE:
            c.generation = r.generation_id
            c.leader_members = r.members if r.leader == r.member_id and r.members else None
            c.synced, c.rejoin = False, False
        elif r.error_code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            c.member_id, c.generation, c.leader_members = "", -1, None

    def step(self, op: tuple[object, ...]) -> None:
        h, co = self.h, self.h.co
        kind = op[0]
        if kind == "advance":
            h.advance(int(op[1]))  # type: ignore[call-overload]
            self.collect()
            return
        if kind == "stale":
            # A key fired before its deadline (or not armed at all) must be a no-op.
            keys = [k for k, (deadline, _) in sorted(h.timers.items()) if deadline > h.now]
            keys += [join_key("nope"), heartbeat_key("g", "nobody")]
            key = keys[int(op[1]) % len(keys)]  # type: ignore[call-overload]
            deadline = co.timer_deadline(key)
            effects = co.fire_timer(key, h.now)
            assert effects.replies == effects.records == effects.events == []
            # At most: the driver's timer re-armed for the deadline heartbeats moved it to.
            rearmed = [] if deadline is None else [Schedule(key, deadline)]
            assert effects.timers == rearmed
            h.apply(effects)
            return
        i = int(op[1]) % len(self.clients)  # type: ignore[call-overload]
        c = self.clients[i]
        if kind == "act":  # what a well-behaved client would do next
            if c.waiting:
                kind = "heartbeat"
            elif c.rejoin or not c.member_id:
                kind = "join"
            else:
                kind = "heartbeat" if c.synced else "sync"
        if kind in ("join", "sync"):
            c.waiting += 1
        if kind == "join":
            version, choice = int(op[2]), int(op[3])  # type: ignore[call-overload]
            req = JoinGroupInput(
                GROUP,
                c.member_id,
                c.instance,
                f"c{i}",
                "/h",
                6000,
                8000,
                "consumer",
                PROTOCOL_CHOICES[choice],
                version,
                None,
            )
            self.send("join", i, lambda t: co.join_group(t, req, h.now))
        elif kind == "sync":
            assignments = [
                (m.member_id, expected_assignment(c.generation, m.member_id, m.group_instance_id))
                for m in (c.leader_members or [])
            ]
            sreq = SyncGroupInput(
                GROUP, c.generation, c.member_id, c.instance, None, None, assignments, 3
            )
            self.send("sync", i, lambda t: co.sync_group(t, sreq, h.now))
        elif kind == "heartbeat" and int(op[3]) == 2:  # type: ignore[call-overload]
            # The heartbeat lane's entry: no Effects, only a timer to (re)arm.
            error, key, deadline = co.heartbeat_now(
                GROUP, c.generation, c.member_id, c.instance, h.now
            )
            effects: Effects[object] = Effects()
            if key is not None:
                effects.timers.append(Schedule(key, deadline))
            self.send("heartbeat", i, lambda t: _answered(effects, t, HeartbeatResult(error)))
        elif kind == "heartbeat":
            hreq = HeartbeatInput(GROUP, c.generation, c.member_id, c.instance)
            self.send("heartbeat", i, lambda t: co.heartbeat(t, hreq, h.now))
        elif kind == "leave":
            lreq = LeaveGroupInput(GROUP, [LeavingMember(c.member_id, c.instance)])
            self.send("leave", i, lambda t: co.leave_group(t, lreq, h.now))
        else:
            creq = OffsetCommitInput(
                GROUP,
                c.generation,
                c.member_id,
                c.instance,
                -1,
                [TopicCommit("t", [PartitionCommit(i, 1)])],
                8,
            )
            self.send("commit", i, lambda t: co.commit_offsets(t, creq, h.now))

    def check_invariants(self) -> None:
        co = self.h.co
        for key, (driver_deadline, _) in self.h.timers.items():
            # The driver's timer never fires after the state machine's deadline.
            armed = co.timer_deadline(key)
            assert armed is None or driver_deadline <= armed, key
        for g in co.groups.values():
            members = g.members
            assert g.num_members_awaiting_join == sum(
                m.join_token is not None for m in members.values()
            )
            support = Counter(n for m in members.values() for n in m.protocol_names)
            assert +g.supported_protocols == support
            assert g.static_members == {
                m.group_instance_id: mid
                for mid, m in members.items()
                if m.group_instance_id is not None
            }
            assert all(m.member_id == mid for mid, m in members.items())
            assert (g.leader_id in members) if members else g.leader_id is None
            assert g.pending_sync_members <= members.keys()
            assert not g.pending_join_members & members.keys()
            for m in members.values():
                # Every member can expire, or waits on a phase that is bounded by a timer and
                # restarts its session when it ends.
                assert (
                    co.timer_deadline(m.heartbeat_key) is not None
                    or (m.join_token is not None and g.state is PREPARING_REBALANCE)
                    or (m.sync_token is not None and g.state is COMPLETING_REBALANCE)
                )
            if g.state is EMPTY:
                assert not members
            if g.state is PREPARING_REBALANCE:
                assert co.timer_deadline(join_key(GROUP)) is not None
                assert all(m.sync_token is None for m in members.values())
            if g.state in (COMPLETING_REBALANCE, STABLE):
                assert g.protocol_name is not None
                assert all(m.join_token is None for m in members.values())
            if g.state is COMPLETING_REBALANCE or g.pending_sync_members:
                assert co.timer_deadline(sync_key(GROUP)) is not None
            if g.state is STABLE:
                assert all(m.sync_token is None for m in members.values())


@settings(
    max_examples=examples(300, fast=100),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(statics=instances, ops=st.lists(operation, min_size=10, max_size=80))
def test_random_sequences_keep_the_group_consistent(statics, ops):
    run = Run(statics)
    for op in ops:
        run.step(op)
        run.check_invariants()
    run.h.apply(run.h.co.shutdown())
    run.collect()
    assert run.seen == set(run.requests), "every request is answered exactly once"
