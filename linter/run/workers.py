"""Lint worker processes that never outlive the command that started them.

A process pool's workers wait on a pipe whose write end they inherited
themselves, so a parent killed with SIGKILL (no cleanup runs) leaves them
waiting for good. On Linux the kernel can deliver a signal to a process
when its parent dies (`prctl(PR_SET_PDEATHSIG)`); elsewhere a daemon thread
polls the parent's pid. Either way the parent's pid is checked once more
after arming, for a parent that died before the worker got that far.

Ctrl-C reaches the whole process group: the parent turns it into one line
and exit 130, so the workers ignore SIGINT instead of printing tracebacks,
and go when the parent does.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1


class WorkerDied(RuntimeError):
    """A worker process ended abruptly (killed, or out of memory); the message is one line."""
#: seconds between two looks at the parent, where the kernel cannot watch it for us
POLL_S = 0.5


def die_with_parent(parent: int) -> None:
    """Arrange for this process to end when process `parent` ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not (sys.platform.startswith("linux") and _arm_pdeathsig()):
        threading.Thread(target=_watch, args=(parent,), name="offload-lint-parent-watch", daemon=True).start()
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


def _arm_pdeathsig() -> bool:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return int(libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(POLL_S)
    os._exit(1)
