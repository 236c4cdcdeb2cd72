"""A stand-in for the slice of JAX the guard uses: its transfer guard's context managers and its refusal.

JAX's guard is thread-local state; `device_put` and `to_host` refuse (as
JAX's C++ does, with an `XlaRuntimeError` whose message starts
`INVALID_ARGUMENT: Disallowed ...`) while the level for their direction is
`disallow_explicit`. The folder is a library to the guard's frame filter,
as JAX's is, so a refusal's user line is the test's.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

_LEVELS = threading.local()


class XlaRuntimeError(RuntimeError):
    pass


class _Config:
    """`jax.config`: the process-wide defaults (what `_jax_guard_on` reads)."""

    jax_transfer_guard: str | None = None
    jax_transfer_guard_host_to_device: str | None = None
    jax_transfer_guard_device_to_host: str | None = None


config = _Config()


def level(direction: str) -> str:
    return getattr(_LEVELS, direction, "allow")


@contextmanager
def _set(directions: tuple[str, ...], value: str) -> Iterator[None]:
    before = {d: level(d) for d in directions}
    for d in directions:
        setattr(_LEVELS, d, value)
    try:
        yield
    finally:
        for d, v in before.items():
            setattr(_LEVELS, d, v)


def transfer_guard_host_to_device(value: str) -> Iterator[None]:
    return _set(("h2d",), value)  # type: ignore[return-value]


def transfer_guard_device_to_host(value: str) -> Iterator[None]:
    return _set(("d2h",), value)  # type: ignore[return-value]


def transfer_guard(value: str) -> Iterator[None]:
    return _set(("h2d", "d2h"), value)  # type: ignore[return-value]


def device_put(x: object) -> object:
    if level("h2d") == "disallow_explicit":
        raise XlaRuntimeError("INVALID_ARGUMENT: Disallowed host-to-device transfer: aval=f32[8], dst_sharding=...")
    return x


def to_host(x: object) -> object:
    if level("d2h") == "disallow_explicit":
        raise XlaRuntimeError("INVALID_ARGUMENT: Disallowed device-to-host transfer: aval=f32[8]")
    return x
