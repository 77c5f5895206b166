"""The failed-login throttle on its own (no I/O, times given): Kafka's delay, doubling past
an allowance, one check at a time past it, nobody locked out, the window forgetting."""

from __future__ import annotations

from coordinator.security.throttle import FailedLoginThrottle


def fail(t: FailedLoginThrottle, address: str, user: str, now: int) -> int | None:
    """A wrong password: the answer's delay, or None when refused unchecked."""
    admission = t.admit(address, user, now)
    return None if admission is None else t.finish(admission, False, now)


def test_a_client_retrying_a_wrong_password_is_slowed_never_locked_out() -> None:
    t = FailedLoginThrottle(allowance=3, window_ms=60_000, base_delay_ms=100)
    now, delays = 0, []
    for _ in range(10):  # each try sent when the previous answer came
        delay = fail(t, "10.0.0.1", "alice", now)
        assert delay is not None
        delays.append(delay)
        now += delay
    assert delays == [100, 100, 100, 200, 400, 800, 1600, 3200, 6400, 10_000]
    ok = t.admit("10.0.0.1", "alice", now)
    assert ok is not None and t.finish(ok, True, now) == 0  # the right one: at once
    # Others are not slowed by alice's failures; the window forgets them.
    assert fail(t, "10.0.0.1", "bob", now) == 100
    assert fail(t, "10.0.0.2", "alice", now) == 100
    assert fail(t, "10.0.0.1", "alice", now + 60_000 + 30_000) == 100


def test_past_the_allowance_one_check_at_a_time_and_none_while_an_answer_is_held() -> None:
    t = FailedLoginThrottle(allowance=2, window_ms=60_000, base_delay_ms=100)
    within = [t.admit("a", "alice", 0) for _ in range(2)]
    past = t.admit("a", "alice", 0)  # the allowance is in flight: one more is checked...
    assert all(within) and past is not None
    assert t.admit("a", "alice", 0) is None  # ...and no other until it ends
    for admission in within:
        assert admission is not None and t.finish(admission, False, 0) == 100
    assert t.finish(past, False, 0) == 200  # the third failure (past an allowance of 2)
    assert t.admit("a", "alice", 199) is None  # its answer is still held
    assert t.admit("a", "alice", 200) is not None


def test_an_address_trying_many_user_names_is_throttled_too() -> None:
    t = FailedLoginThrottle(allowance=2, window_ms=60_000, base_delay_ms=100)
    limit = 2 * FailedLoginThrottle.ADDRESS_FACTOR
    delays = [fail(t, "a", f"user-{i}", i * 1000) for i in range(limit + 2)]
    assert delays[: limit - 1] == [100] * (limit - 1)
    assert delays[limit - 1 :] == [100, 200, 400]
    # The address's hold is shorter (its users share it): a tenth of the answer's delay.
    now = (limit + 1) * 1000
    assert t.admit("a", "newcomer", now + 39) is None
    assert t.admit("a", "newcomer", now + 40) is not None


def test_a_check_whose_answer_was_lost_stops_holding_the_user() -> None:
    """A connection closed while its password was checked: the check never finishes.
    Its user is held only for a while, not for ever."""
    t = FailedLoginThrottle(allowance=1, window_ms=60_000, base_delay_ms=100)
    assert t.admit("a", "alice", 0) is not None  # the allowance, never finished
    assert t.admit("a", "alice", 0) is not None  # past it: one more...
    assert t.admit("a", "alice", 1000) is None  # ...never finished either
    later = FailedLoginThrottle.STALE_CHECK_MS + 1
    ok = t.admit("a", "alice", later)
    assert ok is not None and t.finish(ok, True, later) == 0
