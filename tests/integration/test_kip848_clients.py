"""Unmodified confluent-kafka consumers with ``group.protocol=consumer`` (KIP-848) against a
real daemon: server-side assignment, incremental revocation, leave, expiry and offsets.

The daemon runs with a short session (2 s) and heartbeat interval (100 ms), set with
Kafka's group.consumer.* options (their minimums lowered to allow it): in this protocol
members learn of every change on their next heartbeat, so the interval bounds how soon
the survivors take over a leaver's partitions.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable

import pytest

from .clients import KafkaPythonMember, TopicPartition
from .conftest import Daemon, wait_until
from .kip848_member import ConsumerProtocolMember, fast_kip848_daemon

pytestmark = pytest.mark.integration

TOPIC = "t6"
ALL = frozenset((TOPIC, p) for p in range(6))
SESSION_S = 2.0


@pytest.fixture
def daemon(start_daemon: Callable[..., Daemon]) -> Daemon:
    return start_daemon(*fast_kip848_daemon(f"{TOPIC}:6", int(SESSION_S * 1000), 100))


def start(daemon: Daemon, group: str, count: int, first: int = 0) -> list[ConsumerProtocolMember]:
    return [
        ConsumerProtocolMember(daemon.bootstrap, group, TOPIC, client_id=f"{group}-{i}")
        for i in range(first, first + count)
    ]


def covering(members: list[ConsumerProtocolMember]) -> bool:
    """Every member owns something, no two own the same partition, together all six."""
    owned = [m.assigned for m in members]
    return all(owned) and sum(map(len, owned)) == len(ALL) and frozenset().union(*owned) == ALL


def balanced(members: list[ConsumerProtocolMember]) -> bool:
    """Covering, and as even as the uniform assignor makes it: a covering seen while the
    members still reconcile (3, 2 and 1 partitions on the way to 2 each) is not the
    assignment the group settles on."""
    sizes = [len(m.assigned) for m in members]
    return covering(members) and max(sizes) - min(sizes) <= 1


def no_errors(members: list[ConsumerProtocolMember]) -> None:
    for m in members:
        assert not m.errors, (m.client_id, m.errors)
        assert m.error is None, (m.client_id, m.error)


def test_members_share_the_topic_and_a_joiner_takes_only_what_moves(daemon: Daemon) -> None:
    members = start(daemon, "kip848-join", 3)
    try:
        started = time.monotonic()
        assert wait_until(lambda: balanced(members), 2.0), [m.assigned for m in members]
        took = time.monotonic() - started
        print(f"3 members own disjoint partitions covering the topic {took:.2f}s after start")
        before = {m.client_id: m.assigned for m in members}
        revoked_before = {m.client_id: len(m.revoked) for m in members}
        members += start(daemon, "kip848-join", 1, first=3)
        joined = time.monotonic()
        assert wait_until(lambda: balanced(members), 3.0), [m.assigned for m in members]
        print(f"4 members cover the topic {time.monotonic() - joined:.2f}s after the 4th started")
        moved: set[TopicPartition] = set()
        for m in members[:3]:
            revoked = set(m.revoked[revoked_before[m.client_id] :])
            moved |= revoked
            # Only partitions that moved were revoked: none it keeps, none it never had.
            assert not revoked & m.assigned, (m.client_id, revoked, m.assigned)
            assert revoked <= before[m.client_id]
            assert m.assigned <= before[m.client_id]  # nothing new for the old members
        # Exactly what the newcomer took was revoked (on_revoke), by its previous owners.
        assert members[3].assigned == moved
        no_errors(members)
        # The admin client sees the same (ConsumerGroupDescribe, ListGroups v5).
        described = describe(daemon, "kip848-join")
        assert described == {m.client_id: m.assigned for m in members}
    finally:
        for m in members:
            m.close()


def test_a_closed_members_partitions_go_to_the_others_within_a_second(daemon: Daemon) -> None:
    members = start(daemon, "kip848-close", 3)
    try:
        assert wait_until(lambda: covering(members), 2.0), [m.assigned for m in members]
        members.pop().close()  # leaves with epoch -1
        closed = time.monotonic()
        assert wait_until(lambda: covering(members), 1.0), [m.assigned for m in members]
        print(f"survivors own all 6 {time.monotonic() - closed:.2f}s after close")
        no_errors(members)
    finally:
        for m in members:
            m.close()


def test_a_killed_members_partitions_move_after_its_session(daemon: Daemon) -> None:
    group = "kip848-kill"
    members = start(daemon, group, 2)
    victim = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.integration.kip848_member",
            daemon.bootstrap,
            group,
            TOPIC,
            f"{group}-victim",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert wait_until(
            lambda: sum(map(len, (m.assigned for m in members))) == 4 and covering_part(members),
            20,
        ), [m.assigned for m in members]
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        killed = time.monotonic()
        assert wait_until(lambda: covering(members), SESSION_S + 1), [m.assigned for m in members]
        took = time.monotonic() - killed
        print(f"survivors own all 6 {took:.2f}s after the kill (session {SESSION_S} s)")
        assert "session expired" in daemon.log()
        no_errors(members)
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait(10)
        for m in members:
            m.close()


def describe(daemon: Daemon, group: str) -> dict[str, frozenset[TopicPartition]]:
    """Each member's assignment by client id, as confluent-kafka's AdminClient describes
    the group; checks it is listed as a consumer-protocol group."""
    from confluent_kafka import ConsumerGroupState, ConsumerGroupType
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": daemon.bootstrap})
    listed = admin.list_consumer_groups().result(10)
    assert [(g.group_id, g.type) for g in listed.valid] == [(group, ConsumerGroupType.CONSUMER)]
    d = admin.describe_consumer_groups([group])[group].result(10)
    assert (d.type, d.state, d.partition_assignor) == (
        ConsumerGroupType.CONSUMER,
        ConsumerGroupState.STABLE,
        "uniform",
    )
    return {
        m.client_id: frozenset((tp.topic, tp.partition) for tp in m.assignment.topic_partitions)
        for m in d.members
    }


def covering_part(members: list[ConsumerProtocolMember]) -> bool:
    owned = [m.assigned for m in members]
    return all(owned) and len(frozenset().union(*owned)) == sum(map(len, owned))


def test_offsets_committed_by_a_member_are_read_back_by_a_fresh_consumer(
    daemon: Daemon,
) -> None:
    group = "kip848-offsets"
    [member] = start(daemon, group, 1)
    offsets: dict[TopicPartition, int] = {(TOPIC, 0): 42, (TOPIC, 5): 7}
    try:
        assert wait_until(lambda: member.assigned == ALL, 2.0), member.assigned
        member.commit(offsets)  # OffsetCommit at the member's epoch
        assert member.committed((TOPIC, 0)) == 42
    finally:
        member.close()
    [fresh] = start(daemon, group, 1, first=1)
    try:
        assert fresh.committed((TOPIC, 0)) == 42
        assert fresh.committed((TOPIC, 5)) == 7
        assert fresh.committed((TOPIC, 3)) is None
        no_errors([fresh])
    finally:
        fresh.close()


def test_the_group_survives_a_killed_daemon(daemon: Daemon) -> None:
    """SQLite keeps the group (epochs, assignments, target): after kill -9 and a restart
    the members carry on with their partitions; nobody is fenced or revoked."""
    members = start(daemon, "kip848-restart", 2)
    try:
        assert wait_until(lambda: covering(members), 2.0), [m.assigned for m in members]
        owned = [m.assigned for m in members]
        revoked = [len(m.revoked) for m in members]
        daemon.stop(signal.SIGKILL)
        daemon.start()
        restarted = time.monotonic()
        # Heartbeats (every 100 ms) reach the new process; nothing moves.
        time.sleep(1.0)
        assert [m.assigned for m in members] == owned
        assert [len(m.revoked) for m in members] == revoked
        loaded = [line for line in daemon.log().splitlines() if "GroupLoaded" in line]
        assert "kip848-restart" in loaded[-1] and "members=2" in loaded[-1], loaded
        members.pop().close()  # and the group still works: the other takes over
        assert wait_until(lambda: covering(members), 1.0), [m.assigned for m in members]
        print(
            f"after a restart, a leaver's partitions moved {time.monotonic() - restarted:.2f}s on"
        )
    finally:
        for m in members:
            m.close()


def test_with_migration_disabled_a_group_switches_once_its_classic_members_are_gone(
    start_daemon: Callable[..., Daemon],
) -> None:
    """With group.consumer.migration.policy=disabled a consumer-protocol member is told
    GROUP_ID_NOT_FOUND while classic members are in the group (librdkafka takes that as
    fatal, as against Kafka). Once they have left, the group is rejoined with the consumer
    protocol and keeps its offsets. (The default, bidirectional, converts the group with
    its members: test_protocol_migration.py.)"""
    daemon = start_daemon(
        "--group-consumer-migration-policy",
        "disabled",
        *fast_kip848_daemon(f"{TOPIC}:6", int(SESSION_S * 1000), 100),
    )
    group = "kip848-switch"
    classic = KafkaPythonMember(daemon.bootstrap, group, TOPIC, client_id="classic")
    try:
        assert wait_until(lambda: classic.assigned == ALL, 10), classic.assigned
        classic.commit({(TOPIC, 0): 11})
        [early] = start(daemon, group, 1)
        assert wait_until(lambda: bool(early.errors), 5)
        assert "group id does not exist" in str(early.errors[0]), early.errors
        assert not early.assigned
        early.close()
    finally:
        classic.close()  # a LeaveGroup: the classic group is empty now
    [member] = start(daemon, group, 1, first=1)
    try:
        assert wait_until(lambda: member.assigned == ALL, 2.0), member.assigned
        assert member.committed((TOPIC, 0)) == 11
        no_errors([member])
    finally:
        member.close()


def test_a_regex_subscription_takes_topics_created_later(daemon: Daemon) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": daemon.bootstrap})

    def create(name: str, partitions: int) -> None:
        admin.create_topics([NewTopic(name, partitions)])[name].result(10)

    create("kip848-rx-a", 2)
    [member] = [
        ConsumerProtocolMember(daemon.bootstrap, "kip848-rx", "^kip848-rx-.*", client_id="rx")
    ]
    try:
        first = frozenset({("kip848-rx-a", 0), ("kip848-rx-a", 1)})
        assert wait_until(lambda: member.assigned == first, 3.0), member.assigned
        create("kip848-rx-b", 1)
        created = time.monotonic()
        # Seen on the next heartbeat; the client then needs the new topic's metadata.
        assert wait_until(lambda: member.assigned == first | {("kip848-rx-b", 0)}, 5.0)
        print(f"a new matching topic was assigned {time.monotonic() - created:.2f}s after")
        no_errors([member])
    finally:
        member.close()
