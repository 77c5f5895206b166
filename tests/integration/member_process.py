"""A group member in its own process, so a test can SIGKILL it (no LeaveGroup is sent).

    python -m tests.integration.member_process LIB BOOTSTRAP GROUP TOPIC CLIENT_ID [SESSION_MS]

Prints "assigned N" whenever its assignment changes.
"""

from __future__ import annotations

import sys
import time

from .clients import LIBRARIES


def main() -> None:
    lib, bootstrap, group, topic, client_id = sys.argv[1:6]
    session = {"session_timeout_ms": int(sys.argv[6])} if len(sys.argv) > 6 else {}
    member = LIBRARIES[lib](bootstrap, group, topic, client_id=client_id, **session)
    last: frozenset[tuple[str, int]] | None = None
    deadline = time.monotonic() + 120  # never outlives its test by much
    while time.monotonic() < deadline:
        if member.assigned != last:
            last = member.assigned
            print(f"assigned {len(last)}", flush=True)
        time.sleep(0.02)
    member.close()


if __name__ == "__main__":
    main()
