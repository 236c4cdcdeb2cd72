"""The launch sampler's windows, on a clock the test moves (no CUPTI, no threads of its own)."""

from __future__ import annotations

import threading

from profiler.sources.cupti.sampling import LaunchSampler


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def sampler(clock: Clock, switched: list[bool], reopened: list[int]) -> LaunchSampler:
    return LaunchSampler(switched.append, per_window=3, period_s=1.0, clock=clock,
                         on_reopen=lambda: reopened.append(1))


def test_a_window_shuts_when_full_and_opens_after_the_jittered_pause() -> None:
    clock, switched, reopened = Clock(), [], []
    s = sampler(clock, switched, reopened)
    for _ in range(2):
        s.seen()
    s.close()
    assert s.open and switched == [], "not full: nothing switched"
    s.seen()
    s.close()
    assert not s.open and switched == [False] and s.heard == 3
    s.close()
    assert switched == [False], "shut once"
    clock.now += 0.49
    s.tick()
    assert not s.open, "the pause is at least half the period"
    clock.now += 1.02
    s.tick()
    assert s.open and switched == [False, True] and s.count == 0 and s.windows == 2 and reopened == [1]
    s.tick()
    assert switched == [False, True], "an open window is left alone"


def test_a_thread_finding_another_switching_leaves_it_to_that_one() -> None:
    clock, switched, reopened = Clock(), [], []
    s = sampler(clock, switched, reopened)
    for _ in range(3):
        s.seen()
    s._lock.acquire()  # another thread is switching
    try:
        s.close()
    finally:
        s._lock.release()
    assert s.open and switched == [], "skipped, not waited for: callbacks must not block"
    s.close()
    assert not s.open


def test_nothing_is_switched_once_stopped() -> None:
    clock, switched, reopened = Clock(), [], []
    s = sampler(clock, switched, reopened)
    for _ in range(3):
        s.seen()
    s.close()
    s.stop()
    clock.now += 10
    s.reopen()
    s.tick()
    assert switched == [False] and not s.open and reopened == []
    done = threading.Event()

    def late() -> None:
        s.tick()
        done.set()

    threading.Thread(target=late).start()
    assert done.wait(5) and switched == [False]
