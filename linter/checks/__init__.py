"""The checks: importing this package registers every check (see registry.py)."""

from __future__ import annotations

from . import collectives, flow, kernel_bodies, launches, loaders, syncs, transfers  # noqa: F401  (registration)
