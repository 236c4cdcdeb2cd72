"""Child processes that end the idiomatic ways, for tests/profiler/sources/test_children_ends.py; each launch is
one line.

    pools.py pool METHOD TASKS N    `with Pool(2) as pool: pool.map(...)`: TASKS tasks of N launches each; the pool's
                                    __exit__ ends its workers with SIGTERM
    pools.py term METHOD N          a child launches N times and waits; the target ends it with terminate() (SIGTERM)
    pools.py kill METHOD N          a child launches N times, waits for its part to be written, launches N more and
                                    is killed with SIGKILL at once, before it can write them
    pools.py loader METHOD EPOCHS   a PyTorch DataLoader with persistent workers (2), 12 items, one launch each
    pools.py ownterm METHOD N       a child with a SIGTERM handler of its own (it records that it ran, then exits 3)

Every process prints nothing but the target's last line, `launched K` (what its children reported launching,
or the target's count of items), so a test compares the trace with what the program itself says it did.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time

import numpy as np

from offload_core import In, InOut, kernel, offload

LOADER: object = None
#: longer than a part's flush interval (0.2 s): by then what a child launched is in its part
SETTLE_S = 1.0


@kernel
def daxpy(y: InOut, x: In, a: float) -> None:
    y += a * x


def launch(n: int) -> int:
    x, y = np.ones(8), np.zeros(8)
    for _ in range(n):
        offload(daxpy, y, x, 1.0)  # the launch line
    return n


def wait_then(n: int, flag: str) -> None:
    launch(n)
    with open(flag, "w"):
        pass
    time.sleep(120)


def launch_settle_launch(n: int, flag: str) -> None:
    launch(n)
    time.sleep(SETTLE_S)
    launch(n)
    with open(flag, "w"):
        pass
    time.sleep(120)


def own_handler(n: int, flag: str, ran: str) -> None:
    def handler(signum: int, frame: object) -> None:
        with open(ran, "w") as fh:
            fh.write(f"handler {signum}")
        os._exit(3)

    signal.signal(signal.SIGTERM, handler)
    wait_then(n, flag)


def await_flag(flag: str) -> None:
    while not os.path.exists(flag):
        time.sleep(0.01)


def main(argv: list[str]) -> None:
    what, method = argv[0], argv[1]
    ctx = multiprocessing.get_context(method)
    flag = os.path.abspath("child.flag")
    for stale in (flag, os.path.abspath("handler.ran")):  # left by an earlier run in this folder
        if os.path.exists(stale):
            os.unlink(stale)
    if what == "pool":
        tasks, n = int(argv[2]), int(argv[3])
        with ctx.Pool(2) as pool:
            done = sum(pool.map(launch, [n] * tasks))
        print(f"launched {done}", flush=True)
    elif what == "term":
        p = ctx.Process(target=wait_then, args=(int(argv[2]), flag))
        p.start()
        await_flag(flag)
        p.terminate()
        p.join()
        print(f"launched {argv[2]} exit {p.exitcode}", flush=True)
    elif what == "kill":
        p = ctx.Process(target=launch_settle_launch, args=(int(argv[2]), flag))
        p.start()
        await_flag(flag)
        os.kill(p.pid, signal.SIGKILL)
        p.join()
        print(f"launched {2 * int(argv[2])} exit {p.exitcode}", flush=True)
    elif what == "ownterm":
        ran = os.path.abspath("handler.ran")
        p = ctx.Process(target=own_handler, args=(int(argv[2]), flag, ran))
        p.start()
        await_flag(flag)
        p.terminate()
        p.join()
        with open(ran) as fh:
            print(f"launched {argv[2]} exit {p.exitcode} {fh.read()}", flush=True)
    elif what == "loader":
        from loaders import launching_loader

        global LOADER
        items = 0
        LOADER = launching_loader(method)  # as a script's top-level loader: still alive, workers running, at the end
        for _ in range(int(argv[2])):
            items += sum(len(batch) for batch in LOADER)
        print(f"launched {items}", flush=True)

if __name__ == "__main__":
    main(sys.argv[1:])
