"""A stand-in for the slice of JAX the guard uses, for machines without JAX (the CPU-only CI).

It mirrors what JAX 0.10 does (checked against it in `test_jax.py`'s
real-JAX tests): the transfer guard's levels are per thread, set by the
context managers `transfer_guard`, `transfer_guard_host_to_device` and
`transfer_guard_device_to_host`, over process-wide defaults
(`config.update`); `config.jax_transfer_guard_*` read the level in force
on the calling thread (None where nothing is set). `device_put` and
`to_host` refuse as JAX's C++ does while their direction is
`disallow_explicit`, with a `JaxRuntimeError` whose message is JAX's:
`INVALID_ARGUMENT: Disallowed host-to-device transfer: aval=...`. The
device-to-host refusal, which JAX's CPU backend never makes (its arrays
are host memory), is what a GPU backend says, so it is tested here.
The folder is a library to the guard's frame filter, as JAX's is, so a
refusal's user line is the test's.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

import numpy as np

_NAMES = {"h2d": "jax_transfer_guard_host_to_device", "d2h": "jax_transfer_guard_device_to_host"}
_LEVELS = threading.local()


class JaxRuntimeError(RuntimeError):
    """`jax.errors.JaxRuntimeError`."""


class _Config:
    """`jax.config`: each transfer guard setting reads this thread's level, else the process-wide one."""

    def __init__(self) -> None:
        self.defaults: dict[str, str | None] = {"jax_transfer_guard": None, **{n: None for n in _NAMES.values()}}

    def update(self, name: str, value: str | None) -> None:
        self.defaults[name] = value
        if name == "jax_transfer_guard":  # the combined setting sets each direction, as JAX's does
            for direction in _NAMES.values():
                self.defaults[direction] = value

    def __getattr__(self, name: str) -> str | None:
        if name not in self.defaults:
            raise AttributeError(name)
        local = getattr(_LEVELS, name, None)
        return local if local is not None else self.defaults[name]


config = _Config()


def level(direction: str) -> str | None:
    """The level in force for `h2d` or `d2h` on this thread."""
    return getattr(config, _NAMES[direction])  # type: ignore[no-any-return]


@contextmanager
def _set(names: tuple[str, ...], value: str) -> Iterator[None]:
    before = {n: getattr(_LEVELS, n, None) for n in names}
    for n in names:
        setattr(_LEVELS, n, value)
    try:
        yield
    finally:
        for n, v in before.items():
            setattr(_LEVELS, n, v)


def transfer_guard_host_to_device(value: str) -> Iterator[None]:
    return _set((_NAMES["h2d"],), value)  # type: ignore[return-value]


def transfer_guard_device_to_host(value: str) -> Iterator[None]:
    return _set((_NAMES["d2h"],), value)  # type: ignore[return-value]


def transfer_guard(value: str) -> Iterator[None]:
    return _set(("jax_transfer_guard", *_NAMES.values()), value)  # type: ignore[return-value]


def device_put(x: np.ndarray) -> np.ndarray:
    if level("h2d") == "disallow_explicit":
        raise JaxRuntimeError(f"INVALID_ARGUMENT: Disallowed host-to-device transfer: aval=ShapedArray("
                              f"{x.dtype}[{','.join(map(str, x.shape))}]), dst_sharding=SingleDeviceSharding("
                              f"device=CudaDevice(id=0), memory_kind=device)")
    return x


def to_host(x: np.ndarray) -> np.ndarray:
    if level("d2h") == "disallow_explicit":
        raise JaxRuntimeError(f"INVALID_ARGUMENT: Disallowed device-to-host transfer: aval=ShapedArray("
                              f"{x.dtype}[{','.join(map(str, x.shape))}]), sharding=SingleDeviceSharding("
                              f"device=CudaDevice(id=0), memory_kind=device)")
    return x
