"""Backend selection: `auto`, `numpy` or `cupy`.

Only `cupy_backend` imports CuPy, and only when it is asked for (or when
`auto` probes for a GPU), so `import offload_core` stays free of it.
"""

from __future__ import annotations

import importlib.util

from ..errors import BackendError
from .base import Backend
from .numpy_backend import NumpyBackend

NAMES = ("auto", "numpy", "cupy")

__all__ = ["NAMES", "Backend", "NumpyBackend", "create", "cupy_usable"]


def cupy_usable() -> bool:
    """CuPy is installed and sees a device (CUDA or ROCm); imports CuPy only if it is installed."""
    if importlib.util.find_spec("cupy") is None:
        return False
    from .cupy_probe import usable

    return usable()


def create(name: str) -> Backend:
    """A new backend by name; `BackendError` with what is missing otherwise."""
    key = name.strip().lower()
    if key not in NAMES:
        raise BackendError(f"unknown backend {name!r}; choose one of {', '.join(NAMES)}")
    if key == "auto":
        key = "cupy" if cupy_usable() else "numpy"
    if key == "numpy":
        return NumpyBackend()
    if importlib.util.find_spec("cupy") is None:
        raise BackendError(
            "the CuPy backend needs CuPy: pip install 'offload-guard[cuda12]' (or [cuda13], [rocm])"
        )
    if not cupy_usable():
        raise BackendError("the CuPy backend found no usable GPU (cupy.is_available() is False)")
    from .cupy_backend import CupyBackend

    return CupyBackend()
