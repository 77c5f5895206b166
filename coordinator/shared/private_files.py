"""Owner-only permissions for what the daemon keeps on disk.

The store holds SCRAM salts and keys (enough for an offline dictionary attack) and the
journal names clients and hosts, so the data directories are 0700 and their files 0600,
whatever the umask, for new and existing installations alike.
"""

from __future__ import annotations

import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> None:
    """Create ``path`` (and its parents) if needed; make it owner-only."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    os.chmod(path, DIR_MODE)


def private_file(path: Path | str) -> None:
    """Make ``path`` owner-only, if it exists."""
    try:
        os.chmod(path, FILE_MODE)
    except FileNotFoundError:
        pass


def private_tree(path: Path) -> None:
    """Make ``path`` and everything under it owner-only (what a tool wrote there with its
    own modes: Spark's Parquet files, matplotlib's charts)."""
    if not path.exists():
        return
    os.chmod(path, DIR_MODE if path.is_dir() else FILE_MODE)
    for root, dirs, files in os.walk(path):
        for name in dirs:
            os.chmod(os.path.join(root, name), DIR_MODE)
        for name in files:
            os.chmod(os.path.join(root, name), FILE_MODE)
