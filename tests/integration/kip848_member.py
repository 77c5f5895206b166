"""A confluent-kafka consumer speaking the KIP-848 protocol (``group.protocol=consumer``),
polling in its own thread like the other test members; it remembers every partition it
was asked to revoke. Run as a module, it is a member in its own process (to be SIGKILLed):

    python -m tests.integration.kip848_member BOOTSTRAP GROUP TOPIC CLIENT_ID

It prints "assigned N" whenever its assignment changes.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from .clients import Member, TopicPartition


def fast_kip848_daemon(topic: str, session_ms: int, heartbeat_ms: int) -> list[str]:
    """``serve`` options for tests of the consumer protocol: a short session and heartbeat
    interval (Kafka's group.consumer.* minimums lowered to allow them), no initial delay."""
    return [
        "--topic",
        topic,
        "--group-consumer-session-timeout-ms",
        str(session_ms),
        "--group-consumer-min-session-timeout-ms",
        "1000",
        "--group-consumer-heartbeat-interval-ms",
        str(heartbeat_ms),
        "--group-consumer-min-heartbeat-interval-ms",
        "100",
        "--group-initial-rebalance-delay-ms",
        "0",
    ]


class ConsumerProtocolMember(Member):
    """Session and heartbeat come from the coordinator in this protocol: the client's
    session.timeout.ms and heartbeat.interval.ms do not apply."""

    def _open(self) -> None:
        from confluent_kafka import Consumer

        self.revoked: list[TopicPartition] = []
        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group,
            "group.protocol": "consumer",
            "client.id": self.client_id,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": 1000,
            "error_cb": self.errors.append,
        }
        if self.instance_id:
            config["group.instance.id"] = self.instance_id
        config.update(self.config)
        self.consumer = Consumer(config)

        def on_revoke(consumer: Any, partitions: Any) -> None:
            self.revoked.extend((p.topic, p.partition) for p in partitions)

        self.consumer.subscribe([self.topic], on_revoke=on_revoke)

    def _poll(self) -> None:
        message = self.consumer.poll(0.02)
        if message is not None and message.error() is not None:
            self.errors.append(message.error())

    def _assignment(self) -> set[TopicPartition]:
        return {(p.topic, p.partition) for p in self.consumer.assignment()}

    def _commit(self, offsets: dict[TopicPartition, int]) -> None:
        from confluent_kafka import TopicPartition as TP

        self.consumer.commit(
            offsets=[TP(t, p, o) for (t, p), o in offsets.items()], asynchronous=False
        )

    def _committed(self, tp: TopicPartition) -> int | None:
        from confluent_kafka import TopicPartition as TP

        [result] = self.consumer.committed([TP(*tp)], timeout=10)
        return None if result.offset < 0 else int(result.offset)

    def _close(self) -> None:
        self.consumer.close()


def main() -> None:
    bootstrap, group, topic, client_id = sys.argv[1:5]
    member = ConsumerProtocolMember(bootstrap, group, topic, client_id=client_id)
    last: frozenset[TopicPartition] | None = None
    deadline = time.monotonic() + 60  # never outlives its test by much
    while time.monotonic() < deadline:
        if member.assigned != last:
            last = member.assigned
            print(f"assigned {len(last)}", flush=True)
        time.sleep(0.02)
    member.close()


if __name__ == "__main__":
    main()
