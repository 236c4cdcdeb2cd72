"""Process-wide settings: the mode, the backend and the region-check default.

These are the only global knobs offload_core has. Each starts from its
environment variable (`OFFLOAD_MODE`, `OFFLOAD_BACKEND`, `OFFLOAD_CHECK`),
read on first use so that a program (or the profiler running it) can set
the environment before the first launch. A bad value fails with one line
naming the variable and the choices.
"""

from __future__ import annotations

import os

from .backends import NAMES as BACKEND_NAMES
from .backends import Backend, create
from .errors import BackendError, OffloadError
from .kinds import MODES


class _Settings:
    def __init__(self) -> None:
        self.mode: str | None = None
        self.backend: Backend | None = None


_S = _Settings()


def _check_mode(mode: object, source: str) -> str:
    if not isinstance(mode, str) or mode.strip().lower() not in MODES:
        raise ValueError(f"{source}={mode!r} is not a mode; choose 'naive' or 'batched'")
    return mode.strip().lower()


def get_mode() -> str:
    """'batched' (regions keep data resident) or 'naive' (regions map nothing)."""
    mode = _S.mode
    if mode is None:
        mode = _S.mode = _check_mode(os.environ.get("OFFLOAD_MODE", "batched") or "batched", "OFFLOAD_MODE")
    return mode


def set_mode(mode: str) -> None:
    """Switch between the batched and the naive path, outside any region.

    In naive mode `region(...)` maps nothing, so every launch copies its
    arguments in and out: the same program, run both ways, shows what the
    regions save.
    """
    checked = _check_mode(mode, "mode")
    backend = _S.backend
    if backend is not None and backend.present.busy:
        raise OffloadError("cannot change the mode inside a region; leave the region first")
    _S.mode = checked


def get_backend() -> Backend:
    """The active backend, created from `OFFLOAD_BACKEND` (default `auto`) on first use."""
    backend = _S.backend
    if backend is None:
        name = os.environ.get("OFFLOAD_BACKEND", "auto") or "auto"
        if name.strip().lower() not in BACKEND_NAMES:
            raise BackendError(f"OFFLOAD_BACKEND={name!r} is not a backend; choose one of {', '.join(BACKEND_NAMES)}")
        backend = _S.backend = create(name)
    return backend


def set_backend(backend: str | Backend) -> Backend:
    """Select a backend by name (`auto`, `numpy`, `cupy`) or as an instance.

    Refused while arrays are mapped, since their device copies belong to the
    current backend.
    """
    current = _S.backend
    if current is not None and current.present.busy:
        raise BackendError("cannot change the backend inside a region; leave the region first")
    if isinstance(backend, Backend):
        _S.backend = backend
    elif isinstance(backend, str):
        _S.backend = create(backend)
    else:
        raise TypeError(f"set_backend() takes a name or a Backend, got {type(backend).__name__}")
    return _S.backend


def check_default() -> bool:
    """Whether regions check for host writes by default (`OFFLOAD_CHECK=1`)."""
    raw = os.environ.get("OFFLOAD_CHECK", "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise ValueError(f"OFFLOAD_CHECK={raw!r} is not a boolean; use 1 or 0")
