"""Where the analysis reads and writes: a local path, or a URI handed to Spark as given.

Its own module so that the report (which links the tables) and the command (which runs the
job) both read it without importing each other.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse


def is_uri(path: str) -> bool:
    """hdfs://, s3a://, file://...: handed to Spark as given."""
    return "://" in path


def local_path(out: str | Path) -> Path | None:
    """The local directory ``out`` names (a path or a file:// URI), else None."""
    text = str(out)
    if not is_uri(text):
        return Path(text)
    parsed = urlparse(text)
    if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
        return Path(unquote(parsed.path))
    return None


def table_root(out: str | Path) -> str:
    """Where the tables go, as Spark reads it: a URI as given, a local path made absolute."""
    text = str(out)
    return text.rstrip("/") if is_uri(text) else str(Path(text).resolve())
