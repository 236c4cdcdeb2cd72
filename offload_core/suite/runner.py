"""Running the suite: warm-up, timed passes, checksums and the records the report is made of.

For each kernel and variant the runner does what RAJAPerf's executor does:
build the problem afresh (RAJAPerf's `setUp`, untimed), run the rep loop
between two synchronisations (timed), reduce the outputs to the checksum
(`updateChecksum`). A variant is first warmed up (kernels compiled, memory
pools filled) with runs of one and of two reps; those runs are also
observed through `offload_core.events`, and their difference gives the
exact copies a full run makes (a fixed part plus a part per rep), so the
report can say how many bytes each variant moved without observing, and
so slowing, the timed passes. The timed passes are then repeated and the
median is reported.

Every variant's checksum is compared with the reference variant's (the
baseline when it ran) against the kernel's tolerance; the suite never
reports a time without saying whether the result was right.
"""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Iterable, Sequence

import numpy as np

from .. import __version__, events
from ..annotations import Access
from ..backends.base import Backend
from ..settings import get_backend, get_mode, set_mode
from .checksum import TOLERANCES, relative_difference
from .registry import select
from .spec import Benchmark, Problem
from .timing import Clock, HostClock, host_peak_bandwidth, middle
from .variants import VARIANTS, Pass, host_baseline, not_applicable, offload_variant, run_once

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Transfers:
    """Host<->device copies and launches of one full run of a variant."""

    h2d: int = 0
    h2d_bytes: int = 0
    d2h: int = 0
    d2h_bytes: int = 0
    launches: int = 0


@dataclass(frozen=True)
class VariantResult:
    """One variant of one kernel: the timed passes and the checksum of the result."""

    variant: str
    times_s: tuple[float, ...]
    totals_s: tuple[float, ...]
    checksum: np.longdouble
    transfers: Transfers

    @property
    def time_s(self) -> float:
        return middle(self.times_s)

    @property
    def total_s(self) -> float:
        return middle(self.totals_s)


@dataclass(frozen=True)
class KernelResult:
    """All variants of one kernel, and whether their checksums agree."""

    name: str
    group: str
    size: int
    dims: dict[str, int]
    reps: int
    bytes_per_rep: int
    tolerance: str
    variants: dict[str, VariantResult]
    reference: str
    differences: dict[str, float]

    @property
    def tolerance_value(self) -> float:
        return TOLERANCES[self.tolerance]

    @property
    def checksums_agree(self) -> bool:
        return all(d <= self.tolerance_value for d in self.differences.values())

    def ratio(self, numerator: str, denominator: str) -> float | None:
        a, b = self.variants.get(numerator), self.variants.get(denominator)
        if a is None or b is None or b.time_s <= 0:
            return None
        return a.time_s / b.time_s

    def bandwidth(self, variant: str) -> float | None:
        """Achieved bytes per second of a variant's rep loop (RAJAPerf's byte count)."""
        v = self.variants.get(variant)
        if v is None or self.bytes_per_rep == 0 or v.time_s <= 0:
            return None
        return self.bytes_per_rep * self.reps / v.time_s


@dataclass(frozen=True)
class Environment:
    """Where the suite ran."""

    backend: str
    device: str
    peak_bytes_per_s: float
    versions: dict[str, str]
    date: str


@dataclass(frozen=True)
class SuiteResult:
    environment: Environment
    size_factor: float
    reps: int | None
    passes: int
    kernels: tuple[KernelResult, ...] = field(default=())
    #: whether the batched variant replayed its rep loop as a captured device graph
    graphs: bool = False
    #: variants asked for that cannot run on this backend, with the reason (reported, never timed)
    not_applicable: dict[str, str] = field(default_factory=dict)


def _on_gpu(be: Backend) -> bool:
    return be.name == "cupy"


def environment(be: Backend) -> Environment:
    """Device description, measured peak bandwidth and library versions."""
    versions = {"offload_core": __version__, "numpy": np.__version__, "python": platform.python_version()}
    if _on_gpu(be):
        from .cupy_baseline import device_peak_bandwidth
        from .cupy_baseline import versions as cupy_versions

        versions.update(cupy_versions())
        peak = device_peak_bandwidth()
    else:
        peak = host_peak_bandwidth()
    return Environment(be.name, be.device, peak, versions, datetime.now(timezone.utc).isoformat(timespec="seconds"))


class _Tally:
    def __init__(self) -> None:
        self.t = [0, 0, 0, 0, 0]

    def __call__(self, e: events.Event) -> None:
        if e.kind == "h2d":
            self.t[0] += 1
            self.t[1] += e.nbytes
        elif e.kind == "d2h":
            self.t[2] += 1
            self.t[3] += e.nbytes
        elif e.kind == "launch":
            self.t[4] += 1


def _observed(bench: Benchmark, size_factor: float, reps: int) -> list[int]:
    tally = _Tally()
    unsubscribe = events.subscribe(tally)
    try:
        run_once(bench.problem(size_factor), reps)
    finally:
        unsubscribe()
    return tally.t


def _baseline_transfers(problem: Problem, reps: int, gpu: bool) -> Transfers:
    launches = len(problem.steps) * reps
    if not gpu:
        return Transfers(launches=launches)
    up = [a for n, a in problem.arrays.items() if problem.access[n] is not Access.OUT]
    down = [a for n, a in problem.arrays.items() if problem.access[n] is not Access.IN]
    return Transfers(len(up), sum(a.nbytes for a in up), len(down), sum(a.nbytes for a in down), launches)


class Runner:
    """Runs benchmarks on the active backend and collects `KernelResult`s."""

    def __init__(self, passes: int = 3, progress: Progress | None = None, graphs: bool | None = None) -> None:
        if passes < 1:
            raise ValueError("passes must be at least 1")
        self.passes = passes
        self.progress = progress or (lambda line: None)
        self.backend = get_backend()
        self.gpu = _on_gpu(self.backend)
        #: capture the batched rep loop as a device graph (default: on a GPU)
        self.graphs = self.gpu if graphs is None else graphs

    def not_applicable(self, variant: str) -> str | None:
        """Why `variant` cannot run on this runner's backend, or None."""
        return not_applicable(variant, self.backend.name)

    def _clock(self, variant: str) -> Clock:
        if self.gpu:
            from .cupy_baseline import DeviceClock

            hand_written = variant in ("baseline", "baseline-graph")
            return DeviceClock(None if hand_written else getattr(self.backend, "stream", None))
        return HostClock(self.backend.synchronize)

    def _run(self, variant: str, problem: Problem, reps: int) -> Pass:
        clock = self._clock(variant)
        if variant == "baseline":
            if self.gpu:
                from .cupy_baseline import cupy_baseline

                return cupy_baseline(problem, reps, clock)
            return host_baseline(problem, reps, clock)
        if variant == "baseline-graph":
            from .cupy_baseline import cupy_baseline_graph

            return cupy_baseline_graph(problem, reps, clock)
        return offload_variant(problem, reps, clock, graphs=self.graphs)

    def _variant(self, bench: Benchmark, variant: str, size_factor: float, reps: int) -> VariantResult:
        if variant in ("baseline", "baseline-graph"):
            self._run(variant, bench.problem(size_factor), 1)  # warm-up
            transfers = _baseline_transfers(bench.problem(size_factor), reps, self.gpu)
        else:
            one = _observed(bench, size_factor, 1)
            two = _observed(bench, size_factor, 2)
            transfers = Transfers(*(a + (b - a) * (reps - 1) for a, b in zip(one, two)))
        times, totals = [], []
        checksum = np.longdouble(0.0)
        for i in range(self.passes):
            problem = bench.problem(size_factor)
            result = self._run(variant, problem, reps)
            times.append(result.loop_s)
            totals.append(result.total_s)
            checksum = problem.checksum(problem.arrays)
            self.progress(f"{bench.name} {variant}: pass {i + 1}/{self.passes} {result.loop_s * 1e3:.3f} ms")
        return VariantResult(variant, tuple(times), tuple(totals), checksum, transfers)

    def kernel(self, bench: Benchmark, variants: Sequence[str], size_factor: float, reps: int | None) -> KernelResult:
        """All requested variants of one benchmark that apply on this backend (see `not_applicable`)."""
        unknown = [v for v in variants if v not in VARIANTS]
        if unknown:
            raise ValueError(f"unknown variant {unknown[0]!r}; choose from {', '.join(VARIANTS)}")
        runnable = [v for v in VARIANTS if v in variants and self.not_applicable(v) is None]
        if not runnable:
            reasons = "; ".join(f"{v}: {self.not_applicable(v)}" for v in variants)
            raise ValueError(f"nothing to run ({reasons})")
        run_reps = bench.default_reps if reps is None else reps
        previous = get_mode()
        results: dict[str, VariantResult] = {}
        try:
            for variant in runnable:
                set_mode("naive" if variant == "naive" else "batched")
                results[variant] = self._variant(bench, variant, size_factor, run_reps)
        finally:
            set_mode(previous)
        reference = next(iter(results))
        ref = results[reference].checksum
        differences = {v: relative_difference(r.checksum, ref) for v, r in results.items() if v != reference}
        problem = bench.problem(size_factor)
        return KernelResult(bench.name, bench.group, problem.size, dict(problem.dims), run_reps,
                            problem.bytes_per_rep, bench.tolerance, results, reference, differences)


def measure(benchmarks: Iterable[Benchmark], variants: Sequence[str] = VARIANTS, size_factor: float = 1.0,
            reps: int | None = None, passes: int = 3, progress: Progress | None = None,
            graphs: bool | None = None) -> SuiteResult:
    """Time every benchmark in every variant on the active backend.

    A variant that cannot run on the backend (baseline-graph without a GPU)
    is not timed; the result names it with the reason, so the report can
    say so instead of leaving a blank.
    """
    runner = Runner(passes, progress, graphs)
    skipped = {v: r for v in VARIANTS if v in variants and (r := runner.not_applicable(v)) is not None}
    if skipped and all(v in skipped for v in variants):
        raise ValueError(f"nothing to run ({'; '.join(f'{v}: {r}' for v, r in skipped.items())})")
    env = environment(runner.backend)
    results = tuple(runner.kernel(b, variants, size_factor, reps) for b in benchmarks)
    return SuiteResult(env, size_factor, reps, passes, results, runner.graphs, skipped)


@dataclass(frozen=True)
class SuiteRun:
    """What `run_suite` did for one kernel."""

    kernel: str
    size: int
    reps: int
    launches: int
    checksum: np.longdouble


def run_suite(kernels: Iterable[str] | None = None, size_factor: float = 1.0, mode: str | None = None,
              reps: int = 10) -> list[SuiteRun]:
    """Run the offload variant of the chosen kernels once each, untimed, for a trace.

    `kernels` are names or groups (default: all), `mode` is "batched",
    "naive" or None for the current mode (restored afterwards), `reps` the
    reps per kernel (small by default: enough for the naive path's
    per-launch copies to show, short enough to trace). Every launch goes
    through `offload()`, so a subscriber to `offload_core.events` (the
    profiler) sees each copy and launch, attributed to this package's
    driver lines.
    """
    if not (isinstance(size_factor, (int, float)) and size_factor > 0):
        raise ValueError(f"size_factor must be a positive number, got {size_factor!r}")
    if not (isinstance(reps, int) and reps >= 1):
        raise ValueError(f"reps must be a positive integer, got {reps!r}")
    chosen = select(list(kernels) if kernels is not None else None)
    previous = get_mode()
    runs = []
    try:
        if mode is not None:
            set_mode(mode)
        for bench in chosen:
            problem = bench.problem(size_factor)
            run_once(problem, reps)
            runs.append(SuiteRun(bench.name, problem.size, reps, reps * len(problem.steps),
                                 problem.checksum(problem.arrays)))
    finally:
        set_mode(previous)
    return runs


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command as a user would type it again (`python -m offload_core.suite` for the module form)."""
    args = list(sys.argv if argv is None else argv)
    head = args[0].replace("\\", "/").rsplit("/", 1)[-1] if args else "offload-bench"
    if head == "__main__.py":
        head = "python -m offload_core.suite"
    return " ".join([head, *args[1:]])
