"""The suite's data model: a benchmark, the problem it builds, and the launches of one rep.

A benchmark is pure description, so that every variant runs exactly the
same thing:

* `Benchmark` holds RAJAPerf's defaults for one kernel (problem size, reps,
  checksum tolerance) and a `build` function that turns a target size into
  a `Problem`, the way RAJAPerf's `setSize` and `setUp` do.
* `Problem` holds the host arrays, initialised in RAJAPerf's order, how a
  region maps each of them, the `Step`s of one rep, the RAJAPerf byte count
  of one rep (for bandwidth) and the function that reduces the result to
  RAJAPerf's checksum.
* `Step` is one launch: an offload_core `RawKernel` (CUDA/HIP source, the
  ownership of each parameter, launch dimensions and a NumPy fallback) and
  its arguments, arrays by name.

The hand-written baseline, the batched and the naive variant all walk the
same `Step`s; they differ only in who moves the data (see `variants.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ..annotations import Access
from ..kernels import RawKernel

#: RAJAPerf's default GPU block size, used by every 1-D kernel here.
BLOCK = 256

Arg = str | np.generic


@dataclass(frozen=True)
class Step:
    """One launch of one rep: a kernel and its arguments (arrays by name, scalars exact-typed)."""

    kernel: RawKernel
    args: tuple[Arg, ...]

    def __post_init__(self) -> None:
        if len(self.args) != len(self.kernel.params):
            raise TypeError(f"step {self.kernel.name}: {len(self.args)} arguments for {len(self.kernel.params)} parameters")
        for p, a in zip(self.kernel.params, self.args):
            if p.is_array != isinstance(a, str):
                raise TypeError(f"step {self.kernel.name}: parameter '{p.name}' got {a!r}")

    def bind(self, arrays: Mapping[str, Any]) -> tuple[Any, ...]:
        """The launch arguments with array names replaced by `arrays[name]`."""
        return tuple(arrays[a] if isinstance(a, str) else a for a in self.args)


@dataclass(frozen=True)
class Problem:
    """One kernel at one size, with freshly initialised host data."""

    size: int
    arrays: dict[str, np.ndarray]
    access: dict[str, Access]
    steps: tuple[Step, ...]
    bytes_per_rep: int
    checksum: Callable[[Mapping[str, np.ndarray]], np.longdouble]
    dims: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        missing = {a for s in self.steps for a in s.args if isinstance(a, str)} - set(self.arrays)
        if missing or set(self.access) != set(self.arrays):
            raise ValueError(f"problem arrays and steps disagree: {sorted(missing)}")


@dataclass(frozen=True)
class Benchmark:
    """One RAJAPerf kernel: its defaults and how to build its problem."""

    name: str
    group: str
    default_size: int
    default_reps: int
    tolerance: str
    build: Callable[[int], Problem]
    sources: tuple[str, ...]
    summary: str

    def target_size(self, size_factor: float) -> int:
        """RAJAPerf's target problem size for `--sizefact`: the default times the factor, truncated."""
        return max(1, int(self.default_size * size_factor))

    def problem(self, size_factor: float = 1.0) -> Problem:
        return self.build(self.target_size(size_factor))


def blocks(n: int, block: int = BLOCK) -> int:
    """Blocks of `block` threads covering `n` items (at least one)."""
    return max(1, -(-int(n) // block))


def grid_1d(n_param: str) -> Callable[..., tuple[int]]:
    """A `grid=` callable: enough 256-thread blocks for the kernel's `n_param` scalar."""

    def grid(**named: Any) -> tuple[int]:
        return (blocks(int(named[n_param])),)

    grid.__name__ = f"grid_1d_{n_param}"
    return grid

