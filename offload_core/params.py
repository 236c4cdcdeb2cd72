"""Kernel parameters: what each one is, and how an argument is checked and cast.

A kernel's parameters are parsed once, when the kernel is defined, into a
tuple of `Param` records. The launch path then only walks that tuple, so the
per-launch cost of the checks is a few attribute reads per argument. Scalars
are cast to an exact NumPy type here so that the NumPy body and a compiled
CUDA/HIP kernel see the same width: a Python `float` is a `float64`, an
`int` an `int64`, and a narrowing that would change the value is refused
rather than done silently.
"""

from __future__ import annotations

import inspect
import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from .annotations import ANNOTATIONS, Access, ArraySpec

#: Python scalar annotations and the exact NumPy type each one means.
PYTHON_SCALARS: dict[type, type[np.generic]] = {
    bool: np.bool_,
    int: np.int64,
    float: np.float64,
    complex: np.complex128,
}


@dataclass(frozen=True)
class Param:
    """One kernel parameter.

    `access` is None for scalars. `scalar` is the exact NumPy scalar type of
    a scalar parameter, or None for an unannotated one, whose type is taken
    from the value (a Python `int` becomes `int64`, a NumPy scalar keeps its
    own type).
    """

    name: str
    access: Access | None = None
    dtype: np.dtype[Any] | None = None
    scalar: type[np.generic] | None = None
    default: Any = inspect.Parameter.empty
    # Derived once, read on every launch (plain attributes are cheaper than properties).
    is_array: bool = field(init=False, repr=False, compare=False)
    reads: bool = field(init=False, repr=False, compare=False)
    writes: bool = field(init=False, repr=False, compare=False)
    copies_back: bool = field(init=False, repr=False, compare=False)
    bounds: tuple[int, int] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        access = self.access
        object.__setattr__(self, "is_array", access is not None)
        object.__setattr__(self, "reads", access is not None and access.reads)
        object.__setattr__(self, "writes", access is not None and access.writes)
        object.__setattr__(self, "copies_back", access is not None and access.copies_back)
        bounds = None
        if self.scalar is not None and np.dtype(self.scalar).kind in "iu":
            info = np.iinfo(self.scalar)
            bounds = (int(info.min), int(info.max))
        object.__setattr__(self, "bounds", bounds)

    def describe(self) -> str:
        """How the parameter reads in a message: `'y' (InOut[float64])`."""
        if self.access is None:
            kind = self.scalar.__name__ if self.scalar is not None else "scalar"
        else:
            kind = str(ArraySpec(self.access, self.dtype))
        return f"'{self.name}' ({kind})"


def param_from_annotation(name: str, annotation: Any, where: str, default: Any = inspect.Parameter.empty) -> Param:
    """Build a `Param` from one annotation, or raise a one-line TypeError."""
    if annotation is inspect.Parameter.empty:
        return Param(name, default=default)
    if isinstance(annotation, ArraySpec):
        return Param(name, annotation.access, annotation.dtype, default=default)
    if isinstance(annotation, type):
        if annotation in ANNOTATIONS:
            return Param(name, ANNOTATIONS[annotation], default=default)
        if annotation in PYTHON_SCALARS:
            return Param(name, scalar=PYTHON_SCALARS[annotation], default=default)
        if issubclass(annotation, np.generic) and annotation is not np.generic:
            if np.dtype(annotation).hasobject or np.dtype(annotation).kind in "SUV":
                raise TypeError(f"{where}: parameter '{name}' has a non-numeric scalar type {annotation.__name__}")
            return Param(name, scalar=annotation, default=default)
    if isinstance(annotation, np.dtype):
        return Param(name, scalar=annotation.type, default=default)
    shown = getattr(annotation, "__name__", repr(annotation))
    raise TypeError(
        f"{where}: parameter '{name}' is annotated {shown}; annotate arrays with "
        "In, Out, InOut or Owned (optionally In[np.float32]) and scalars with "
        "int, float, complex, bool or a NumPy scalar type"
    )


def params_of_function(fn: Callable[..., Any], where: str) -> tuple[Param, ...]:
    """Parse a kernel function's signature into parameters."""
    try:
        sig = inspect.signature(fn, eval_str=True)
    except NameError as exc:
        raise TypeError(f"{where}: cannot resolve an annotation ({exc})") from None
    params = []
    for p in sig.parameters.values():
        if p.kind not in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            raise TypeError(
                f"{where}: parameter '{p.name}' is {p.kind.description}; kernel parameters must be positional"
            )
        param = param_from_annotation(p.name, p.annotation, where, p.default)
        if param.is_array and p.default is not inspect.Parameter.empty:
            raise TypeError(f"{where}: array parameter '{p.name}' cannot have a default")
        params.append(param)
    if sig.return_annotation not in (inspect.Signature.empty, None, "None"):
        raise TypeError(
            f"{where}: a kernel returns nothing; write results through Out or InOut parameters"
        )
    return tuple(params)


def params_from_spec(spec: Mapping[str, Any] | Iterable[tuple[str, Any]], where: str) -> tuple[Param, ...]:
    """Parse a `RawKernel(params=...)` spec: a mapping or pairs of name, annotation."""
    items = list(spec.items()) if isinstance(spec, Mapping) else list(spec)
    params = []
    seen: set[str] = set()
    for item in items:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
            raise TypeError(f"{where}: params must be (name, annotation) pairs, got {item!r}")
        name, annotation = item
        if name in seen:
            raise TypeError(f"{where}: parameter '{name}' is listed twice")
        seen.add(name)
        params.append(param_from_annotation(name, annotation, where))
    return tuple(params)


def cast_scalar(param: Param, value: Any, where: str) -> np.generic:
    """Cast a scalar argument to its exact NumPy type, refusing lossy casts."""
    # Fast paths for the common exact cases; everything else takes the checked route.
    target = param.scalar
    kind = type(value)
    if kind is target:
        return value  # type: ignore[no-any-return]
    if kind is float and (target is np.float64 or target is None):
        return np.float64(value)
    if kind is int and param.bounds is not None and param.bounds[0] <= value <= param.bounds[1]:
        return target(value)  # type: ignore[misc]
    return _cast_checked(param, value, where)


def _cast_checked(param: Param, value: Any, where: str) -> np.generic:
    if isinstance(value, (np.ndarray, list, tuple)) or not isinstance(value, (numbers.Number, np.generic)):
        got = type(value).__name__
        hint = "; annotate it In/Out/InOut/Owned to pass an array" if isinstance(value, np.ndarray) else ""
        raise TypeError(f"{where}: parameter {param.describe()} takes a scalar, got {got}{hint}")
    target = param.scalar
    if target is None:
        target = _infer_scalar(value)
    kind = np.dtype(target).kind
    is_bool = isinstance(value, (bool, np.bool_))
    if kind == "b":
        if not is_bool:
            raise TypeError(f"{where}: parameter {param.describe()} takes a bool, got {type(value).__name__}")
        return np.bool_(value)
    if is_bool:
        raise TypeError(f"{where}: parameter {param.describe()} takes a number, got bool")
    if kind in "iu":
        if not isinstance(value, (numbers.Integral, np.integer)):
            raise TypeError(
                f"{where}: parameter {param.describe()} takes an integer, got {type(value).__name__} {value!r}"
            )
        info = np.iinfo(target)
        if not info.min <= int(value) <= info.max:
            raise TypeError(f"{where}: parameter {param.describe()}: {value} is out of range [{info.min}, {info.max}]")
        return target(value)
    if kind == "f":
        if isinstance(value, (complex, np.complexfloating)):
            raise TypeError(f"{where}: parameter {param.describe()} takes a real number, got complex {value!r}")
        return target(value)
    return target(value)


def _infer_scalar(value: Any) -> type[np.generic]:
    if isinstance(value, np.generic):
        return type(value)
    for py, np_type in PYTHON_SCALARS.items():
        if type(value) is py:
            return np_type
    # Other numbers.Number subclasses (fractions, decimals) take the widest fitting kind.
    if isinstance(value, numbers.Integral):
        return np.int64
    if isinstance(value, numbers.Real):
        return np.float64
    return np.complex128
