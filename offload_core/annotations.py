"""Ownership annotations: `In`, `Out`, `InOut`, `Owned`.

Each annotation plays three roles, so each is a class:

* as a bare annotation (`x: In`) it says how a kernel uses an array;
* subscripted (`x: In[np.float32]`) it also fixes the dtype, producing an
  `ArraySpec`;
* called on an array (`region(Out(z))`, `region(In(x))`) it asks a region to
  map that array in that mode, producing a `MapRequest`.

The transfers every access implies are the contract of docs/design.md:

======== ============== ===================== ===========================
access   before launch  after launch          host array afterwards
======== ============== ===================== ===========================
In       H2D            nothing               unchanged
InOut    H2D            D2H, then sync        holds the kernel's result
Out      allocate only  D2H, then sync        holds the kernel's result
Owned    H2D            nothing (freed)       frozen: later use raises
======== ============== ===================== ===========================
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np


class Access(enum.Enum):
    """How a kernel uses one array parameter."""

    IN = "In"
    OUT = "Out"
    INOUT = "InOut"
    OWNED = "Owned"

    @property
    def reads(self) -> bool:
        """The kernel reads the host data, so it must be uploaded."""
        return self is not Access.OUT

    @property
    def writes(self) -> bool:
        """The kernel may write the array (it counts as a mutable borrow)."""
        return self is not Access.IN

    @property
    def copies_back(self) -> bool:
        """The result is downloaded into the host array after the launch."""
        return self in (Access.INOUT, Access.OUT)


def as_dtype(value: Any, where: str) -> np.dtype[Any]:
    """Turn a dtype-like subscript into a dtype, with a one-line error."""
    try:
        dtype = np.dtype(value)
    except TypeError as exc:
        raise TypeError(f"{where}: {value!r} is not a NumPy dtype ({exc})") from None
    if dtype.hasobject:
        raise TypeError(f"{where}: object dtypes cannot live on a device")
    return dtype


@dataclass(frozen=True)
class ArraySpec:
    """An array parameter's access and, optionally, its required dtype."""

    access: Access
    dtype: np.dtype[Any] | None = None

    def __str__(self) -> str:
        if self.dtype is None:
            return self.access.value
        return f"{self.access.value}[{self.dtype.name}]"


@dataclass(frozen=True, eq=False)
class MapRequest:
    """`region(In(x))`, `region(Out(z))`: map one array in a given mode.

    Compared by identity: two requests for the same array are distinct
    objects, and the region resolves them by the array they carry.
    """

    array: np.ndarray[Any, Any]
    access: Access


class _Annotation:
    """Base of the four annotation classes; never instantiated directly."""

    access: ClassVar[Access]

    def __class_getitem__(cls, dtype: Any) -> ArraySpec:
        return ArraySpec(cls.access, as_dtype(dtype, f"{cls.access.value}[...]"))

    def __new__(cls, array: Any) -> MapRequest:  # type: ignore[misc]
        if cls.access is Access.OWNED:
            raise TypeError(
                "Owned(...) cannot be mapped by a region: a region lends arrays and "
                "gets them back; pass the array as an Owned kernel parameter instead"
            )
        if not isinstance(array, np.ndarray):
            raise TypeError(
                f"{cls.access.value}(...) takes a NumPy array, got {type(array).__name__}"
            )
        return MapRequest(array, cls.access)


class In(_Annotation):
    """Read-only borrow (`&T`): uploaded before the launch, never copied back."""

    access = Access.IN


class Out(_Annotation):
    """Write-only: allocated on the device without an upload, copied back after."""

    access = Access.OUT


class InOut(_Annotation):
    """Mutable borrow (`&mut T`): uploaded before and copied back after."""

    access = Access.INOUT


class Owned(_Annotation):
    """Move: uploaded, consumed by the kernel, and never copied back.

    The host array is frozen (`writeable = False`) after the launch, and a
    later launch or region that uses it raises `UseAfterMoveError`.
    """

    access = Access.OWNED


ANNOTATIONS: dict[type, Access] = {In: Access.IN, Out: Access.OUT, InOut: Access.INOUT, Owned: Access.OWNED}
