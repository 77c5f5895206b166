"""Run every benchmark: ``python -m bench`` (``make bench``)."""

from __future__ import annotations

from . import codec

if __name__ == "__main__":
    codec.main([])
