"""Kernels the offload_core tests launch: one per annotation, written so they run on NumPy and CuPy."""

from __future__ import annotations

import numpy as np

from offload_core import In, InOut, Out, Owned, kernel


@kernel
def daxpy(y: InOut, x: In, a: float) -> None:
    y += a * x


@kernel
def read_only(x: In) -> None:
    x.sum()


@kernel
def fill(out: Out, value: float) -> None:
    out[...] = value


@kernel
def copy(dst: Out, src: In) -> None:
    dst[...] = src


@kernel
def consume(scratch: Owned, out: Out) -> None:
    scratch *= 2.0
    out[...] = scratch


@kernel
def scale(y: InOut, a: float) -> None:
    y *= a


@kernel
def typed(y: InOut[np.float32], n: np.int32) -> None:
    y += n


class Boom(RuntimeError):
    pass


@kernel
def half_then_fail(y: InOut, x: In) -> None:
    """Writes part of y on the device, then raises: the host must not see the write."""
    y[: y.shape[0] // 2] = -1.0
    raise Boom("kernel failed halfway")
