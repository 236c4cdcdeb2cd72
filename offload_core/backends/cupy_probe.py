"""Whether CuPy can run here: the one place besides the CuPy backend that imports cupy.

Kept apart from `cupy_backend` so that probing (for `OFFLOAD_BACKEND=auto`
and for the test suite's `gpu` marker) does not build the backend.
"""

from __future__ import annotations


def usable() -> bool:
    try:
        import cupy
    except Exception:  # a broken CuPy install is the same as none for `auto`
        return False
    try:
        return bool(cupy.is_available())
    except Exception:
        return False
