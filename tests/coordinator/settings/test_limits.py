"""The connection sweeper's decisions, on a clock the test moves (no sockets, no sleeps)."""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.settings.limits import ConnectionGuard, ConnectionLimits

LIMITS = ConnectionLimits(
    connections_max_idle_ms=1500, request_receive_timeout_ms=500, slow_reader_timeout_ms=800
)


@dataclass
class Conn:
    peer_ip: str = "10.0.0.1"
    last_activity: float = 0.0
    partial_since: float | None = None
    write_blocked_since: float | None = None
    busy: bool = False
    paused: bool = False
    aborted: bool = False

    def abort(self) -> None:
        self.aborted = True


def swept(conns: list[Conn], now_s: float) -> ConnectionGuard:
    guard = ConnectionGuard(LIMITS)
    guard.sweep(conns, now_s)
    return guard


def test_an_idle_connection_is_closed_and_an_active_one_is_not() -> None:
    idle, active = Conn(last_activity=0.0), Conn(last_activity=1.4)
    guard = swept([idle, active], now_s=1.6)
    assert idle.aborted and not active.aborted
    assert guard.refused["connections_max_idle"] == 1


def test_a_parked_request_is_not_idleness() -> None:
    parked = Conn(last_activity=0.0, busy=True)
    swept([parked], now_s=60.0)
    assert not parked.aborted


def test_a_request_trickling_in_is_dropped_at_the_receive_deadline_unless_we_paused() -> None:
    loris = Conn(last_activity=0.55, partial_since=0.0)
    paused = Conn(last_activity=0.55, partial_since=0.0, paused=True)
    guard = swept([loris, paused], now_s=0.6)
    assert loris.aborted and not paused.aborted
    assert guard.refused["request_receive_timeout"] == 1


def test_a_client_that_does_not_read_is_dropped_after_the_slow_reader_timeout() -> None:
    reading, stuck = Conn(last_activity=0.9), Conn(last_activity=0.9, write_blocked_since=0.1)
    edge = Conn(last_activity=0.9, write_blocked_since=0.2)
    guard = swept([reading, stuck, edge], now_s=1.0)
    assert stuck.aborted and not reading.aborted and not edge.aborted
    assert guard.refused["slow_reader_timeout"] == 1
