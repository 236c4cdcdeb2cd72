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

Memsets are not sampled: switching their callbacks on and off with the
launches' made three of four `.item()` calls of an LSTM loop lose their
site and sync (on the H200 with CUDA 13 and cupti-python 13.0.1; see
docs/cupti.md for a rarer loss under launch sampling alone). They are heard
in the driver only instead (`apis`), which halves their callbacks and
skips the runtime's empty memsets.

Copies and syncs keep their callbacks always too: the rules need their
sites, host pointers and fingerprints, and there are few of them.

The callbacks are switched from this module's own thread only, so calls
to `cuptiEnableCallback` never run concurrently (CUPTI asks callers to
serialise them) and never from inside a callback.
"""

from __future__ import annotations

import random
import threading
from typing import Callable, Literal

#: the launch sites a recording takes: a sample of them (default), all of them (`--every-launch`), none
LaunchSites = Literal["sampled", "all", "none"]
PER_WINDOW = 32
PERIOD_S = 0.1


class LaunchSampler:
    """Turns the launch callbacks off after `per_window` launches and on again about `period_s` later."""

    def __init__(self, switch: Callable[[bool], None], *, per_window: int = PER_WINDOW, period_s: float = PERIOD_S,
                 on_reopen: Callable[[], None] = lambda: None) -> None:
        self.switch = switch
        self.per_window = per_window
        self.period_s = period_s
        self.on_reopen = on_reopen
        self.count = 0
        #: launch callbacks heard in all windows (`count` is this window's)
        self.heard = 0
        self.windows = 1  # the callbacks are on when the recording starts
        #: set while the callbacks are off
        self.closed = threading.Event()
        self._full = threading.Event()
        self._wake = threading.Event()
        self._stopping = False
        self._random = random.Random(0x5EED)
        self._thread = threading.Thread(target=self._run, name="offload-prof-launch-sites", daemon=True)

    def start(self) -> LaunchSampler:
        self._thread.start()
        return self

    def seen(self) -> None:
        """A launch callback ran (called from the callback: must stay cheap)."""
        self.count += 1
        self.heard += 1
        if self.count == self.per_window:
            self._full.set()

    def reopen(self) -> None:
        """Turn the callbacks on again now, rather than at the end of the pause."""
        self._wake.set()

    def stop(self) -> None:
        self._stopping = True
        self._full.set()
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            self._full.wait()
            if self._stopping:
                return
            self.switch(False)
            self.closed.set()
            self._wake.wait(self.period_s * self._random.uniform(0.5, 1.5))
            self._wake.clear()
            if self._stopping:
                return
            self._full.clear()
            self.count = 0
            self.on_reopen()
            self.switch(True)
            self.windows += 1
            self.closed.clear()
