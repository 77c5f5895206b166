"""Run every benchmark: ``python -m bench [--quick]`` (``make bench``)."""

from __future__ import annotations

from .run import main

if __name__ == "__main__":
    main()
