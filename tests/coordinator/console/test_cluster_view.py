"""The console's read of the other nodes' groups: a database that is away leaves the last
list shown with the reason, and is not asked again on every page."""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any

from coordinator.cluster.directory import StoredGroup
from coordinator.console.cluster_view import RETRY_AFTER_S, ClusterGroups, console_url


class AwayStore:
    """A store whose database does not answer."""

    def __init__(self) -> None:
        self.attempts = 0

    @property
    def pool(self) -> Any:
        store = self

        class Pool:
            @asynccontextmanager
            async def acquire(self) -> Any:
                store.attempts += 1
                raise ConnectionRefusedError("the database is away")
                yield

        return Pool()


async def test_a_database_away_keeps_the_last_list_and_is_not_asked_on_every_page() -> None:
    store = AwayStore()
    groups = ClusterGroups(store, "uniform")  # type: ignore[arg-type]
    last = [StoredGroup("g", "classic", "Empty", "", "", 0, 0, 1)]
    groups.groups = last
    await groups.refresh()
    assert groups.problem == "the database is away" and groups.groups == last
    for _ in range(5):  # pages opened meanwhile do not wait for it again
        await groups.refresh()
    assert store.attempts == 1
    assert groups.next_read_at is not None
    groups.next_read_at -= RETRY_AFTER_S  # later on
    await groups.refresh()
    assert store.attempts == 2


def test_a_console_is_advertised_as_clients_reach_it() -> None:
    assert console_url("127.0.0.1", 8080) == "http://127.0.0.1:8080/"
    assert console_url("::1", 8080) == "http://[::1]:8080/"
    assert console_url("0.0.0.0", 8080) != "http://0.0.0.0:8080/"  # a host name instead
