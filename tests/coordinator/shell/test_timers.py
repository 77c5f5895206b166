"""The keyed timers behind the state machine's timers: one loop timer over a heap of
deadlines. Driven by a fake loop whose clock the tests move, so every case is exact."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.shell.timers import COMPACT_SLACK, KeyedTimers
from tests.hypothesis_profiles import examples


class _Handle:
    def __init__(self, when: float, callback: Callable[[], None]) -> None:
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeLoop:
    """time() and call_at() of an event loop, with a clock that only moves when told."""

    def __init__(self) -> None:
        self.now = 100.0  # seconds
        self.handles: list[tuple[float, int, _Handle]] = []
        self._seq = 0

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Callable[..., None], *args: Any) -> _Handle:
        handle = _Handle(when, lambda: callback(*args))
        self._seq += 1
        heapq.heappush(self.handles, (when, self._seq, handle))
        return handle

    def live_handles(self) -> int:
        return sum(1 for _, _, h in self.handles if not h.cancelled)

    def run_until(self, ms: float) -> None:
        """Move the clock to ``ms`` (in ms), running what comes due on the way, one loop
        turn per distinct due time (as an event loop would)."""
        target = ms / 1000
        while self.handles and self.handles[0][0] <= target:
            when, _, handle = heapq.heappop(self.handles)
            # A hair past ``when``: ms -> s -> ms in floats may land just short of it.
            self.now = max(self.now, when + 1e-9)
            if not handle.cancelled:
                handle.callback()
        self.now = max(self.now, target)


def _timers() -> tuple[FakeLoop, KeyedTimers, list[tuple[str, float]]]:
    loop = FakeLoop()
    fired: list[tuple[str, float]] = []
    timers = KeyedTimers(loop, lambda key: fired.append((key, round(loop.now * 1000, 3))))  # type: ignore[arg-type]
    return loop, timers, fired


def test_keys_fire_once_at_their_deadlines_in_order() -> None:
    loop, timers, fired = _timers()
    timers.schedule("b", 100_200)
    timers.schedule("a", 100_100)
    timers.schedule("c", 100_300)
    assert len(timers) == 3 and loop.live_handles() == 1  # one loop timer for all
    loop.run_until(100_250)
    assert fired == [("a", 100_100), ("b", 100_200)]
    assert len(timers) == 1 and timers.deadline("c") == 100_300
    loop.run_until(101_000)
    assert [k for k, _ in fired] == ["a", "b", "c"]
    assert len(timers) == 0 and loop.live_handles() == 0


def test_a_deadline_moved_later_fires_then_and_one_moved_earlier_fires_sooner() -> None:
    loop, timers, fired = _timers()
    timers.schedule("hb", 100_100)
    for step in range(1, 50):  # a member heartbeating: its session deadline moves on
        timers.schedule("hb", 100_100 + step * 10)
    loop.run_until(100_500)
    assert fired == []
    loop.run_until(101_000)
    assert fired == [("hb", 100_590)]
    timers.schedule("x", 105_000)
    timers.schedule("x", 101_500)
    loop.run_until(101_600)
    assert fired[-1] == ("x", 101_500)
    loop.run_until(106_000)
    assert [k for k, _ in fired].count("x") == 1


def test_cancelled_keys_do_not_fire() -> None:
    loop, timers, fired = _timers()
    timers.schedule("a", 100_100)
    timers.schedule("b", 100_100)
    timers.cancel("a")
    timers.cancel("never-scheduled")
    loop.run_until(100_200)
    assert fired == [("b", 100_100)]
    timers.schedule("c", 100_300)
    timers.cancel_all()
    loop.run_until(101_000)
    assert fired == [("b", 100_100)] and len(timers) == 0


def test_a_firing_may_cancel_move_or_schedule_others() -> None:
    loop = FakeLoop()
    fired: list[str] = []
    timers: KeyedTimers

    def fire(key: str) -> None:
        fired.append(key)
        if key == "a":
            timers.cancel("b")  # due at the same time: must not fire now
            timers.schedule("c", 100_500)  # due too: moved later
            timers.schedule("again", round(loop.now * 1000))  # due at once: a later turn
        if key == "again" and fired.count("again") < 3:
            timers.schedule("again", round(loop.now * 1000))

    timers = KeyedTimers(loop, fire)  # type: ignore[arg-type]
    for key in ("a", "b", "c"):
        timers.schedule(key, 100_100)
    loop.run_until(100_100)
    assert fired == ["a", "again", "again", "again"]
    loop.run_until(100_600)
    assert fired[-1] == "c" and "b" not in fired


def test_a_failing_timer_does_not_stop_the_others() -> None:
    loop = FakeLoop()
    fired: list[str] = []

    def fire(key: str) -> None:
        if key == "bad":
            raise RuntimeError("boom")
        fired.append(key)

    timers = KeyedTimers(loop, fire)  # type: ignore[arg-type]
    timers.schedule("bad", 100_100)
    timers.schedule("good", 100_100)
    timers.schedule("later", 100_200)
    loop.run_until(100_300)
    assert fired == ["good", "later"]


def test_cancelled_far_timers_do_not_pile_up() -> None:
    _loop, timers, _ = _timers()
    for i in range(20_000):  # e.g. a rebalance timeout armed and cancelled by every rebalance
        timers.schedule(f"join/g{i}", 400_000 + i)
        timers.cancel(f"join/g{i}")
    timers.schedule("live", 400_000)
    assert len(timers._heap) <= 2 * len(timers) + COMPACT_SLACK + 1


_KEYS = st.sampled_from(["a", "b", "c", "d"])
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("schedule"), _KEYS, st.integers(0, 2_000)),
        st.tuples(st.just("cancel"), _KEYS, st.just(0)),
        st.tuples(st.just("advance"), st.just(""), st.integers(0, 700)),
    ),
    max_size=60,
)


@settings(max_examples=examples(300, fast=100), deadline=None)
@given(_OPS)
def test_against_a_model_each_key_fires_at_its_latest_deadline(
    ops: list[tuple[str, str, int]],
) -> None:
    loop, timers, fired = _timers()
    model: dict[str, int] = {}
    now = 100_000
    for op, key, value in ops:
        if op == "schedule":
            model[key] = now + value
            timers.schedule(key, now + value)
        elif op == "cancel":
            model.pop(key, None)
            timers.cancel(key)
        else:
            now += value
            before = len(fired)
            loop.run_until(now)
            due = {k: d for k, d in model.items() if d <= now}
            got = fired[before:]
            assert sorted(k for k, _ in got) == sorted(due)  # each due key once, no other
            for k, at in got:
                assert due[k] <= at <= due[k] + 1  # at its deadline (the loop's 1 ms slack)
                del model[k]
        assert len(timers) == len(model)
