"""The checks: importing this package registers every check (see registry.py)."""

from __future__ import annotations

from . import branches, collectives, flow, indexing, kernel_bodies, launches, loaders, syncs, transfers  # noqa: F401
# (importing a check module registers its checks)
