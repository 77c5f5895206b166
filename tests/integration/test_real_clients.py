"""Unmodified kafka-python, aiokafka and confluent-kafka consumers against a real daemon."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from .clients import LIBRARIES, Member
from .conftest import Daemon, wait_until

pytestmark = pytest.mark.integration

TOPIC = "t6"
ALL_PARTITIONS = {(TOPIC, p) for p in range(6)}


def balanced(members: list[Member], per_member: int) -> bool:
    owned = [m.assigned for m in members]
    union = set().union(*owned)
    return (
        all(len(o) == per_member for o in owned)
        and union == ALL_PARTITIONS
        and sum(len(o) for o in owned) == len(ALL_PARTITIONS)
    )


def start_members(lib: str, daemon: Daemon, group: str, n: int, **kw: object) -> list[Member]:
    cls = LIBRARIES[lib]
    return [cls(daemon.bootstrap, group, TOPIC, client_id=f"{lib}-{i}", **kw) for i in range(n)]  # type: ignore[arg-type]


def two_each_disjoint(members: list[Member]) -> bool:
    owned = [m.assigned for m in members]
    return all(len(o) == 2 for o in owned) and len(set().union(*owned)) == 2 * len(owned)


def expiry_logged(daemon: Daemon, client_id: str) -> float | None:
    """Wall-clock time the daemon logged the session expiry of ``client_id``'s member."""
    for line in daemon.log().splitlines():
        if "MemberRemoved" in line and "session timeout" in line and f"{client_id}-" in line:
            stamp = line.split()[0].rstrip("Z")
            return datetime.fromisoformat(stamp).replace(tzinfo=UTC).timestamp()
    return None


@pytest.fixture(params=sorted(LIBRARIES))
def lib(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_three_consumers_share_six_partitions_then_survivors_take_over_after_close(
    lib: str, daemon: Daemon
) -> None:
    members = start_members(lib, daemon, f"g-{lib}", 3)
    try:
        start = time.monotonic()
        assert wait_until(lambda: balanced(members, 2), 20), [m.assigned for m in members]
        print(f"{lib}: 3 members stable after {time.monotonic() - start:.2f}s")
        leaving = members.pop()
        leaving.close()
        closed_at = time.monotonic()
        # The LeaveGroup (sent by close()) triggers the rebalance at once; the survivors
        # hear of it on their next heartbeat (300 ms) and own everything well before the
        # leaver's session (6 s) could have run out (about a second; 3 s on a loaded machine).
        assert wait_until(lambda: balanced(members, 3), 3.0), [m.assigned for m in members]
        print(f"{lib}: survivors own all 6 {time.monotonic() - closed_at:.2f}s after close")
    finally:
        for m in members:
            m.close()


#: The session of the killed-member test: shorter than the clients' 6 s (the daemon allows
#: it with --group-min-session-timeout-ms), the same expiry sooner.
SESSION_S = 3


def test_killed_member_is_expired_after_its_session_timeout(
    lib: str, start_daemon: Callable[..., Daemon]
) -> None:
    daemon = start_daemon(
        "--topic", "t6:6", "--group-initial-rebalance-delay-ms", "0",
        "--group-min-session-timeout-ms", "1000",
    )  # fmt: skip
    group = f"kill-{lib}"
    members = start_members(lib, daemon, group, 2, session_timeout_ms=SESSION_S * 1000)
    victim = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.integration.member_process",
            lib,
            daemon.bootstrap,
            group,
            TOPIC,
            f"{lib}-victim",
            str(SESSION_S * 1000),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        # The victim (another process) holds the remaining two partitions.
        assert wait_until(lambda: two_each_disjoint(members), 30), [m.assigned for m in members]
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        killed_at, killed_wall = time.monotonic(), time.time()
        # The daemon's part is timer-driven: it expires the victim at most a session after
        # the kill (its last heartbeat came before).
        assert wait_until(lambda: expiry_logged(daemon, f"{lib}-victim") is not None, SESSION_S + 1)
        expired_after = expiry_logged(daemon, f"{lib}-victim") - killed_wall  # type: ignore[operator]
        assert expired_after <= SESSION_S + 0.5, expired_after
        # The survivors' part (a heartbeat answered REBALANCE_IN_PROGRESS, rejoin, sync,
        # the library's poll loop) adds about 0.3 s here; a bound of session + 1 s measured
        # session + 0-0.2 s, the extra second keeps a busy CI machine from failing it.
        limit = SESSION_S + 2
        assert wait_until(lambda: balanced(members, 3), limit), [m.assigned for m in members]
        print(f"{lib}: survivors own all 6 {time.monotonic() - killed_at:.2f}s after the kill")
    finally:
        if victim.poll() is None:
            victim.kill()
        for m in members:
            m.close()


def test_committed_offsets_read_back(lib: str, daemon: Daemon) -> None:
    [member] = start_members(lib, daemon, f"commit-{lib}", 1)
    try:
        assert wait_until(lambda: len(member.assigned) == 6, 20)
        member.commit({(TOPIC, 0): 42, (TOPIC, 5): 7})
        assert member.committed((TOPIC, 0)) == 42
        assert member.committed((TOPIC, 5)) == 7
        assert member.committed((TOPIC, 3)) is None
    finally:
        member.close()


def test_static_member_restart_keeps_its_partitions_without_rebalancing_others(
    lib: str, daemon: Daemon
) -> None:
    group = f"static-{lib}"
    cls = LIBRARIES[lib]
    others = [
        cls(
            daemon.bootstrap,
            group,
            TOPIC,
            client_id=f"{lib}-o{i}",
            instance_id=f"other-{i}",
            session_timeout_ms=20000,
        )
        for i in range(2)
    ]
    static = cls(
        daemon.bootstrap,
        group,
        TOPIC,
        client_id=f"{lib}-s",
        instance_id="static-0",
        session_timeout_ms=20000,
    )
    try:
        everyone = [*others, static]
        assert wait_until(lambda: balanced(everyone, 2), 30), [m.assigned for m in everyone]
        before = static.assigned
        others_before = [m.assigned for m in others]
        rebalances = [m.rebalances for m in others]
        static.close()  # static members do not send LeaveGroup
        static = cls(
            daemon.bootstrap,
            group,
            TOPIC,
            client_id=f"{lib}-s2",
            instance_id="static-0",
            session_timeout_ms=20000,
        )
        assert wait_until(lambda: static.assigned == before, 15), static.assigned
        time.sleep(1)  # give a (wrong) rebalance time to show up
        assert [m.rebalances for m in others] == rebalances
        assert [m.assigned for m in others] == others_before
    finally:
        static.close()
        for m in others:
            m.close()


# (listed group ids, state, {client id: assigned partitions}) as each library's admin sees it
Described = tuple[list[str], str, dict[str, frozenset[tuple[str, int]]]]
AdminCheck = Callable[[str, str], Described]


def _admin_kafka_python(bootstrap: str, group: str) -> Described:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        listed = admin.list_groups()
        described = admin.describe_groups([group])[group]
        return (
            [g["group_id"] for g in listed],
            described["group_state"],
            {
                m["client_id"]: frozenset(
                    (t["topic"], p)
                    for t in m["member_assignment"]["assigned_partitions"]
                    for p in t["partitions"]
                )
                for m in described["members"]
            },
        )
    finally:
        admin.close()


def _admin_confluent(bootstrap: str, group: str) -> Described:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_consumer_groups().result(timeout=10)
    groups = [g.group_id for g in listed.valid]
    desc = admin.describe_consumer_groups([group])[group].result(timeout=10)
    return (
        groups,
        desc.state.name,
        {
            m.client_id: frozenset((tp.topic, tp.partition) for tp in m.assignment.topic_partitions)
            for m in desc.members
        },
    )


def _admin_aiokafka(bootstrap: str, group: str) -> Described:
    import asyncio

    from aiokafka.admin import AIOKafkaAdminClient

    from protocol.consumer import decode_assignment

    async def run() -> Described:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            groups = [g[0] for g in await admin.list_consumer_groups()]
            [resp] = await admin.describe_consumer_groups([group])
            described = resp.groups[0]
            assignments = {}
            for _member_id, client_id, _host, _metadata, raw in described[5]:
                _version, assignment = decode_assignment(raw)
                assignments[client_id] = frozenset(
                    (t.topic, p) for t in assignment.assigned_partitions for p in t.partitions
                )
            return groups, described[2], assignments
        finally:
            await admin.close()

    return asyncio.run(run())


ADMINS: dict[str, AdminCheck] = {
    "kafka-python": _admin_kafka_python,
    "aiokafka": _admin_aiokafka,
    "confluent-kafka": _admin_confluent,
}


def test_admin_clients_list_and_describe_the_group(lib: str, daemon: Daemon) -> None:
    group = f"admin-{lib}"
    members = start_members(lib, daemon, group, 2)
    try:
        assert wait_until(lambda: balanced(members, 3), 20)
        groups, state, assignments = ADMINS[lib](daemon.bootstrap, group)
        assert group in groups
        assert state.lower() == "stable"
        assert assignments == {m.client_id: m.assigned for m in members}
    finally:
        for m in members:
            m.close()


def _group_holding_offsets(bootstrap: str, group: str) -> None:
    """A group with committed offsets and no members (a commit outside group management)."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        c.commit(offsets=[TopicPartition(TOPIC, 0, 5)], asynchronous=False)
    finally:
        c.close()


def test_admin_clients_delete_groups_at_the_newest_version_they_know(daemon: Daemon) -> None:
    """DeleteGroups is served to v3 (Kafka 4.4); each library negotiates the newest it
    knows: an empty group goes, a group with members is refused NON_EMPTY_GROUP."""
    from confluent_kafka.admin import AdminClient
    from kafka.admin import KafkaAdminClient

    members = start_members("confluent-kafka", daemon, "busy", 1)
    try:
        assert wait_until(lambda: len(members[0].assigned) == 6, 20)
        for group in ("empty-a", "empty-b"):
            _group_holding_offsets(daemon.bootstrap, group)
        admin = AdminClient({"bootstrap.servers": daemon.bootstrap})
        futures = admin.delete_consumer_groups(["empty-a", "busy"], request_timeout=10)
        futures["empty-a"].result(timeout=15)
        with pytest.raises(Exception, match=r"NON_EMPTY_GROUP|not empty"):
            futures["busy"].result(timeout=15)
        kp = KafkaAdminClient(bootstrap_servers=daemon.bootstrap)
        try:
            results = kp.delete_groups(["empty-b", "busy"])
        finally:
            kp.close()
        assert results == {"empty-b": "OK", "busy": "NonEmptyGroupError"}
    finally:
        for m in members:
            m.close()
