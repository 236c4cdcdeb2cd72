"""The four ways the suite runs a problem: hand-written baseline (launched, or graph-captured), offload batched, naive.

All four walk the same `Step`s with the same kernels; only the data
movement and the way launches are issued differ, which is the point of
the comparison:

* **baseline**: hand-written code with explicit copies done once. On the
  NumPy backend that is plain NumPy: the kernels' NumPy bodies called
  directly on the host arrays, no offload_core at all. On the CuPy backend
  it is hand-written CuPy (`cupy_baseline.py`): the same CUDA source
  through `cupy.RawKernel`, `cp.asarray` once before the reps and `.get()`
  once after, the analog of RAJAPerf's Base_CUDA variant.
* **baseline-graph**: the same hand-written CuPy, with its whole rep loop
  captured once by hand as a CUDA/HIP graph (CuPy's stream capture) and
  launched as one graph: the best a CuPy programmer can do about launch
  overhead, which is what the batched variant's `r.capture()` removes too.
  On the NumPy backend it does not apply: there is no device and no
  launch to capture (plain NumPy calls), so it is reported as not
  applicable rather than timed (`not_applicable`).
* **batched**: `offload()` launches inside one `region` that maps every
  array for the whole rep loop, by its ownership (In, Out or read-write).
* **naive**: the same code run with `set_mode("naive")`, so the region
  maps nothing and every launch copies its arguments in and its results
  back.

As in RAJAPerf, the timed part is the rep loop; the one-time copies of the
baseline and of the batched region (entry and exit) are outside it and
reported separately as part of the total. The naive variant's copies are
inside its launches, hence inside the loop: that is the cost it shows.

The `offload()` calls below are the call sites the profiler attributes the
suite's events to (`offload_core.events.callsite` does not skip this
package).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..annotations import Access, In, MapRequest, Out
from ..launch import offload
from ..region import region
from ..settings import get_mode
from .spec import Problem
from .timing import Clock

VARIANTS = ("baseline", "baseline-graph", "batched", "naive")

#: Why baseline-graph has no meaning where there is no GPU.
NO_DEVICE_GRAPH = ("not applicable on the {backend} backend: it captures the hand-written CuPy launches as a "
                   "CUDA/HIP graph, and the host baseline launches nothing (plain NumPy calls)")


def not_applicable(variant: str, backend: str) -> str | None:
    """Why `variant` cannot run on the backend named `backend`, or None when it can."""
    if variant == "baseline-graph" and backend != "cupy":
        return NO_DEVICE_GRAPH.format(backend=backend)
    return None


@dataclass(frozen=True)
class Pass:
    """One timed run of a problem."""

    loop_s: float
    total_s: float


def map_request(array: Any, access: Access) -> Any:
    """How a region maps an array the problem uses this way."""
    if access is Access.IN:
        return In(array)
    if access is Access.OUT:
        return Out(array)
    return array


def host_baseline(problem: Problem, reps: int, clock: Clock) -> Pass:
    """Plain NumPy on the host arrays: the kernels' NumPy bodies, no offload_core."""
    calls = [(step.kernel.cpu, step.bind(problem.arrays)) for step in problem.steps]
    t0 = time.perf_counter()
    clock.start()
    for _ in range(reps):
        for body, args in calls:
            body(*args)  # type: ignore[misc]
    loop = clock.stop()
    return Pass(loop, time.perf_counter() - t0)


#: reps recorded per captured graph: enough that a replay's host cost vanishes per rep
GRAPH_REPS = 64


def offload_variant(problem: Problem, reps: int, clock: Clock, graphs: bool = False) -> Pass:
    """offload() launches inside one region; the current mode decides batched or naive.

    With `graphs`, the batched variant records the rep loop with
    `r.capture()` (a CUDA/HIP graph of `GRAPH_REPS` reps, plus one for the
    remainder) before the clock starts, and the timed loop replays it: the
    launch sequence is issued once per graph instead of once per kernel,
    which is what pays where launch overhead dominates (short kernels). The
    recording, like compilation, is setup outside the timed loop; `total_s`
    includes it. In naive mode a capture replays through `offload()` with
    all its copies, so `graphs` changes nothing there.
    """
    requests: list[Any | MapRequest] = [map_request(problem.arrays[n], a) for n, a in problem.access.items()]
    calls = [(step.kernel, step.bind(problem.arrays)) for step in problem.steps]

    def launch_reps(count: int) -> None:
        for _ in range(count):
            for kernel, args in calls:
                offload(kernel, *args)

    t0 = time.perf_counter()
    with region(*requests, names=list(problem.access)) as r:
        if graphs and get_mode() == "batched":
            chunk = min(reps, GRAPH_REPS)
            whole, rest = divmod(reps, chunk)
            with r.capture() as graph:
                launch_reps(chunk)
            tail = None
            if rest:
                with r.capture() as tail:
                    launch_reps(rest)
            clock.start()
            graph.replay(whole)
            if tail is not None:
                tail.replay()
            loop = clock.stop()
        else:
            clock.start()
            launch_reps(reps)
            loop = clock.stop()
    return Pass(loop, time.perf_counter() - t0)


def run_once(problem: Problem, reps: int) -> None:
    """The offload variant without a clock: what `run_suite` traces."""
    requests = [map_request(problem.arrays[n], a) for n, a in problem.access.items()]
    calls = [(step.kernel, step.bind(problem.arrays)) for step in problem.steps]
    with region(*requests, names=list(problem.access)):
        for _ in range(reps):
            for kernel, args in calls:
                offload(kernel, *args)
