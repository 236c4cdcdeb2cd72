"""The checks: importing this package registers every check (see registry.py)."""

from __future__ import annotations

from . import (branches, collectives, fills, flow, formatting, hostindices, indexing, kernel_bodies, launches,  # noqa: F401
               loaders, syncs, transfers)
# (importing a check module registers its checks)
