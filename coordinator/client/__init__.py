"""Asyncio clients for the daemon (or any Kafka broker): a raw connection, and more to come."""

from .connection import KafkaConnectionClient, connect

__all__ = ["KafkaConnectionClient", "connect"]
