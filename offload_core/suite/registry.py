"""Every benchmark of the suite, in RAJAPerf's group order, and name lookup for the CLI.

Names are matched case-insensitively; a group name (Stream, Basic, Apps,
Polybench) selects its whole group, and `all` everything, so
`--kernels stream DAXPY` reads as it would in RAJAPerf's `--kernels`.
"""

from __future__ import annotations

from typing import Iterable

from . import apps, basic, polybench_linalg, polybench_stencils, stream
from .spec import Benchmark

BENCHMARKS: tuple[Benchmark, ...] = (
    stream.BENCHMARKS + basic.BENCHMARKS + apps.BENCHMARKS + polybench_stencils.BENCHMARKS + polybench_linalg.BENCHMARKS
)
BY_NAME: dict[str, Benchmark] = {b.name: b for b in BENCHMARKS}
GROUPS: tuple[str, ...] = tuple(dict.fromkeys(b.group for b in BENCHMARKS))
NAMES: tuple[str, ...] = tuple(BY_NAME)


class UnknownKernel(ValueError):
    """A kernel or group name the suite does not have; the message lists the choices."""


def select(names: Iterable[str] | None) -> list[Benchmark]:
    """The benchmarks `names` ask for, in suite order, each once; all when `names` is None or empty."""
    wanted = [n for n in (names or []) if n.strip()]
    if not wanted:
        return list(BENCHMARKS)
    chosen: set[str] = set()
    groups = {g.lower(): g for g in GROUPS}
    upper = {n.upper(): n for n in NAMES}
    for raw in wanted:
        key = raw.strip()
        if key.lower() == "all":
            chosen.update(NAMES)
        elif key.lower() in groups:
            chosen.update(b.name for b in BENCHMARKS if b.group == groups[key.lower()])
        elif key.upper() in upper:
            chosen.add(upper[key.upper()])
        else:
            raise UnknownKernel(
                f"unknown kernel {raw!r}; choose from {', '.join(NAMES)} or a group ({', '.join(GROUPS)}, all)"
            )
    return [b for b in BENCHMARKS if b.name in chosen]
