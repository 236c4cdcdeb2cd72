"""Which line made the host wait: the cause of each sync, for the sync rule and the run's verdict.

A sync's own call site is often not the line to change. offload_core
synchronises because something was copied back (an `InOut`/`Out`
argument, `update_host`), so the line that asked for the wait is the
download's; in CuPy or PyTorch the scalar read (`.item()`) is both. So a
sync is attributed to the call site of the last download since the
previous sync, and to its own site when there was none (a region exit, an
explicit `synchronize()`).
"""

from __future__ import annotations

from typing import Sequence

from ..trace.records import Record, Site


def sync_causes(records: Sequence[Record]) -> dict[int, Site | None]:
    """Record index of each sync -> the call site that caused it."""
    out: dict[int, Site | None] = {}
    cause: Site | None = None
    seen = False
    for i, r in enumerate(records):
        if r.kind == "d2h":
            cause, seen = r.site, True
        elif r.kind == "sync":
            out[i] = cause if seen else r.site
            cause, seen = None, False
    return out
