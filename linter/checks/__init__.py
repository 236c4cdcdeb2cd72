"""The checks: importing this package registers every check (see registry.py)."""

from __future__ import annotations

from . import (branches, collectives, fills, flow, hostindices, indexing, kernel_bodies, launches, loaders,  # noqa: F401
               syncs, transfers)
# (importing a check module registers its checks)
