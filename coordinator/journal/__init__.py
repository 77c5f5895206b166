"""The rebalance journal: one JSON line per group event, written off the event loop."""

from .schema import SCHEMA_VERSION, to_entry
from .writer import JournalWriter

__all__ = ["SCHEMA_VERSION", "JournalWriter", "to_entry"]
