"""The checks: importing this package registers every check (see registry.py)."""

from __future__ import annotations

from . import (branches, collectives, elementtests, fills, flow, formatting, hostindices, indexing, jitargs,  # noqa: F401
               kernel_bodies, launches, loaders, syncs, transfers)
# (importing a check module registers its checks)
