"""A store that keeps nothing across restarts: for tests and for benchmarking the rest.

Users and ACLs written to it are kept in memory (only code in the same process, such as
tests, can write them: the ``users``/``acls`` commands need the SQLite store).
"""

from __future__ import annotations

import asyncio

from ..shared.accounts import AclBinding, ScramCredential
from .base import LoadedState, SecurityRows, Store, Write


class MemoryStore(Store):
    persistent = False

    def __init__(self) -> None:
        self.batches = 0
        self._credentials: dict[tuple[str, str], ScramCredential] = {}
        self._acls: dict[AclBinding, None] = {}

    async def open(self) -> LoadedState:
        return LoadedState(security=await self.read_security())

    def write(self, batch: Write) -> asyncio.Future[None]:
        self.batches += 1
        for user, mechanism in batch.deleted_credentials:
            for key in [k for k in self._credentials if k[0] == user]:
                if mechanism is None or key[1] == mechanism:
                    del self._credentials[key]
        for c in batch.credentials:
            self._credentials[(c.username, c.mechanism)] = c
        for acl in batch.deleted_acls:
            self._acls.pop(acl, None)
        self._acls.update(dict.fromkeys(batch.acls))
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        fut.set_result(None)
        return fut

    async def read_security(self) -> SecurityRows:
        return SecurityRows(tuple(self._credentials.values()), tuple(self._acls))

    async def close(self) -> None:
        return None
