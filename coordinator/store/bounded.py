"""Transactions that cannot outlive a budget (in a cluster: what is left of the node's lease).

A node that stalls (paused, or its connection to the database silently frozen) while it is
inside a transaction keeps that transaction's locks; others must never wait on them for
longer than its lease. So each transaction is bounded on both ends:

- at the server: ``statement_timeout``, ``lock_timeout`` and
  ``idle_in_transaction_session_timeout`` are set, for this transaction only, to the
  budget: PostgreSQL ends the session (and frees its locks) once it runs out, whatever
  this node does;
- here: the whole transaction, from taking a pooled connection to COMMIT, runs under the
  same deadline; a connection that overran it is dropped (its state is unknown), never
  reused.

Every pooled connection also has TCP keepalives on both sides (``keepalive_settings`` and
``enable_keepalives``), so a peer gone silent is noticed within seconds, not hours.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

import asyncpg


class BudgetSpent(Exception):
    """The budget (the node's lease) ran out before or during the transaction."""


def keepalive_settings(timeout_ms: int) -> dict[str, str]:
    """Server-side settings: the server probes an idle client connection and gives up
    within about ``timeout_ms``; every statement and lock wait is bounded by it too (a
    transaction sets its own, tighter bounds)."""
    idle_s = max(1, timeout_ms // 3000)
    return {
        "tcp_keepalives_idle": str(idle_s),
        "tcp_keepalives_interval": "1",
        "tcp_keepalives_count": "3",
        "statement_timeout": str(timeout_ms),
        "lock_timeout": str(timeout_ms),
        "idle_in_transaction_session_timeout": str(timeout_ms),
    }


def enable_keepalives(conn: asyncpg.Connection, timeout_ms: int) -> None:
    """Client-side keepalives and TCP_USER_TIMEOUT (unacknowledged data) on ``conn``."""
    transport = getattr(conn, "_transport", None)
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return  # a Unix socket: no network to lose
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, max(1, timeout_ms // 3000))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 3)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, timeout_ms)


def begin(budget_ms: int, label: str) -> str:
    """BEGIN, with the server ending the transaction (and freeing its locks) once it has
    run, waited for a lock or sat idle for ``budget_ms``; one round trip."""
    ms = int(budget_ms)
    return (
        f"BEGIN; SET LOCAL statement_timeout = {ms}; SET LOCAL lock_timeout = {ms};"
        f" SET LOCAL idle_in_transaction_session_timeout = {ms}; -- {label}"
    )


@contextlib.asynccontextmanager
async def transaction(
    pool: asyncpg.Pool, budget_ms: int, label: str
) -> AsyncIterator[asyncpg.Connection]:
    """One transaction on a pooled connection that ends (committed, rolled back or cut
    off) within ``budget_ms``; raises ``BudgetSpent`` if it could not. ``label`` names the
    transaction in the server's statement log and to fault-injecting test proxies."""
    if budget_ms <= 0:
        raise BudgetSpent(f"{label}: no lease left")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + budget_ms / 1000
    try:
        async with asyncio.timeout_at(deadline):  # (wait_for may swallow a cancellation)
            conn = await pool.acquire()
    except TimeoutError:
        raise BudgetSpent(f"{label}: no connection within {budget_ms} ms") from None
    clean = False
    try:
        async with asyncio.timeout_at(deadline):
            await conn.execute(begin(budget_ms, label))
            try:
                yield conn
            except asyncio.CancelledError:
                raise  # cut off mid-statement: the connection is dropped below
            except BaseException:
                # An ordinary failure (fenced, a constraint): the connection is sound.
                await conn.execute("ROLLBACK")
                clean = True
                raise
            await conn.execute("COMMIT")
            clean = True
    except TimeoutError:
        raise BudgetSpent(f"{label}: not done within {budget_ms} ms") from None
    finally:
        if not clean:
            conn.terminate()  # overran or broke mid-way: its state is unknown
        await pool.release(conn, timeout=1)
