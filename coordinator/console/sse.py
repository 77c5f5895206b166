"""Server-sent events, framed so that no text inside an event can end it early.

A browser's EventSource ends a line at ``\\r\\n``, ``\\r`` or ``\\n`` (the HTML standard's
event-stream grammar), so a payload is split on all three: every piece becomes its own
``data:`` line and the browser joins them back with ``\\n``. A client id or group id
carrying a bare ``\\r`` then stays inside its ``data:`` field instead of starting a forged
``event:``/``data:`` block that every viewer's page would render.
"""

from __future__ import annotations

import re

#: Every line ending an event-stream parser knows.
_LINE_END = re.compile(r"\r\n|\r|\n")


def event(name: str, payload: str) -> bytes:
    """One event: ``event: NAME`` and the payload as ``data:`` lines, then a blank line."""
    if _LINE_END.search(name):
        raise ValueError(f"an event name is one line: {name!r}")
    lines = "".join(f"data: {line}\n" for line in _LINE_END.split(payload))
    return f"event: {name}\n{lines}\n".encode()
