"""Kernels: `@kernel` for Python array functions, `RawKernel` for CUDA/HIP C.

Both are `Kernel`s: a name, a tuple of parsed parameters and a way to bind
launch arguments to them. What a kernel *runs* is the backend's business:
the NumPy backend calls `host_body` (the Python function, or a RawKernel's
`cpu=` fallback); the CuPy backend calls the same Python function on CuPy
arrays, or compiles the RawKernel's source. Keeping the kernel a passive
description is what lets one program run on either backend unchanged.
"""

from __future__ import annotations

import inspect
import numbers
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence, overload

from .annotations import Access
from .params import Param, params_from_spec, params_of_function

AliasCheck = Literal["bounds", "exact"]
Dim = int | tuple[int, ...] | Callable[..., Any]


class Kernel:
    """What every kernel has: a name, its parameters, and argument binding."""

    name: str
    params: tuple[Param, ...]
    alias_check: AliasCheck

    def __init__(self, name: str, params: tuple[Param, ...], alias_check: AliasCheck) -> None:
        if alias_check not in ("bounds", "exact"):
            raise ValueError(f"kernel '{name}': alias_check must be 'bounds' or 'exact', not {alias_check!r}")
        self.name = name
        self.params = params
        self.alias_check = alias_check
        self._names = tuple(p.name for p in params)
        # Derived once so a launch walks only what matters: the mutable array
        # parameters, and the pairs of array parameters that could alias.
        self.mutable = tuple(i for i, p in enumerate(params) if p.writes)
        arrays = [i for i, p in enumerate(params) if p.is_array]
        self.array_indices = tuple(arrays)
        self.scalar_indices = tuple(i for i, p in enumerate(params) if not p.is_array)
        self.owns = any(p.access is Access.OWNED for p in params)
        #: recent all-resident launches, for repeating them cheaply (see launch.Plan)
        self.plans: list[Any] = []
        self.alias_pairs = tuple(
            (i, j) for a, i in enumerate(arrays) for j in arrays[a + 1 :] if params[i].writes or params[j].writes
        )
        #: what a backend prepared for this kernel (a compiled module), keyed by its device
        self.backend_cache: dict[object, Any] = {}

    @property
    def host_body(self) -> Callable[..., Any] | None:
        """The Python callable the NumPy backend runs, or None if there is none."""
        raise NotImplementedError

    def bind(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Sequence[Any]:
        """Arguments in parameter order; a one-line TypeError on a bad call."""
        if not kwargs and len(args) == len(self.params):
            return args
        return self._bind_slow(args, kwargs)

    def _bind_slow(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Any]:
        names = ", ".join(self._names)
        if len(args) > len(self.params):
            raise TypeError(
                f"kernel '{self.name}' takes {len(self.params)} arguments ({names}), got {len(args)}"
            )
        values: list[Any] = list(args)
        for key in kwargs:
            if key not in self._names:
                raise TypeError(f"kernel '{self.name}' has no parameter '{key}' (parameters: {names})")
        for param in self.params[len(args):]:
            if param.name in kwargs:
                values.append(kwargs[param.name])
            elif param.default is not inspect.Parameter.empty:
                values.append(param.default)
            else:
                raise TypeError(f"kernel '{self.name}' is missing argument {param.describe()} (parameters: {names})")
        for param in self.params[: len(args)]:
            if param.name in kwargs:
                raise TypeError(f"kernel '{self.name}' got two values for parameter '{param.name}'")
        return values

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            f"kernel '{self.name}' is launched with offload({self.name}, ...), which moves its data; "
            "call it directly only through .fn"
        )

    def __repr__(self) -> str:
        sig = ", ".join(p.describe() for p in self.params)
        return f"<{type(self).__name__} {self.name}({sig})>"


class PyKernel(Kernel):
    """A Python function over arrays: runs on NumPy and, unchanged, on CuPy.

    The body sees device arrays (NumPy arrays on the NumPy backend, CuPy
    arrays on the CuPy backend) and must write its results in place
    (`y += a * x`, `out[...] = ...`); rebinding a parameter name has no
    effect outside the function.
    """

    def __init__(self, fn: Callable[..., Any], alias_check: AliasCheck = "bounds") -> None:
        name = getattr(fn, "__name__", type(fn).__name__)
        super().__init__(name, params_of_function(fn, f"kernel '{name}'"), alias_check)
        self.fn = fn
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    @property
    def host_body(self) -> Callable[..., Any]:
        return self.fn


@overload
def kernel(fn: Callable[..., Any], /) -> PyKernel: ...
@overload
def kernel(*, alias_check: AliasCheck = "bounds") -> Callable[[Callable[..., Any]], PyKernel]: ...
def kernel(
    fn: Callable[..., Any] | None = None, /, *, alias_check: AliasCheck = "bounds"
) -> PyKernel | Callable[[Callable[..., Any]], PyKernel]:
    """Declare a Python array function a kernel.

    Parameters annotated `In`, `Out`, `InOut` or `Owned` are arrays whose
    copies follow from the annotation; the rest are scalars, cast to an
    exact NumPy type. `alias_check="exact"` makes the overlap check between
    a mutable argument and the others exact (`numpy.shares_memory`) instead
    of the default bounds check, so interleaved views such as `a[::2]` and
    `a[1::2]` may be passed together.
    """
    if fn is None:
        return lambda f: PyKernel(f, alias_check)
    if not callable(fn):
        raise TypeError(f"@kernel decorates a function, got {type(fn).__name__}")
    return PyKernel(fn, alias_check)


class RawKernel(Kernel):
    """CUDA/HIP C source compiled by CuPy, with ownership-annotated parameters.

    `params` lists the kernel's parameters in source order, as a mapping or
    as (name, annotation) pairs: arrays as `In[np.float64]` and the like (a
    dtype is required, since the C pointer type fixes it), scalars as the
    NumPy type of the C type (`np.int32` for `int`, `np.float64` for
    `double`). `grid` and `block` are ints, tuples, or callables that receive
    the bound arguments by name and return one. `cpu` is an optional Python
    function with the same parameters, which the NumPy backend runs; without
    it, a launch there raises `BackendError` before any copy.
    """

    def __init__(
        self,
        source: str,
        name: str,
        params: Mapping[str, Any] | Iterable[tuple[str, Any]],
        grid: Dim = 1,
        block: Dim = 256,
        cpu: Callable[..., Any] | None = None,
        *,
        options: Sequence[str] = (),
        alias_check: AliasCheck = "bounds",
    ) -> None:
        where = f"RawKernel '{name}'"
        if not isinstance(source, str) or not source.strip():
            raise TypeError(f"{where}: source must be a non-empty string of CUDA/HIP C")
        parsed = params_from_spec(params, where)
        for p in parsed:
            if p.is_array and p.dtype is None:
                raise TypeError(
                    f"{where}: array parameter '{p.name}' needs a dtype matching its C pointer, "
                    f"e.g. {p.access.value if p.access else 'In'}[np.float64]"
                )
        if cpu is not None:
            n = len(inspect.signature(cpu).parameters)
            if n != len(parsed):
                raise TypeError(f"{where}: the cpu= fallback takes {n} parameters, the kernel {len(parsed)}")
        super().__init__(name, parsed, alias_check)
        self.source = source
        self.grid = grid
        self.block = block
        self.cpu = cpu
        self.options = tuple(options)
        # Constant launch dimensions are checked once, here, not on every launch.
        self._static_grid = None if callable(grid) else _dim(grid, {}, name, "grid")
        self._static_block = None if callable(block) else _dim(block, {}, name, "block")
        self._static_dims = None
        if self._static_grid is not None and self._static_block is not None:
            self._static_dims = (self._static_grid, self._static_block)

    @property
    def host_body(self) -> Callable[..., Any] | None:
        return self.cpu

    def launch_dims(self, values: Sequence[Any]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Grid and block for one launch, from constants or callables of the arguments."""
        if self._static_dims is not None:
            return self._static_dims
        named = dict(zip(self._names, values))
        grid = self._static_grid or _dim(self.grid, named, self.name, "grid")
        block = self._static_block or _dim(self.block, named, self.name, "block")
        return grid, block


def _dim(value: Dim, named: dict[str, Any], name: str, what: str) -> tuple[int, ...]:
    """A launch dimension as a tuple of 1 to 3 positive ints (runs per launch for callables)."""
    if callable(value):
        value = value(**named)
    # The common answer, a tuple of plain ints, is checked without the slow ABC isinstance.
    if type(value) is tuple and 1 <= len(value) <= 3:
        for v in value:
            if type(v) is not int or v <= 0:
                break
        else:
            return value
    if isinstance(value, numbers.Integral):
        value = (value,)
    if not (
        isinstance(value, tuple)
        and 1 <= len(value) <= 3
        and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) and v > 0 for v in value)
    ):
        raise TypeError(f"RawKernel '{name}': {what} must be 1 to 3 positive ints, got {value!r}")
    return tuple(int(v) for v in value)
