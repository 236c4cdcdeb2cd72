"""Summaries of a `Run`: totals, and aggregates per call site and per kernel.

Each is a pure function of a `Run` (and, for modelled costs, a `Link`),
so the recorder never aggregates in the hot path and every consumer
(reports, the gate, the pytest plugin, the TUI) gets the same numbers. A
`Flow` is the unit of account: how many, how many bytes, how long
measured, and how long on the modelled link (None when no link was given).

There is one summary path: NumPy reductions over `run.columns` with exact
integer sums, so that a trace of 10^6 events is summarised in
milliseconds without building its `Record`s. `modelled_column` prices
every record on a link once, for these sums, for the per-launch table
(`profiler.analysis.launches`) and for the detectors' time lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..trace.model import Run
from ..trace.records import KINDS, Kind, Link, Site

if TYPE_CHECKING:
    import numpy as np

    from ..trace.columns import Columns


@dataclass(frozen=True, slots=True)
class Flow:
    """A count of operations, their bytes, measured ns and modelled ns (None: not modelled)."""

    count: int = 0
    nbytes: int = 0
    ns: int = 0
    modelled_ns: int | None = None

    def __add__(self, other: Flow) -> Flow:
        modelled = None if self.modelled_ns is None and other.modelled_ns is None else (
            (self.modelled_ns or 0) + (other.modelled_ns or 0))
        return Flow(self.count + other.count, self.nbytes + other.nbytes, self.ns + other.ns, modelled)


@dataclass(frozen=True)
class Totals:
    """The run as a whole."""

    wall_ns: int
    h2d: Flow
    d2h: Flow
    launches: Flow
    syncs: Flow
    allocs: Flow
    regions: int

    @property
    def copies(self) -> Flow:
        return self.h2d + self.d2h

    @property
    def copy_share(self) -> float:
        """Measured copy time as a fraction of wall time."""
        return self.copies.ns / self.wall_ns if self.wall_ns else 0.0


def totals(run: Run, link: Link | None = None) -> Totals:
    c = run.columns
    per_record = modelled_column(c, link)
    flows = {kind: _flow(c, c.kind_mask(kind), per_record) for kind in ("h2d", "d2h", "launch", "sync", "alloc")}
    regions = int(c.kind_mask("region_enter").sum())
    return Totals(run.meta.wall_ns, flows["h2d"], flows["d2h"], flows["launch"], flows["sync"], flows["alloc"], regions)


@dataclass(frozen=True)
class SiteSummary:
    """What one call site did: its copies each way, its launches and syncs."""

    site: Site | None
    h2d: Flow
    d2h: Flow
    launches: int
    syncs: int
    kernels: tuple[str, ...]

    @property
    def copies(self) -> Flow:
        return self.h2d + self.d2h


def by_site(run: Run, link: Link | None = None) -> tuple[SiteSummary, ...]:
    """Per call site, most measured copy time first (ties: most bytes, then file order)."""
    import numpy as np

    c = run.columns
    per_record = modelled_column(c, link)
    chosen = np.flatnonzero(c.kind_mask("h2d", "d2h", "launch", "sync"))
    group = c.site[chosen].astype(np.int64) + 1  # 0 is "no call site"
    n = len(c.sites) + 1
    kinds = c.kind[chosen]
    h2d = _grouped(c, chosen, group, n, kinds == _code("h2d"), per_record)
    d2h = _grouped(c, chosen, group, n, kinds == _code("d2h"), per_record)
    launches = np.bincount(group[kinds == _code("launch")], minlength=n)
    syncs = np.bincount(group[kinds == _code("sync")], minlength=n)
    # kernels of each site in first-seen order
    named = chosen[(kinds == _code("launch")) & (c.kernel[chosen] >= 0)]
    pair = (c.site[named].astype(np.int64) + 1) * (len(c.kernels) + 1) + c.kernel[named]
    kernels: dict[int, list[str]] = {}
    for key in _first_seen(pair):
        kernels.setdefault(key // (len(c.kernels) + 1), []).append(c.kernels[key % (len(c.kernels) + 1)])
    out = [SiteSummary(None if g == 0 else c.sites[g - 1], h2d[g], d2h[g], int(launches[g]), int(syncs[g]),
                       tuple(kernels.get(g, ()))) for g in _first_seen(group)]
    out.sort(key=lambda s: (-s.copies.ns, -s.copies.nbytes, _site_order(s.site)))
    return tuple(out)


@dataclass(frozen=True)
class KernelSummary:
    """One kernel over the run: launches, compute time, the copies its launches made."""

    kernel: str
    launches: Flow
    h2d: Flow
    d2h: Flow
    syncs: Flow


def by_kernel(run: Run, link: Link | None = None) -> tuple[KernelSummary, ...]:
    """Per kernel (copies made by launches only; a region's own copies belong to no kernel)."""
    import numpy as np

    c = run.columns
    per_record = modelled_column(c, link)
    chosen = np.flatnonzero(c.kind_mask("launch", "h2d", "d2h", "sync") & (c.kernel >= 0))
    group = c.kernel[chosen].astype(np.int64)
    n = len(c.kernels)
    kinds = c.kind[chosen]
    flows = {k: _grouped(c, chosen, group, n, kinds == _code(k), per_record) for k in ("launch", "h2d", "d2h", "sync")}
    out = [KernelSummary(c.kernels[g], flows["launch"][g], flows["h2d"][g], flows["d2h"][g], flows["sync"][g])
           for g in _first_seen(group)]
    out.sort(key=lambda s: (-(s.launches.ns + s.h2d.ns + s.d2h.ns), s.kernel))
    return tuple(out)


# ------------------------------------------------------------- columns
def _code(kind: Kind) -> int:
    return KINDS.index(kind)


def modelled_column(c: Columns, link: Link | None) -> np.ndarray | None:
    """What each record would cost on `link`, as an int64 array (None without a link).

    Copies cost the link's latency plus bytes over its bandwidth (the same
    float operations as `Link.copy_ns`, truncated as `int()` truncates),
    launches their measured time plus the link's launch overhead, syncs the
    link's sync overhead, everything else nothing.
    """
    if link is None:
        return None
    import numpy as np

    from ..trace.columns import saturating_add

    top = float(np.iinfo(np.int64).max)
    out = np.zeros(len(c), dtype=np.int64)
    for kind in ("h2d", "d2h"):
        for pinned in (False, True):
            m = (c.kind == _code(kind)) & (c.pinned == pinned)
            # the same float operations as Link.copy_ns, truncated as int() truncates; a cost past int64 is held
            # at its top (a float beyond it would convert to a negative number)
            ns = link.latency_us * 1e3 + c.nbytes[m] / link.bandwidth_gbps(kind, pinned)
            out[m] = np.where(ns < top, ns, 0).astype(np.int64)
            out[np.flatnonzero(m)[ns >= top]] = np.iinfo(np.int64).max
    launch = c.kind == _code("launch")
    out[launch] = saturating_add(int((link.launch_us or 0.0) * 1e3), c.duration_ns[launch])
    out[c.kind == _code("sync")] = int((link.sync_us or 0.0) * 1e3)
    return out


def _flow(c: Columns, mask: np.ndarray, per_record: np.ndarray | None) -> Flow:
    from ..trace.columns import exact_sum

    return Flow(int(mask.sum()), exact_sum(c.nbytes[mask]), exact_sum(c.duration_ns[mask]),
                None if per_record is None else exact_sum(per_record[mask]))


def _grouped(c: Columns, chosen: np.ndarray, group: np.ndarray, n: int, mask: np.ndarray,
             per_record: np.ndarray | None) -> list[Flow]:
    """One `Flow` per group of the records `chosen[mask]` (exact integer sums, not float bincounts)."""
    import numpy as np

    from ..trace.columns import exact_group_sums

    idx, g = chosen[mask], group[mask]
    count = np.bincount(g, minlength=n)
    sums = [exact_group_sums(values[idx], g, n)
            for values in (c.nbytes, c.duration_ns) + (() if per_record is None else (per_record,))]
    modelled = sums[2] if per_record is not None else [None] * n
    return [Flow(int(count[i]), sums[0][i], sums[1][i], modelled[i]) for i in range(n)]


def _first_seen(keys: np.ndarray) -> list[int]:
    """The distinct keys in the order they first occur."""
    import numpy as np

    values, first = np.unique(keys, return_index=True)
    return values[np.argsort(first, kind="stable")].tolist()


def _site_order(site: Site | None) -> tuple[str, int]:
    return ("", 0) if site is None else (site.file, site.line)
