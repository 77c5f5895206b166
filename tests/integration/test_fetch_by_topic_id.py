"""Unmodified librdkafka fetches by topic id (Fetch v13+) from a real daemon, and a producer
is told why its records are refused."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Callable

import pytest

from .conftest import Daemon, free_port

pytestmark = pytest.mark.integration

POLL_SECONDS = 10

# Runs in its own process so that its CPU time is its own.
CONSUMER = """
import json, resource, sys, time
import confluent_kafka as ck

c = ck.Consumer({"bootstrap.servers": sys.argv[1], "group.id": "by-id",
                 "auto.offset.reset": "earliest", "enable.auto.commit": False})
errors = []
c.subscribe(["t3"], on_assign=lambda consumer, parts: None)
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    m = c.poll(0.5)
    if m is not None and m.error() is not None:
        errors.append(str(m.error()))
assigned = sorted(p.partition for p in c.assignment())
c.close()
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"errors": errors, "assigned": assigned,
                  "cpu_s": usage.ru_utime + usage.ru_stime}))
"""


def fetch_versions(metrics_port: int) -> dict[int, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as r:
        text = r.read().decode()
    counts: dict[int, float] = {}
    for line in text.splitlines():
        if line.startswith('group_coordinator_requests_total{api="Fetch"'):
            version = int(line.split('version="')[1].split('"')[0])
            counts[version] = float(line.rsplit(" ", 1)[1])
    return counts


def test_librdkafka_polls_by_topic_id_for_10_seconds_without_an_error(
    start_daemon: Callable[..., Daemon],
) -> None:
    metrics_port = free_port()
    daemon = start_daemon(
        "--topic",
        "t3:3",
        "--group-initial-rebalance-delay-ms",
        "0",
        "--metrics-listen",
        f"127.0.0.1:{metrics_port}",
    )
    run = subprocess.run(
        [sys.executable, "-c", CONSUMER, daemon.bootstrap, str(POLL_SECONDS)],
        capture_output=True,
        timeout=POLL_SECONDS + 60,
        check=True,
    )
    result = json.loads(run.stdout.decode().strip().splitlines()[-1])
    assert result["errors"] == []
    assert result["assigned"] == [0, 1, 2]
    by_version = fetch_versions(metrics_port)
    # Every fetch names its topic by id, and the long polls keep coming all along
    # (fetch.wait.max.ms is 500 ms: a fetch every half second, not a handful in all).
    assert by_version and min(by_version) >= 13, by_version
    assert sum(by_version.values()) >= POLL_SECONDS
    # Its fetch loop waits on the daemon's long polls instead of spinning on a version
    # it cannot use (which cost a whole core before Produce was served).
    assert result["cpu_s"] < POLL_SECONDS * 0.25, result


def test_a_producer_is_told_that_virtual_topics_hold_no_records(daemon: Daemon) -> None:
    import confluent_kafka as ck

    reports: list[ck.KafkaError | None] = []
    producer = ck.Producer(
        {"bootstrap.servers": daemon.bootstrap, "message.timeout.ms": 10000, "retries": 0}
    )
    producer.produce("t6", b"value", partition=0, on_delivery=lambda err, msg: reports.append(err))
    producer.flush(15)
    assert len(reports) == 1 and reports[0] is not None
    assert reports[0].code() == ck.KafkaError.POLICY_VIOLATION
    assert not reports[0].retriable()
