"""The three client libraries behind one small interface, each polling in its own thread.

Kafka consumers are not thread-safe, so every call runs on the consumer's own poll thread
(commands go through a queue); the tests only read the assignment snapshot it publishes.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

TopicPartition = tuple[str, int]

POLL_S = 0.05


class Member:
    """A consumer-group member of some client library, driven from its own thread."""

    def __init__(
        self,
        bootstrap: str,
        group: str,
        topic: str,
        *,
        client_id: str,
        session_timeout_ms: int = 6000,
        instance_id: str | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        self.bootstrap = bootstrap
        self.group = group
        self.topic = topic
        self.client_id = client_id
        self.session_timeout_ms = session_timeout_ms
        self.instance_id = instance_id
        self.config = config or {}  # extra library-specific settings (security, ...)
        self.errors: list[Any] = []  # errors the library reported without raising
        self.assigned: frozenset[TopicPartition] = frozenset()
        self.rebalances = 0  # assignment callbacks seen
        self._commands: queue.Queue[tuple[Callable[[], Any], Future[Any]]] = queue.Queue()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"member-{client_id}", daemon=True)
        self.error: BaseException | None = None
        self._thread.start()
        if not self._ready.wait(20):
            raise RuntimeError("consumer did not start")
        if self.error:
            raise self.error

    # -- what the tests call ---------------------------------------------------------------

    def call(self, fn: Callable[[], Any], timeout: float = 20) -> Any:
        fut: Future[Any] = Future()
        self._commands.put((fn, fut))
        return fut.result(timeout)

    def commit(self, offsets: dict[TopicPartition, int]) -> None:
        self.call(lambda: self._commit(offsets))

    def committed(self, tp: TopicPartition) -> int | None:
        return self.call(lambda: self._committed(tp))  # type: ignore[no-any-return]

    def close(self) -> None:
        """Graceful close: the library's own close (a LeaveGroup for dynamic members)."""
        self._stop.set()
        self._thread.join(30)

    # -- per library -------------------------------------------------------------------------

    def _open(self) -> None:
        raise NotImplementedError

    def _poll(self) -> None:
        raise NotImplementedError

    def _assignment(self) -> set[TopicPartition]:
        raise NotImplementedError

    def _commit(self, offsets: dict[TopicPartition, int]) -> None:
        raise NotImplementedError

    def _committed(self, tp: TopicPartition) -> int | None:
        raise NotImplementedError

    def _close(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        try:
            self._open()
        except BaseException as exc:  # surfaced to the constructor
            self.error = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            while not self._stop.is_set():
                while not self._commands.empty():
                    fn, fut = self._commands.get_nowait()
                    try:
                        fut.set_result(fn())
                    except BaseException as exc:
                        fut.set_exception(exc)
                self._poll()
                self.assigned = frozenset(self._assignment())
        except BaseException as exc:
            self.error = exc
        finally:
            self._close()


class KafkaPythonMember(Member):
    def _open(self) -> None:
        from kafka import KafkaConsumer
        from kafka.consumer.subscription_state import ConsumerRebalanceListener

        member = self

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            def on_partitions_revoked(self, revoked: Any) -> None:
                pass

            def on_partitions_assigned(self, assigned: Any) -> None:
                member.rebalances += 1

        self.consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            client_id=self.client_id,
            group_instance_id=self.instance_id,
            session_timeout_ms=self.session_timeout_ms,
            heartbeat_interval_ms=300,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            request_timeout_ms=30000,
            # kafka-python 3.0.12 can lead an assignment before its first Metadata response
            # ("No partition metadata for topic") and miss the topic showing up; a refresh
            # every 2 s makes it notice and rejoin, as it would against Kafka.
            metadata_max_age_ms=2000,
            **self.config,
        )
        self.consumer.subscribe([self.topic], listener=Listener())

    def _poll(self) -> None:
        coordinator = self.consumer._coordinator
        task = coordinator._join_task
        if task is not None and task.is_done and not coordinator.need_rejoin():
            # kafka-python 3.0.12 loses a JoinGroup/SyncGroup round that finishes after
            # poll() timed out if the leader's own assignment made need_rejoin() false:
            # the member never applies its assignment nor heartbeats again (seen here
            # about once in six two-member groups). Against Kafka it would hang the same
            # way; rejoining is what the client should have done.
            coordinator.request_rejoin()
        from kafka.errors import KafkaError

        try:
            self.consumer.poll(timeout_ms=int(POLL_S * 1000))
        except KafkaError as exc:
            # kafka-python 3.0.12 lets a retriable error out of poll(): when a coordinator
            # lookup fails on a connection error (KafkaConnectionError, an
            # InvalidMetadataError), ensure_coordinator_ready_async waits for a metadata
            # refresh catching only its timeout, so a refresh that fails too (sent to a broker
            # that just went away: a coordinator stopped by SIGTERM, still in the client's
            # metadata) is raised. This thread used to end there, and the member's group
            # waited a whole session for its JoinGroup. The next poll() looks the coordinator
            # up again, as an application's would.
            if not exc.retriable:
                raise
            self.errors.append(exc)

    def _assignment(self) -> set[TopicPartition]:
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    def _commit(self, offsets: dict[TopicPartition, int]) -> None:
        from kafka import OffsetAndMetadata
        from kafka import TopicPartition as TP

        self.consumer.commit(
            {TP(t, p): OffsetAndMetadata(o, "meta", -1) for (t, p), o in offsets.items()}
        )

    def _committed(self, tp: TopicPartition) -> int | None:
        from kafka import TopicPartition as TP

        value = self.consumer.committed(TP(*tp))
        return None if value is None else int(value)

    def _close(self) -> None:
        self.consumer.close()


class ConfluentMember(Member):
    def _open(self) -> None:
        from confluent_kafka import Consumer

        config: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group,
            "client.id": self.client_id,
            "session.timeout.ms": self.session_timeout_ms,
            "heartbeat.interval.ms": 300,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "range",
            "topic.metadata.refresh.interval.ms": 1000,
        }
        if self.instance_id:
            config["group.instance.id"] = self.instance_id
        config["error_cb"] = self.errors.append
        config.update(self.config)
        self.consumer = Consumer(config)
        self._assigned: set[TopicPartition] = set()

        def on_assign(consumer: Any, partitions: Any) -> None:
            self.rebalances += 1
            self._assigned = {(p.topic, p.partition) for p in partitions}

        def on_revoke(consumer: Any, partitions: Any) -> None:
            self._assigned = set()

        self.consumer.subscribe([self.topic], on_assign=on_assign, on_revoke=on_revoke)

    def _poll(self) -> None:
        message = self.consumer.poll(POLL_S)
        if message is not None and message.error() is not None:
            self.errors.append(message.error())

    def _assignment(self) -> set[TopicPartition]:
        return set(self._assigned)

    def _commit(self, offsets: dict[TopicPartition, int]) -> None:
        from confluent_kafka import TopicPartition as TP

        self.consumer.commit(
            offsets=[TP(t, p, o, metadata="meta") for (t, p), o in offsets.items()],
            asynchronous=False,
        )

    def _committed(self, tp: TopicPartition) -> int | None:
        from confluent_kafka import TopicPartition as TP

        [result] = self.consumer.committed([TP(*tp)], timeout=10)
        return None if result.offset < 0 else int(result.offset)

    def _close(self) -> None:
        self.consumer.close()


class AiokafkaMember(Member):
    def _open(self) -> None:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.abc import ConsumerRebalanceListener

        member = self

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            async def on_partitions_revoked(self, revoked: Any) -> None:
                pass

            async def on_partitions_assigned(self, assigned: Any) -> None:
                member.rebalances += 1

        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)

        async def create() -> Any:
            # aiokafka must be constructed inside a running loop.
            consumer = AIOKafkaConsumer(
                bootstrap_servers=self.bootstrap,
                group_id=self.group,
                client_id=self.client_id,
                group_instance_id=self.instance_id,
                session_timeout_ms=self.session_timeout_ms,
                heartbeat_interval_ms=300,
                enable_auto_commit=False,
                auto_offset_reset="earliest",
                **self.config,
            )
            consumer.subscribe([self.topic], listener=Listener())
            await consumer.start()
            return consumer

        self.consumer = self.loop.run_until_complete(create())

    def _poll(self) -> None:
        self.loop.run_until_complete(self.consumer.getmany(timeout_ms=int(POLL_S * 1000)))

    def _assignment(self) -> set[TopicPartition]:
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    def _commit(self, offsets: dict[TopicPartition, int]) -> None:
        from aiokafka import TopicPartition as TP
        from aiokafka.structs import OffsetAndMetadata

        self.loop.run_until_complete(
            self.consumer.commit(
                {TP(t, p): OffsetAndMetadata(o, "meta") for (t, p), o in offsets.items()}
            )
        )

    def _committed(self, tp: TopicPartition) -> int | None:
        from aiokafka import TopicPartition as TP

        value = self.loop.run_until_complete(self.consumer.committed(TP(*tp)))
        return None if value is None else int(value)

    def _close(self) -> None:
        self.loop.run_until_complete(self.consumer.stop())
        self.loop.close()


LIBRARIES: dict[str, type[Member]] = {
    "kafka-python": KafkaPythonMember,
    "aiokafka": AiokafkaMember,
    "confluent-kafka": ConfluentMember,
}
