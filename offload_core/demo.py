"""`python -m offload_core.demo`: the same program on the naive and the batched path.

A 1-D heat-diffusion loop (two stencil launches per time step, ping-ponging
between two arrays inside one `region`) runs once with `set_mode("naive")`
and once batched, on the active backend. A subscriber to
`offload_core.events` tallies every copy, launch and sync, and the two
tallies are printed side by side. The results of the two runs are compared
too: the batched path must compute exactly what the naive one does.

Exit codes: 0 when both paths agree, 1 when they do not, 2 for bad input
(arguments, an `OFFLOAD_BACKEND` or `OFFLOAD_MODE` that is not one, a
backend that cannot run here such as CuPy without CuPy or a GPU, a size
that does not fit in memory), always as one line on stderr; 130 when
interrupted.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from . import events
from .annotations import In, Out
from .backends import Backend
from .errors import BackendError, DeviceMemoryError
from .kernels import kernel
from .launch import offload
from .region import region
from .settings import get_backend, get_mode, set_backend, set_mode


@kernel
def smooth(dst: Out[np.float64], src: In[np.float64]) -> None:
    """One Jacobi step of the heat equation with fixed ends."""
    dst[0] = src[0]
    dst[-1] = src[-1]
    dst[1:-1] = (src[:-2] + src[1:-1] + src[2:]) * (1.0 / 3.0)


def heat(u: np.ndarray, steps: int) -> None:
    """Diffuse `u` in place for `steps` double steps; the loop every mode runs."""
    scratch = np.empty_like(u)
    with region(u, Out(scratch)):
        for _ in range(steps):
            offload(smooth, scratch, u)
            offload(smooth, u, scratch)


@dataclass
class Tally:
    """Counts, bytes and nanoseconds per event kind, from the event stream."""

    counts: dict[str, int] = field(default_factory=dict)
    nbytes: dict[str, int] = field(default_factory=dict)
    ns: dict[str, int] = field(default_factory=dict)
    wall_ns: int = 0

    def __call__(self, event: events.Event) -> None:
        self.counts[event.kind] = self.counts.get(event.kind, 0) + 1
        self.nbytes[event.kind] = self.nbytes.get(event.kind, 0) + event.nbytes
        self.ns[event.kind] = self.ns.get(event.kind, 0) + event.duration_ns

    def copy_ns(self) -> int:
        return self.ns.get("h2d", 0) + self.ns.get("d2h", 0)


def run(mode: str, u0: np.ndarray, steps: int) -> tuple[Tally, np.ndarray]:
    """Run the heat loop in one mode and tally what it did."""
    set_mode(mode)
    u = u0.copy()
    tally = Tally()
    unsubscribe = events.subscribe(tally)
    start = time.perf_counter_ns()
    try:
        heat(u, steps)
    finally:
        unsubscribe()
        tally.wall_ns = time.perf_counter_ns() - start
    return tally, u


def _bytes(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.1f} ms"


def table(naive: Tally, batched: Tally) -> str:
    """The side-by-side comparison, as text."""
    rows = [
        ("launches", str(naive.counts.get("launch", 0)), str(batched.counts.get("launch", 0))),
        ("H2D copies", str(naive.counts.get("h2d", 0)), str(batched.counts.get("h2d", 0))),
        ("H2D bytes", _bytes(naive.nbytes.get("h2d", 0)), _bytes(batched.nbytes.get("h2d", 0))),
        ("D2H copies", str(naive.counts.get("d2h", 0)), str(batched.counts.get("d2h", 0))),
        ("D2H bytes", _bytes(naive.nbytes.get("d2h", 0)), _bytes(batched.nbytes.get("d2h", 0))),
        ("allocations", str(naive.counts.get("alloc", 0)), str(batched.counts.get("alloc", 0))),
        ("syncs", str(naive.counts.get("sync", 0)), str(batched.counts.get("sync", 0))),
        ("copy time", _ms(naive.copy_ns()), _ms(batched.copy_ns())),
        ("kernel time", _ms(naive.ns.get("launch", 0)), _ms(batched.ns.get("launch", 0))),
        ("wall time", _ms(naive.wall_ns), _ms(batched.wall_ns)),
    ]
    width = max(len(r[0]) for r in rows)
    lines = [f"{'':<{width}}  {'naive':>12}  {'batched':>12}"]
    lines += [f"{name:<{width}}  {a:>12}  {b:>12}" for name, a, b in rows]
    speedup = naive.wall_ns / max(batched.wall_ns, 1)
    share = 100.0 * naive.copy_ns() / max(naive.wall_ns, 1)
    lines.append("")
    lines.append(f"batched is {speedup:.1f}x faster; {share:.0f}% of the naive run was copies")
    return "\n".join(lines)


PROG = "python -m offload_core.demo"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Run a heat-diffusion loop on the naive and on the batched path and compare their copies.",
    )
    parser.add_argument("--size", type=int, default=1 << 20, help="grid points (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=50, help="double time steps (default: %(default)s)")
    parser.add_argument("--backend", choices=("auto", "numpy", "cupy"), help="backend (default: OFFLOAD_BACKEND or auto)")
    args = parser.parse_args(argv)
    if args.size < 3 or args.steps < 1:
        parser.error("--size must be at least 3 and --steps at least 1")
    try:
        if args.backend:
            set_backend(args.backend)
        backend = get_backend()
        get_mode()  # a bad OFFLOAD_MODE is bad input too, said before anything runs
    except (BackendError, ValueError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    try:
        return _compare(args.size, args.steps, backend)
    except BackendError as exc:  # the backend failed at its first use (a GPU that cannot run the kernel)
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except (DeviceMemoryError, MemoryError) as exc:
        print(f"{PROG}: error: --size {args.size} does not fit in memory ({exc or 'out of memory'}); try a smaller one",
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


def _compare(size: int, steps: int, backend: Backend) -> int:
    previous = get_mode()
    u0 = np.zeros(size)
    u0[size // 2] = 1.0e6
    mib = u0.nbytes / 2**20
    print(f"heat diffusion: {size} points ({mib:.1f} MiB per array), {2 * steps} launches, "
          f"backend {backend.name} ({backend.device})", file=sys.stderr)
    try:
        print("running the naive path ...", file=sys.stderr)
        naive, u_naive = run("naive", u0, steps)
        print("running the batched path ...", file=sys.stderr)
        batched, u_batched = run("batched", u0, steps)
    finally:
        set_mode(previous)
    print(table(naive, batched))
    if not np.array_equal(u_naive, u_batched):
        print("error: the naive and batched results differ", file=sys.stderr)
        return 1
    print("both paths computed identical results")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
