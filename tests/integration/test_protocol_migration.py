"""A rolling upgrade from the classic protocol to KIP-848's and back, as users do it with
unmodified clients (group.consumer.migration.policy, default ``bidirectional``): three
kafka-python and three classic confluent-kafka consumers share a topic; one at a time each
is restarted as a confluent-kafka consumer with ``group.protocol=consumer``; then one at a
time back to classic. Throughout, a partition is never held by two members for longer than
a revocation takes, and the group's committed offsets stay.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from .clients import ConfluentMember, KafkaPythonMember, Member, TopicPartition
from .conftest import Daemon, wait_until
from .kip848_member import ConsumerProtocolMember, fast_kip848_daemon

pytestmark = pytest.mark.integration

TOPIC = "t6"
ALL = frozenset((TOPIC, p) for p in range(6))
#: A partition seen in two members' assignments for longer than this is owned twice: the
#: clients publish their assignment once per poll (50 ms), and a revocation may take a
#: heartbeat interval to be reported.
OVERLAP_S = 1.0


@pytest.fixture
def daemon(start_daemon: Callable[..., Daemon]) -> Daemon:
    return start_daemon(*fast_kip848_daemon(f"{TOPIC}:6", 3000, 200))


class Watcher:
    """Samples every member's assignment; remembers the longest time any partition was
    held by two members at once."""

    def __init__(self, members: Callable[[], list[Member]]) -> None:
        self.members = members
        self.longest_overlap = 0.0
        self._since: dict[TopicPartition, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic()
            seen: dict[TopicPartition, int] = {}
            for m in self.members():
                for tp in m.assigned:
                    seen[tp] = seen.get(tp, 0) + 1
            twice = {tp for tp, n in seen.items() if n > 1}
            for tp in twice:
                start = self._since.setdefault(tp, now)
                self.longest_overlap = max(self.longest_overlap, now - start)
            for tp in set(self._since) - twice:
                del self._since[tp]
            time.sleep(0.02)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def _covering(members: list[Member]) -> bool:
    owned = [m.assigned for m in members]
    return sum(map(len, owned)) == len(ALL) and frozenset().union(*owned) == ALL


def _group_type(daemon: Daemon, group: str) -> str:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": daemon.bootstrap})
    [listed] = [g for g in admin.list_consumer_groups().result(10).valid if g.group_id == group]
    return str(listed.type.name).lower()


def test_a_rolling_upgrade_and_rollback_keep_every_partition_owned_once(daemon: Daemon) -> None:
    group = "rolling"
    current: list[Member] = []

    def classic(i: int) -> Member:
        cls = KafkaPythonMember if i < 3 else ConfluentMember
        return cls(daemon.bootstrap, group, TOPIC, client_id=f"classic-{i}")

    def consumer(i: int) -> Member:
        return ConsumerProtocolMember(daemon.bootstrap, group, TOPIC, client_id=f"kip848-{i}")

    watcher = Watcher(lambda: list(current))
    try:
        for i in range(6):
            current.append(classic(i))
        assert wait_until(lambda: _covering(current), 30), [m.assigned for m in current]
        current[0].commit({(TOPIC, 0): 11})
        assert _group_type(daemon, group) == "classic"
        for step, make in (("upgrade", consumer), ("rollback", classic)):
            for i in range(6):
                current[i].close()
                current[i] = make(i)
                assert wait_until(lambda: _covering(current), 30), (
                    step,
                    i,
                    [(m.client_id, sorted(m.assigned)) for m in current],
                )
            expected = "consumer" if step == "upgrade" else "classic"
            assert wait_until(lambda: _group_type(daemon, group) == expected, 10), step  # noqa: B023
            assert current[1].committed((TOPIC, 0)) == 11, step
        assert watcher.longest_overlap < OVERLAP_S, watcher.longest_overlap
        for m in current:
            assert m.error is None, (m.client_id, m.error)
    finally:
        watcher.stop()
        for m in current:
            m.close()
