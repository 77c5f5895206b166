"""Member ids as Kafka makes them: the client (or instance) id, a dash, a random version-4
UUID; random bytes come from the OS a page at a time, so ids must stay unique across the
refills and in a forked child."""

from __future__ import annotations

import os
import uuid

from coordinator.group.context import default_member_id


def _uuid(member_id: str, prefix: str) -> uuid.UUID:
    assert member_id.startswith(prefix + "-")
    return uuid.UUID(member_id[len(prefix) + 1 :])


def test_ids_are_the_prefix_and_a_version_4_uuid_unique_across_refills() -> None:
    ids = [default_member_id("consumer-1") for _ in range(3_000)]  # ~12 pages of bytes
    assert len(set(ids)) == len(ids)
    for member_id in ids[::97]:
        u = _uuid(member_id, "consumer-1")
        assert (u.version, u.variant) == (4, uuid.RFC_4122)


def test_a_forked_child_does_not_repeat_its_parents_ids() -> None:
    default_member_id("p")  # the parent holds a page of random bytes
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next id, to the parent
        os.write(write, default_member_id("p").encode())
        os._exit(0)
    os.close(write)
    child_id = os.read(read, 200).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert child_id != default_member_id("p")
