"""The checks: importing this package registers every check (see registry.py)."""

from __future__ import annotations

from . import (branches, collectives, flow, hostindices, indexing, kernel_bodies, launches, loaders, syncs,  # noqa: F401
               transfers)
# (importing a check module registers its checks)
