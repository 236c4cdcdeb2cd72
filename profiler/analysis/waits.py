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

import numpy as np

from ..trace.columns import Columns
from ..trace.records import KINDS, Site

_D2H, _SYNC = KINDS.index("d2h"), KINDS.index("sync")


def sync_cause_codes(c: Columns) -> tuple[np.ndarray, np.ndarray]:
    """(record index of each sync, code into `c.sites` of the line that caused it, -1 for none), in record order.

    Array operations only: a training loop's trace holds hundreds of
    thousands of records, and the verdict asks this of every one.
    """
    syncs = np.flatnonzero(c.kind == _SYNC)
    d2h = np.flatnonzero(c.kind == _D2H)
    codes = c.site[syncs].astype(np.int64, copy=True)
    if syncs.size == 0 or d2h.size == 0:
        return syncs, codes
    last = np.searchsorted(d2h, syncs) - 1  # the last download before each sync
    previous = np.concatenate(([-1], syncs[:-1]))  # the sync before it
    since = (last >= 0) & (d2h[np.maximum(last, 0)] > previous)
    codes[since] = c.site[d2h[last[since]]]
    return syncs, codes


def sync_causes(c: Columns) -> dict[int, Site | None]:
    """Record index of each sync -> the call site that caused it."""
    syncs, codes = sync_cause_codes(c)
    return {i: (c.sites[k] if k >= 0 else None) for i, k in zip(syncs.tolist(), codes.tolist())}
