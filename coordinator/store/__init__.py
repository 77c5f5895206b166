"""Durable state behind one interface: SQLite by default, in-memory for tests and benchmarks."""

from .base import GroupRow, LoadedState, OffsetRow, SecurityRows, Store, Write
from .memory import MemoryStore
from .sqlite import SqliteStore

__all__ = [
    "GroupRow",
    "LoadedState",
    "MemoryStore",
    "OffsetRow",
    "SecurityRows",
    "SqliteStore",
    "Store",
    "Write",
]
