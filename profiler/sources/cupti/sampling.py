"""Launch call sites, sampled: the launch callbacks are on for a few launches, then off for a while.

Every CUDA call the tracer listens to costs a callback into Python on
entry and on exit, and the runtime call's entry walks the Python stack.
A training loop launches hundreds of thousands of kernels (320k in one
epoch of PyTorch's word_language_model), most from autograd's own
thread, so listening to every launch tripled the program's wall time.
Kernels need no callback to be recorded: their activity records carry
name, stream and device times, and are counted and timed exactly. Only
their call site needs one, and a loop launches the same kernels from the
same lines again and again, so the sites are sampled: the callbacks are
on for `per_window` launches, then off for about `period_s` (jittered,
so that a window does not always fall on the same part of a step), and
a launch without a site takes the site of a sampled launch of the same
kernel (`convert`; `Meta.estimated` names `launch.site`).

The callbacks are switched from inside the tracer's own callbacks, on
the thread making the CUDA call, never from a thread of the profiler's
own: a window closes as the launch that fills it returns, and opens again
at the first copy, memset or sync called once the pause is over. CUPTI
turned deaf when a thread of its own switched the driver's launch
callbacks while the program's thread was making CUDA calls (H200, CUDA
13.2, cupti-python 13.0.1; docs/cupti.md, "Switching callbacks"): from
then on, for the rest of the process, that thread's calls got no
callback and no correlation id of their own, so copies lost their lines
and syncs went missing, in about one recording in ten of a busy loop and
within a few hundred switches when they came every 2 ms. Switched from
the calling thread, no loss was seen. A thread in the middle of a CUDA
call while another thread switches can still meet it; in a PyTorch
training step the main thread and autograd's thread take turns, so the
usual case is clear, and `convert` warns of any record whose call went
unheard.

A loop that only launches (no copy, memset or sync) would keep its
window shut. When every CUDA call heard so far came from the main
thread, a timer thread of the sampler's own therefore asks the
interpreter to run the reopening on the main thread once the pause is
over (`Py_AddPendingCall`): the main thread runs it between two Python
bytecodes, outside any CUDA call of its own (or inside the tracer's own
callback, which is where switching is safe anyway), and no other thread
is known to be in one. The timer switches nothing itself. A program
whose other threads make CUDA calls opens its windows at their copies,
memsets and syncs only.

Memsets are not sampled: switching their callbacks with the launches' was
the first way this loss was met. They are heard in the driver only
(`apis`), which halves their callbacks and skips the runtime's empty
memsets. Copies and syncs keep their callbacks always too: the rules need
their sites, host pointers and fingerprints, and there are few of them.
"""

from __future__ import annotations

import ctypes
import random
import threading
import time
from typing import Callable, Literal

#: the launch sites a recording takes: a sample of them (default), all of them (`--every-launch`), none
LaunchSites = Literal["sampled", "all", "none"]
PER_WINDOW = 32
PERIOD_S = 0.1


_PENDING = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
#: the sampler whose reopening the main thread is asked to run (one recording at a time per process)
_ARMED: list[LaunchSampler] = []


def _run_pending(_: object) -> int:
    """Run on the main thread by the interpreter; must not raise (a non-zero return would raise in the program)."""
    try:
        if _ARMED:
            _ARMED[0]._asked = False
            _ARMED[0].tick()
    except Exception:
        pass
    return 0


#: the C function pointer the interpreter calls; alive for the process, since a call may be queued past a recording
_PENDING_FN = _PENDING(_run_pending)


_ADD_PENDING_CALL = ctypes.pythonapi.Py_AddPendingCall
_ADD_PENDING_CALL.argtypes = [_PENDING, ctypes.c_void_p]
_ADD_PENDING_CALL.restype = ctypes.c_int


def _ask_main_thread() -> bool:
    """Queue `_run_pending` for the main thread (False if the interpreter's queue is full)."""
    return _ADD_PENDING_CALL(_PENDING_FN, None) == 0


class LaunchSampler:
    """Turns the launch callbacks off after `per_window` launches and on again about `period_s` later.

    `seen`, `close` and `tick` are called from the tracer's callbacks:
    `seen` on a launch's entry, `close` on the exit of a launch once
    `full`, `tick` on entry to any other call heard while the window is
    shut; `tick` also from the main thread at the timer's request.
    Only one thread switches at a time (CUPTI asks callers to serialise
    `cuptiEnableCallback`); a thread that finds another switching leaves
    it to that one.
    """

    def __init__(self, switch: Callable[[bool], None], *, per_window: int = PER_WINDOW, period_s: float = PERIOD_S,
                 on_reopen: Callable[[], None] = lambda: None, clock: Callable[[], float] = time.perf_counter,
                 main_only: Callable[[], bool] = lambda: False) -> None:
        self.switch = switch
        #: whether every CUDA call heard so far came from the main thread (then the main thread may reopen)
        self.main_only = main_only
        self.per_window = per_window
        self.period_s = period_s
        self.on_reopen = on_reopen
        self.clock = clock
        #: launch callbacks heard in this window
        self.count = 0
        #: launch callbacks heard in all windows
        self.heard = 0
        self.windows = 1  # the callbacks are on when the recording starts
        #: whether the launch callbacks are on
        self.open = True
        self._reopen_at = 0.0
        self._stopped = False
        self._lock = threading.Lock()
        self._random = random.Random(0x5EED)
        self._paused = threading.Event()  # set by `close`: the timer has a pause to wait out
        self._ended = threading.Event()
        self._timer: threading.Thread | None = None
        self._asked = False  # a reopening is queued for the main thread

    @property
    def full(self) -> bool:
        return self.count >= self.per_window

    def seen(self) -> None:
        """A launch callback ran (on its entry: must stay cheap)."""
        self.count += 1
        self.heard += 1

    def close(self) -> None:
        """Turn the launch callbacks off, the window being full (from a launch's exit callback)."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            if self.open and not self._stopped and self.full:
                self.switch(False)
                self.open = False
                self._reopen_at = self.clock() + self.period_s * self._random.uniform(0.5, 1.5)
                if self.main_only():
                    self._arm()
        finally:
            self._lock.release()

    def _arm(self) -> None:
        """Have the timer ask the main thread to reopen once this pause is over."""
        if self._timer is None:
            _ARMED[:] = [self]
            self._timer = threading.Thread(target=self._wait, name="offload-prof-launch-sites", daemon=True)
            self._timer.start()
        self._paused.set()

    def _wait(self) -> None:
        """The timer thread: waits out each pause, then asks the main thread to reopen until it has."""
        ended = self._ended
        while True:
            self._paused.wait()
            self._paused.clear()
            while not self.open and not ended.is_set():
                delay = self._reopen_at - self.clock()
                if delay > 0:
                    if ended.wait(delay):
                        return
                    continue
                if not self.main_only():
                    break
                if not self._asked:  # one request in the interpreter's queue at a time
                    self._asked = True
                    if not _ask_main_thread():
                        self._asked = False
                if ended.wait(self.period_s / 4):
                    return
            if ended.is_set():
                return

    def tick(self) -> None:
        """Turn the launch callbacks on again if the pause is over (from another call's entry callback)."""
        if self.clock() < self._reopen_at or not self._lock.acquire(blocking=False):
            return
        try:
            if not self.open and not self._stopped:
                self.count = 0
                self.on_reopen()
                self.switch(True)
                self.open = True
                self.windows += 1
        finally:
            self._lock.release()

    def reopen(self) -> None:
        """End the pause now: the next `tick` turns the callbacks on."""
        self._reopen_at = 0.0

    def stop(self) -> None:
        """Switch nothing from now on (waits for a switch under way on another thread); ends the timer."""
        with self._lock:
            self._stopped = True
        if _ARMED and _ARMED[0] is self:
            _ARMED.clear()
        self._ended.set()
        self._paused.set()
        timer = self._timer
        if timer is not None and timer is not threading.current_thread():
            timer.join(timeout=5)
