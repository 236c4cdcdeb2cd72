"""Getting a recording child's SIGTERM handler to run: the profiler's threads never take the signal, and a watch wakes
a main thread that blocked just as the signal came.

Python runs a signal handler on the main thread, at its next bytecode.
A signal that arrives just before the main thread enters a blocking call
that is not retried through Python's signal check is left for ever: a
pool worker about to wait on its task queue's lock, which the parent
ending the pool holds and never releases, then never runs its handler
and never dies (`with Pool(...)` hangs in `join`). Unprofiled, SIGTERM's
default action kills it whatever it is doing; a child whose records must
be written first (`profiler.sources.children`) needs its handler to run.

Two things make sure it does. The profiler's own threads (the part's
flusher, the watch below) block SIGTERM, SIGINT and SIGHUP
(`block_signals`), so the kernel delivers them to a thread that acts on
them. And `Watch` registers a pipe as Python's wakeup fd
(`signal.set_wakeup_fd`, to which Python's C-level handler writes each
caught signal's number): when SIGTERM shows there and the handler has
not started within a moment, the watch sends SIGTERM to the main thread
itself (`pthread_kill`), which interrupts its blocking call so that
Python runs the handler. A program that has a wakeup fd of its own (an
asyncio loop, which wakes itself) keeps it, and gets no watch.
"""

from __future__ import annotations

import os
import select
import signal
import threading
from typing import Callable

#: what the profiler's threads never receive, so that the kernel delivers them to a thread that acts on them
BLOCKED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP) if hasattr(signal, "pthread_sigmask") else ()
#: how long the watch lets the main thread start the handler on its own before waking it, and how often it retries
GRACE_S = 0.05
#: tries before the watch gives up (a main thread in a long computation runs the handler when it is done)
TRIES = 100


def block_signals() -> None:
    """Keep SIGTERM, SIGINT and SIGHUP away from the calling thread (one of the profiler's own)."""
    if BLOCKED:
        try:
            signal.pthread_sigmask(signal.SIG_BLOCK, BLOCKED)
        except (OSError, ValueError):
            pass


class Watch:
    """Wakes the main thread when a SIGTERM was caught and its handler has not started.

    `handled()` says (once) whether the handler started since it was last asked, or no longer is the handler.
    """

    def __init__(self, read_fd: int, write_fd: int, handled: Callable[[], bool]) -> None:
        self.read_fd, self.write_fd = read_fd, write_fd
        self.handled = handled
        self.main = threading.main_thread().ident
        self.thread = threading.Thread(target=self._run, name="offload-prof-sigterm", daemon=True)

    @classmethod
    def start(cls, handled: Callable[[], bool]) -> Watch | None:
        """A running watch, from the main thread; None where the program has a wakeup fd of its own (or none can be made)."""
        if not hasattr(signal, "pthread_kill") or not hasattr(os, "pipe2"):
            return None
        read_fd, write_fd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            previous = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
        except (ValueError, OSError):
            previous = None
        if previous != -1:  # the program's own (or no wakeup fd at all here): leave it as it was
            if previous is not None:
                signal.set_wakeup_fd(previous)
            os.close(read_fd)
            os.close(write_fd)
            return None
        watch = cls(read_fd, write_fd, handled)
        watch.thread.start()
        return watch

    def forget(self) -> None:
        """In a fork's child (main thread): the parent's pipe is not this process's wakeup fd; no thread reads it here."""
        try:
            signal.set_wakeup_fd(-1)
        except (ValueError, OSError):
            pass
        for fd in (self.read_fd, self.write_fd):
            try:
                os.close(fd)
            except OSError:
                pass

    def _run(self) -> None:
        block_signals()
        term = bytes([signal.SIGTERM])
        while True:
            try:
                select.select([self.read_fd], [], [])
                data = os.read(self.read_fd, 512)
            except BlockingIOError:
                continue
            except (OSError, ValueError):  # the pipe was closed: nothing to watch any more
                return
            if term not in data:
                continue
            for _ in range(TRIES):
                threading.Event().wait(GRACE_S)
                if self.handled():
                    break
                try:
                    signal.pthread_kill(self.main, signal.SIGTERM)  # type: ignore[arg-type]
                except (OSError, ValueError):
                    return
            self._drain()

    def _drain(self) -> None:
        """Drop the bytes the retries wrote, so that the next SIGTERM is a new one."""
        try:
            while os.read(self.read_fd, 512):
                pass
        except OSError:
            pass
