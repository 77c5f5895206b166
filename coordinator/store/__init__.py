"""Durable state behind one interface: SQLite by default, in-memory for tests and benchmarks."""

from .base import LoadedState, SecurityRows, Store, Write
from .memory import MemoryStore
from .sqlite import SqliteStore

__all__ = [
    "LoadedState",
    "MemoryStore",
    "SecurityRows",
    "SqliteStore",
    "Store",
    "Write",
]
