"""A runtime that copies from a thread of its own, as JAX's does: the call returns before the copy is made.

`put()` queues an upload and returns; the runtime's thread makes the CUDA
copy (through `FakeCuda`) once the program has moved on into `wait()`, the
call that needs the result (so that where the program is then is certain). The thread runs only code of
this folder and `threading`, so the tracer's frame filter finds no user
frame on it and lends it the main thread's, as it does for JAX's threads.
"""

from __future__ import annotations

import queue
import threading

from .fakecupti import FakeCuda


class CopyingRuntime:
    """Uploads made by a worker thread, in the order they were asked for."""

    def __init__(self, cuda: FakeCuda) -> None:
        self.cuda = cuda
        self.jobs: queue.Queue[tuple[int, int, int] | None] = queue.Queue()
        self.go = threading.Semaphore(0)
        self.done = threading.Semaphore(0)
        self.thread = threading.Thread(target=self._work, daemon=True)
        self.thread.start()

    def put(self, dst: int, src: int, count: int) -> None:
        """Ask for an upload and return at once (`jax.device_put`)."""
        self.jobs.put((dst, src, count))

    def wait(self) -> None:
        """Let the runtime make the oldest upload asked for, and block until it has (`float(f(d))`)."""
        self.go.release()
        self.done.acquire()

    def close(self) -> None:
        self.jobs.put(None)
        self.thread.join()

    def _work(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            dst, src, count = job
            self.go.acquire()
            self.cuda.memcpy(dst, src, count, self.cuda.H2D, asynchronous=True, src_kind=2)
            self.done.release()
