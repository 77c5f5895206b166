"""The daemon's security state: users and ACLs loaded from the store, re-read periodically,
plus the failed-login throttle. Handlers ask ``may`` before acting on a group or topic."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import structlog

from ..shared.outage import Outage
from .acls import Authorizer, Operation, ResourceType
from .config import SecuritySettings
from .credentials import ScramCredential
from .throttle import FailedLoginThrottle

if TYPE_CHECKING:
    from ..store import SecurityRows, Store

log = structlog.get_logger("security")


class Security:
    def __init__(self, settings: SecuritySettings) -> None:
        self.settings = settings
        self.throttle = FailedLoginThrottle(
            settings.max_failed_authentications,
            settings.failed_authentication_window_ms,
            settings.failed_authentication_delay_ms,
        )
        self._rows: SecurityRows | None = None
        self._credentials: dict[tuple[str, str], ScramCredential] = {}
        self.authorizer = Authorizer((), settings.super_users)
        self._refreshing = False
        self._task: asyncio.Task[None] | None = None
        self._reading = Outage(log, "reading users and ACLs")

    @property
    def acls_enabled(self) -> bool:
        return self.settings.acls_enabled

    def load(self, rows: SecurityRows) -> None:
        if rows == self._rows:
            return
        self._rows = rows
        self._credentials = {(c.username, c.mechanism): c for c in rows.credentials}
        self.authorizer = Authorizer(rows.acls, self.settings.super_users)
        # Counts only: credentials are secrets, even salted.
        users = len({c.username for c in rows.credentials})
        log.info("security loaded", users=users, acls=len(rows.acls))

    def start_refresh(self, loop: asyncio.AbstractEventLoop, store: Store) -> None:
        """Re-read users and ACLs in the background (the CLI edits them in the store)."""
        if self._task is None or self._task.done():
            self._task = loop.create_task(self.refresh(store))

    async def refresh(self, store: Store) -> None:
        if self._refreshing:
            return
        self._refreshing = True
        try:
            self.load(await store.read_security())
        except Exception as exc:
            self._reading.failed(exc)
        else:
            self._reading.succeeded()
        finally:
            self._refreshing = False

    def credential(self, username: str, mechanism: str) -> ScramCredential | None:
        return self._credentials.get((username, mechanism))

    def may(
        self,
        principal: str,
        client_host: str,
        operation: Operation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        """Whether ``principal`` (connected from ``client_host``, "/1.2.3.4" as Kafka
        writes it) may do ``operation`` on the resource; always yes without ACLs."""
        if not self.settings.acls_enabled:
            return True
        return self.authorizer.authorize(
            principal, client_host.lstrip("/"), operation, resource_type, name
        )
