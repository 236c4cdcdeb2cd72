"""A target that starts child processes, for tests/profiler/sources/test_children.py; every process launches a few kernels.

    family.py mp METHOD         the target launches once, a multiprocessing child (METHOD) twice, the target once more
    family.py subprocess        a Python child through subprocess (3 launches), one run with -I, one with an
                                environment of its own, one that never imports offload_core
    family.py child N           N launches (the subprocess child)
    family.py hard METHOD       a child that calls os._exit(5) after 2 launches, a child killed with SIGKILL after
                                4, then the target launches once and calls os._exit(7)
    family.py empty             nothing at all
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time

import numpy as np

from offload_core import In, InOut, kernel, offload

#: long enough for a child's events to have been appended to its part (every 0.2 s) before it is killed
SETTLE_S = 1.5


@kernel
def daxpy(y: InOut, x: In, a: float) -> None:
    y += a * x


def launch(n: int) -> None:
    x, y = np.ones(8), np.zeros(8)
    for _ in range(n):
        offload(daxpy, y, x, 1.0)  # the launch line


def hard_exit(n: int, code: int) -> None:
    launch(n)
    os._exit(code)


def victim(n: int, flag: str) -> None:
    launch(n)
    time.sleep(SETTLE_S)
    with open(flag, "w"):
        pass
    time.sleep(120)


def main(argv: list[str]) -> None:
    what = argv[0]
    if what == "mp":
        launch(1)
        p = multiprocessing.get_context(argv[1]).Process(target=launch, args=(2,))
        p.start()
        p.join()
        launch(1)
        print(f"child exit {p.exitcode}", flush=True)
    elif what == "subprocess":
        launch(1)
        here = os.path.abspath(__file__)
        subprocess.run([sys.executable, here, "child", "3"], check=True)
        subprocess.run([sys.executable, "-I", "-c", "pass"], check=True)
        subprocess.run([sys.executable, "-c", "pass"], env={"PATH": os.environ.get("PATH", "")}, check=True)
        subprocess.run([sys.executable, "-c", "import numpy"], check=True)
    elif what == "child":
        launch(int(argv[1]))
    elif what == "hard":
        ctx = multiprocessing.get_context(argv[1])
        launch(1)
        p = ctx.Process(target=hard_exit, args=(2, 5))
        p.start()
        p.join()
        flag = os.path.abspath("killed.flag")
        k = ctx.Process(target=victim, args=(4, flag))
        k.start()
        while not os.path.exists(flag):
            time.sleep(0.01)
        os.kill(k.pid, signal.SIGKILL)
        k.join()
        print(f"exits {p.exitcode} {k.exitcode}", flush=True)
        launch(1)
        os._exit(7)


if __name__ == "__main__":
    main(sys.argv[1:])
