"""Summaries of a `Run`: totals, and aggregates per direction, call site, kernel and launch.

Each is a pure function of a `Run` (and, for modelled costs, a `Link`),
computed in one pass over the records, so the recorder never aggregates
in the hot path and every consumer (reports, the gate, the TUI) gets the
same numbers. A `Flow` is the unit of account: how many, how many bytes,
how long measured, and how long on the modelled link (None when no link
was given).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from .model import Link, Record, Run, Site


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


class _Acc:
    """A mutable `Flow` for the single pass; frozen into a `Flow` at the end."""

    __slots__ = ("count", "nbytes", "ns", "modelled")

    def __init__(self, modelled: bool) -> None:
        self.count = 0
        self.nbytes = 0
        self.ns = 0
        self.modelled: int | None = 0 if modelled else None

    def add(self, r: Record, link: Link | None) -> None:
        self.count += 1
        self.nbytes += r.nbytes
        self.ns += r.duration_ns
        if link is not None and self.modelled is not None:
            self.modelled += modelled_ns(r, link)

    def flow(self) -> Flow:
        return Flow(self.count, self.nbytes, self.ns, self.modelled)


def modelled_ns(r: Record, link: Link) -> int:
    """What one record would cost on `link`: copies by size, launches and syncs by overhead."""
    if r.kind == "h2d" or r.kind == "d2h":
        return link.copy_ns(r.kind, r.nbytes, r.pinned)
    if r.kind == "launch":
        return int((link.launch_us or 0.0) * 1e3) + r.duration_ns
    if r.kind == "sync":
        return int((link.sync_us or 0.0) * 1e3)
    return 0


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
    acc = {k: _Acc(link is not None) for k in ("h2d", "d2h", "launch", "sync", "alloc")}
    regions = 0
    for r in run.records:
        a = acc.get(r.kind)
        if a is not None:
            a.add(r, link)
        elif r.kind == "region_enter":
            regions += 1
    return Totals(run.meta.wall_ns, acc["h2d"].flow(), acc["d2h"].flow(), acc["launch"].flow(),
                  acc["sync"].flow(), acc["alloc"].flow(), regions)


def by_direction(run: Run, link: Link | None = None) -> dict[str, Flow]:
    """`{"h2d": Flow, "d2h": Flow}`."""
    t = totals(run, link)
    return {"h2d": t.h2d, "d2h": t.d2h}


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
    table: dict[Site | None, tuple[_Acc, _Acc, list[int], dict[str, None]]] = {}
    for r in run.records:
        kind = r.kind
        if kind not in ("h2d", "d2h", "launch", "sync"):
            continue
        entry = table.get(r.site)
        if entry is None:
            entry = table[r.site] = (_Acc(link is not None), _Acc(link is not None), [0, 0], {})
        if kind == "h2d":
            entry[0].add(r, link)
        elif kind == "d2h":
            entry[1].add(r, link)
        elif kind == "launch":
            entry[2][0] += 1
            if r.kernel is not None:
                entry[3][r.kernel] = None
        else:
            entry[2][1] += 1
    out = [SiteSummary(site, h.flow(), d.flow(), n[0], n[1], tuple(k)) for site, (h, d, n, k) in table.items()]
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
    table: dict[str, dict[str, _Acc]] = {}
    for r in run.records:
        if r.kernel is None or r.kind not in ("launch", "h2d", "d2h", "sync"):
            continue
        entry = table.get(r.kernel)
        if entry is None:
            entry = table[r.kernel] = {k: _Acc(link is not None) for k in ("launch", "h2d", "d2h", "sync")}
        entry[r.kind].add(r, link)
    out = [KernelSummary(k, e["launch"].flow(), e["h2d"].flow(), e["d2h"].flow(), e["sync"].flow()) for k, e in table.items()]
    out.sort(key=lambda s: (-(s.launches.ns + s.h2d.ns + s.d2h.ns), s.kernel))
    return tuple(out)


@dataclass(frozen=True)
class LaunchSummary:
    """One `offload()` call: when, where, and the copies and sync it made."""

    index: int
    kernel: str
    site: Site | None
    mode: str
    region: int | None
    start_ns: int
    kernel_ns: int
    h2d: Flow
    d2h: Flow
    sync_ns: int
    records: tuple[int, ...] = field(default=())

    @property
    def total_ns(self) -> int:
        return self.kernel_ns + self.h2d.ns + self.d2h.ns + self.sync_ns


class _LaunchAcc:
    __slots__ = ("first", "launch", "h2d", "d2h", "sync_ns", "records")

    def __init__(self, first: Record, modelled: bool) -> None:
        self.first = first
        self.launch: Record | None = None
        self.h2d = _Acc(modelled)
        self.d2h = _Acc(modelled)
        self.sync_ns = 0
        self.records: list[int] = []


def by_launch(run: Run, link: Link | None = None) -> tuple[LaunchSummary, ...]:
    """Per launch in issue order; `records` are the indices of its records in `run.records`."""
    table: dict[int, _LaunchAcc] = {}
    for i, r in enumerate(run.records):
        if r.launch is None:
            continue
        e = table.get(r.launch)
        if e is None:
            e = table[r.launch] = _LaunchAcc(r, link is not None)
        e.records.append(i)
        if r.kind == "launch":
            e.launch = r
        elif r.kind == "h2d":
            e.h2d.add(r, link)
        elif r.kind == "d2h":
            e.d2h.add(r, link)
        elif r.kind == "sync":
            e.sync_ns += r.duration_ns
    out = []
    for index, e in table.items():
        head = e.launch or e.first
        out.append(LaunchSummary(
            index=index, kernel=head.kernel or "?", site=head.site, mode=head.mode, region=head.region,
            start_ns=e.first.start_ns, kernel_ns=e.launch.duration_ns if e.launch is not None else 0,
            h2d=e.h2d.flow(), d2h=e.d2h.flow(), sync_ns=e.sync_ns, records=tuple(e.records),
        ))
    out.sort(key=lambda s: s.index)
    return tuple(out)


def _site_order(site: Site | None) -> tuple[str, int]:
    return ("", 0) if site is None else (site.file, site.line)


def flow_of(records: Iterable[Record], link: Link | None = None) -> Flow:
    """A `Flow` over any records (used by detectors and the pytest plugin)."""
    acc = _Acc(link is not None)
    for r in records:
        acc.add(r, link)
    return acc.flow()
