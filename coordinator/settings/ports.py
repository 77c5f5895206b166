"""TCP ports as the user writes them: a number from 0 (any free one) to 65535."""

from __future__ import annotations

MAX_PORT = 65535


def parse_port(port: str, value: str, expected: str = "HOST:PORT") -> int:
    """A TCP port (0: any free one); out of range is refused, not wrapped by the OS."""
    if not port.isdigit():
        raise ValueError(f"expected {expected}, got {value!r}")
    if int(port) > MAX_PORT:
        raise ValueError(f"port {port} is out of range (0-{MAX_PORT}) in {value!r}")
    return int(port)
