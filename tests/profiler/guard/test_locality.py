"""Scopes are per thread and per asyncio task: another thread's or task's copies are never blamed on them."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from offload_core import offload
from profiler import guard
from profiler.guard import TransferGuardError

from .kit import arrays, daxpy, line_of

HERE = __file__


def test_another_threads_copies_are_not_blamed_on_the_guarded_one() -> None:
    inside, done = threading.Event(), threading.Event()
    found: list[int] = []

    def guarded() -> None:
        with guard.no_transfers(mode="log") as g:
            inside.set()
            done.wait(10)
        found.append(len(g.violations))

    def unguarded() -> None:
        inside.wait(10)
        y, x = arrays()
        for _ in range(5):
            offload(daxpy, y, x, 1.0)
        done.set()

    threads = [threading.Thread(target=guarded), threading.Thread(target=unguarded)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert found == [0]


def test_a_thread_raises_at_its_own_line_while_others_copy_freely() -> None:
    errors: list[BaseException] = []
    copied: list[int] = []

    def worker(guarded: bool) -> None:
        y, x = arrays()
        try:
            if guarded:
                with guard.no_transfers():
                    offload(daxpy, y, x, 1.0)  # marker: guarded thread
            else:
                for _ in range(20):
                    offload(daxpy, y, x, 1.0)
                copied.append(int(y[0]))
        except TransferGuardError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i == 0,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert copied == [20, 20, 20]
    (error,) = errors
    assert error.violations[0].site.line == line_of(HERE, "# marker: guarded thread")


def test_a_thread_started_inside_a_scope_is_not_guarded_unless_given_the_context() -> None:
    y, x = arrays()
    with guard.no_transfers(mode="log") as g:
        t = threading.Thread(target=offload, args=(daxpy, y, x, 1.0))
        t.start()
        t.join(10)
        assert g.violations == [], "a new thread starts with an empty context"
        with ThreadPoolExecutor(1) as pool:
            pool.submit(contextvars.copy_context().run, offload, daxpy, y, x, 1.0).result()
    assert [v.kind for v in g.violations] == ["h2d", "h2d", "d2h"], "run in a copy of the context: guarded"


def test_asyncio_tasks_each_have_their_own_scope() -> None:
    async def guarded_task() -> list[str]:
        y, x = arrays()
        with guard.no_transfers(mode="log") as g:
            for _ in range(3):
                await asyncio.sleep(0)  # the free task copies in between
            offload(daxpy, y, x, 1.0)  # marker: in the guarded task
        return [f"{v.kind}@{v.site.line}" for v in g.violations]

    async def free_task() -> int:
        y, x = arrays()
        for _ in range(3):
            offload(daxpy, y, x, 1.0)
            await asyncio.sleep(0)
        return int(y[0])

    async def main() -> tuple[list[str], int]:
        return await asyncio.gather(guarded_task(), free_task())  # type: ignore[return-value]

    seen, free = asyncio.run(main())
    line = line_of(HERE, "# marker: in the guarded task")
    assert free == 3
    assert seen == [f"h2d@{line}", f"h2d@{line}", f"d2h@{line}"]


def test_a_decorated_coroutine_is_guarded_for_its_whole_run() -> None:
    y, x = arrays()

    @guard.no_transfers()
    async def step() -> None:
        await asyncio.sleep(0)
        offload(daxpy, y, x, 1.0)  # marker: after an await

    async def free() -> None:
        for _ in range(3):
            offload(daxpy, y, x, 1.0)
            await asyncio.sleep(0)

    async def main() -> list[object]:
        return await asyncio.gather(step(), free(), return_exceptions=True)

    result = asyncio.run(main())
    assert isinstance(result[0], TransferGuardError) and result[1] is None
    assert result[0].violations[0].site.line == line_of(HERE, "# marker: after an await")
    assert np.all(y == 4.0)


def test_a_task_created_inside_a_scope_inherits_it() -> None:
    async def main() -> None:
        y, x = arrays()
        with guard.no_transfers():
            task = asyncio.ensure_future(asyncio.sleep(0))
            await task

            async def child() -> None:
                offload(daxpy, y, x, 1.0)

            with pytest.raises(TransferGuardError):
                await asyncio.create_task(child())

    asyncio.run(main())
