"""The tables of the TUI, built from a `Session`: launches, kernels, call sites, findings, and a job's ranks.

Each function lays out what one view lists as a `grid.Table`: the shared
side names the row (the launch number, the kernel, the call site), one
side per run gives that run's figures, so the naive and the batched run
of the same launch or kernel are read across one line. Launch rows are
matched by ordinal (the n-th `offload()` call of each run), since that is
what lines up when the same program runs both ways, even when both runs
were recorded in one process and their raw launch indices differ.

The ranks table (only for a distributed job) lists every rank of the
session's jobs and a last row for the job, one side per job trace, with
the figures of `analysis.ranks.JobSummary` in the units `report`'s rank
table prints them in.

Cells are made by closures over the session's arrays, for the rows on
screen only; sort values are the arrays themselves.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..analysis.ranks import JobSummary, ranks_text
from ..analysis.summary import Flow
from ..units import fmt_bytes, fmt_ns
from .grid import Column, Scope, Side, Table, ranks, text_match
from .session import Session, Trace

NS_WIDTH = 7  # "12.3 ms", "850 ns"
BYTES_WIDTH = 7  # "1.69 GB", "512 B"


def _bytes(n: int) -> str:
    return fmt_bytes(n) if n else "-"


def _ns_col(key: str, title: str, values: np.ndarray, priority: int, dash_zero: bool = False) -> Column:
    """A duration column; `dash_zero` shows "-" for nothing (no copies), not "0 ns"."""
    def text(e: int) -> str:
        v = int(values[e])
        return "-" if dash_zero and v == 0 else fmt_ns(v)

    return Column(key, title, text, values, max(NS_WIDTH, len(title)), priority=priority)


def _bytes_col(key: str, title: str, values: np.ndarray, priority: int) -> Column:
    return Column(key, title, lambda e: _bytes(int(values[e])), values, max(BYTES_WIDTH, len(title)), priority=priority)


def _count_col(key: str, title: str, values: np.ndarray, priority: int) -> Column:
    widest = len(f"{int(values.max(initial=0)):,}")
    return Column(key, title, lambda e: f"{int(values[e]):,}", values, max(widest, len(title)), priority=priority)


def _text_col(key: str, title: str, labels: Sequence[str], codes: np.ndarray, priority: int, cap: int,
              min_width: int = 6) -> Column:
    """A categorical text column: `codes` index `labels` (-1 shows as "?")."""
    shown = [*labels, "?"]
    order = np.append(ranks(labels), len(labels))
    values = order[codes]  # code -1 reads the trailing rank of "?"
    natural = min(cap, max((len(s) for s in shown), default=1))
    return Column(key, title, lambda e: shown[int(codes[e])], values, max(natural, len(title)), align="left",
                  priority=priority, flex=True, min_width=min(min_width, natural))


def _entity_map(keys: int, present: int) -> np.ndarray:
    out = np.full(keys, -1, dtype=np.int64)
    out[:present] = np.arange(present)
    return out


# ------------------------------------------------------------------ launches
def launches_table(session: Session) -> Table:
    sizes = [len(t.launches) for t in session.traces]
    keys = max(sizes, default=0)
    ordinal = np.arange(keys, dtype=np.int64)
    shared = Side("", (Column("#", "#", str, ordinal, max(3, len(str(max(keys - 1, 0)))), priority=0),),
                  ordinal, shared=True)
    sides = [shared] + [_launch_side(t, session, keys) for t in session.traces]
    return Table(tuple(sides), keys, noun="launches")


def _launch_side(t: Trace, session: Session, keys: int) -> Side:
    lt = t.launches
    site_labels = [t.site_label(s) for s in lt.sites]
    cols = [
        _text_col("kernel", "kernel", lt.kernels, lt.kernel, 1, cap=14, min_width=5),
        _bytes_col("h2d", "H2D", lt.h2d_bytes, 0),
        _bytes_col("d2h", "D2H", lt.d2h_bytes, 0),
        _ns_col("copy", "copy", lt.copy_ns, 0, dash_zero=True),
        _ns_col("kernel_ns", "kernel", lt.kernel_ns, 2),
    ]
    modelled = lt.copy_modelled
    if modelled is not None and session.link is not None:
        cols.append(_ns_col("modelled", "modelled", modelled, 3, dash_zero=True))
    cols += [
        _count_col("copies", "copies", lt.h2d_count + lt.d2h_count, 4),
        _ns_col("sync", "sync", lt.sync_ns, 6),
        _text_col("site", "call site", site_labels, lt.site, 5, cap=48, min_width=12),
    ]
    kernel_match = text_match(lt.kernels, lt.kernel)
    site_match = text_match(site_labels, lt.site)
    title = f"{t.name}: {len(lt):,} launches"
    return Side(title, tuple(cols), _entity_map(keys, len(lt)), lambda n: kernel_match(n) | site_match(n), name=t.name)


# ------------------------------------------------------------------- kernels
def kernels_table(session: Session) -> Table:
    names = list(dict.fromkeys(k.kernel for t in session.traces for k in t.kernels))
    keys = len(names)
    shared = Side("", (_text_col("kernel", "kernel", names, np.arange(keys), 0, cap=20),), np.arange(keys),
                  text_match(names, np.arange(keys)), shared=True)
    sides = [shared]
    for t in session.traces:
        where = {k.kernel: i for i, k in enumerate(t.kernels)}
        ks = t.kernels

        def arr(get: Callable[[object], int], ks: Sequence[object] = ks) -> np.ndarray:
            return np.array([get(k) for k in ks], dtype=np.int64)

        cols = [
            _count_col("launches", "launches", arr(lambda k: k.launches.count), 0),  # type: ignore[attr-defined]
            _ns_col("copy", "copy", arr(lambda k: k.h2d.ns + k.d2h.ns), 0, dash_zero=True),  # type: ignore[attr-defined]
            _ns_col("kernel_ns", "kernel", arr(lambda k: k.launches.ns), 1),  # type: ignore[attr-defined]
            _bytes_col("h2d", "H2D", arr(lambda k: k.h2d.nbytes), 2),  # type: ignore[attr-defined]
            _bytes_col("d2h", "D2H", arr(lambda k: k.d2h.nbytes), 2),  # type: ignore[attr-defined]
        ]
        if session.link is not None:
            cols.append(_ns_col("modelled", "modelled",
                                arr(lambda k: (k.h2d.modelled_ns or 0) + (k.d2h.modelled_ns or 0)), 3, dash_zero=True))  # type: ignore[attr-defined]
        cols += [
            _count_col("h2d_n", "H2D n", arr(lambda k: k.h2d.count), 4),  # type: ignore[attr-defined]
            _count_col("d2h_n", "D2H n", arr(lambda k: k.d2h.count), 4),  # type: ignore[attr-defined]
            _count_col("syncs", "syncs", arr(lambda k: k.syncs.count), 5),  # type: ignore[attr-defined]
        ]
        entity = np.array([where.get(n, -1) for n in names], dtype=np.int64)
        sides.append(Side(f"{t.name}: {len(ks)} kernels", tuple(cols), entity, name=t.name))
    return Table(tuple(sides), keys, noun="kernels")


# ---------------------------------------------------------------- call sites
def sites_table(session: Session) -> Table:
    def key(t: Trace, i: int) -> tuple[str, str, str]:
        s = t.sites[i].site
        return ("", "", "") if s is None else (t.site_label(s).rsplit(":", 1)[0], s.function, s.text)

    order: dict[tuple[str, str, str], tuple[str, str]] = {}
    for t in session.traces:
        for i, s in enumerate(t.sites):
            order.setdefault(key(t, i), (t.site_label(s.site), s.site.text if s.site else ""))
    keys = list(order)
    labels = [order[k][0] for k in keys]
    texts = [order[k][1] for k in keys]
    index = np.arange(len(keys))
    shared = Side("", (_text_col("site", "call site", labels, index, 0, cap=48, min_width=16),
                       _text_col("code", "code", texts, index, 3, cap=40, min_width=10)),
                  index, lambda n: text_match(labels, index)(n) | text_match(texts, index)(n), shared=True)
    sides = [shared]
    for t in session.traces:
        where = {key(t, i): i for i in range(len(t.sites))}
        ss = t.sites
        kernels = [", ".join(s.kernels) for s in ss]

        def arr(get: Callable[[object], int], ss: Sequence[object] = ss) -> np.ndarray:
            return np.array([get(s) for s in ss], dtype=np.int64)

        cols = [
            _count_col("copies", "copies", arr(lambda s: s.copies.count), 0),  # type: ignore[attr-defined]
            _ns_col("copy", "copy", arr(lambda s: s.copies.ns), 0, dash_zero=True),  # type: ignore[attr-defined]
            _bytes_col("bytes", "bytes", arr(lambda s: s.copies.nbytes), 1),  # type: ignore[attr-defined]
            _count_col("launches", "launches", arr(lambda s: s.launches), 2),  # type: ignore[attr-defined]
        ]
        if session.link is not None:
            cols.append(_ns_col("modelled", "modelled",
                                arr(lambda s: s.copies.modelled_ns or 0), 3, dash_zero=True))  # type: ignore[attr-defined]
        cols += [
            _count_col("syncs", "syncs", arr(lambda s: s.syncs), 4),  # type: ignore[attr-defined]
            _text_col("kernels", "kernels", kernels, np.arange(len(ss)), 5, cap=30),
        ]
        entity = np.array([where.get(k, -1) for k in keys], dtype=np.int64)
        sides.append(Side(f"{t.name}: {len(ss)} call site{'' if len(ss) == 1 else 's'}", tuple(cols), entity, name=t.name))
    return Table(tuple(sides), len(keys), noun="call sites")


# ------------------------------------------------------------------ findings
def finding_rows(session: Session) -> list[tuple[int, int]]:
    """(trace, finding) of every row of the findings table, in table-key order."""
    if session.findings is None:
        return []
    return [(ti, fi) for ti, found in enumerate(session.findings) for fi in range(len(found))]


def findings_table(session: Session) -> Table:
    rows = finding_rows(session)
    assert session.findings is not None or not rows
    found = [session.findings[ti][fi] for ti, fi in rows] if session.findings else []
    traces = [session.traces[ti] for ti, _ in rows]
    index = np.arange(len(rows))
    runs = [t.name for t in traces]
    codes = [f.code for f in found]
    sites = [t.site_label(f.site) for t, f in zip(traces, found)]
    severities = [f.severity for f in found]
    static = [", ".join(f.related) or "-" for f in found]
    messages = [f.message for f in found]

    def nums(get: Callable[[object], int | None]) -> np.ndarray:
        return np.array([get(f) or 0 for f in found], dtype=np.int64)

    lost = nums(lambda f: f.lost_ns)  # type: ignore[attr-defined]
    # unknown savings sort below every known one
    saves = np.array([-1 if f.expected_saving_ns is None else f.expected_saving_ns for f in found], dtype=np.int64)
    cols = []
    if session.paired:
        cols.append(_text_col("run", "run", runs, index, 1, cap=8))
    cols.append(_text_col("code", "rule", codes, index, 0, cap=6))
    ranks = [ranks_text(f.ranks).split(" ", 1)[-1] if f.ranks else "-" for f in found]
    if any(f.ranks for f in found):  # a distributed job: which ranks made each mistake
        cols.append(_text_col("ranks", "ranks", ranks, index, 1, cap=10))
    cols += [
        _text_col("severity", "severity", severities, index, 4, cap=7),
        _text_col("site", "call site", sites, index, 2, cap=40, min_width=14),
        _count_col("count", "count", nums(lambda f: f.count), 3),  # type: ignore[attr-defined]
        _bytes_col("bytes", "bytes", nums(lambda f: f.nbytes), 3),  # type: ignore[attr-defined]
        Column("saves", "saves", lambda e: "nothing" if found[e].unsaved else fmt_ns(found[e].expected_saving_ns),
               saves, NS_WIDTH, priority=0),  # nothing saved beside time lost: the detail panel says why
        Column("lost", "lost", lambda e: fmt_ns(found[e].lost_ns), lost, NS_WIDTH, priority=1),
    ]
    if session.link is not None:
        modelled = nums(lambda f: f.modelled_lost_ns)  # type: ignore[attr-defined]
        cols.append(Column("modelled", "modelled", lambda e: fmt_ns(found[e].modelled_lost_ns),
                           modelled, NS_WIDTH + 1, priority=2))
    cols += [
        _text_col("static", "static", static, index, 2, cap=14),
        _text_col("message", "message", messages, index, 6, cap=200, min_width=20),
    ]
    haystack = [" ".join(parts) for parts in zip(runs, codes, sites, severities, static, messages,
                                                   [ranks_text(f.ranks) for f in found])]
    title = f"{len(rows)} finding{'' if len(rows) == 1 else 's'}"
    return Table((Side(title, tuple(cols), index, text_match(haystack, index), name="findings"),), len(rows),
                 noun="findings")


def findings_of_rank(session: Session, rank: int) -> Scope:
    """The findings table's rows that name `rank` (a finding of several ranks is kept for each of them)."""
    found = session.findings or ()
    keep = np.array([rank in found[ti][fi].ranks for ti, fi in finding_rows(session)], dtype=bool)
    return Scope(f"rank {rank}", keep)


# --------------------------------------------------------------------- ranks
def rank_keys(session: Session) -> list[int | None]:
    """The rows of the ranks table: every rank of the session's jobs in order, then None, the job's row."""
    held = {r.rank for t in session.jobs if t.job is not None for r in t.job.ranks}
    return [*sorted(held), None]


def ranks_table(session: Session) -> Table:
    keys = rank_keys(session)
    labels = ["job" if k is None else str(k) for k in keys]
    index = np.arange(len(keys))
    rank_col = Column("rank", "rank", lambda e: labels[e], index, max(4, *(len(x) for x in labels)), align="left",
                      priority=0)
    sides = [Side("", (rank_col,), index, text_match(labels, index), shared=True)]
    for t in session.jobs:
        assert t.job is not None
        sides.append(_rank_side(t.name, t.job, keys))
    return Table(tuple(sides), len(keys), noun="rows")


def _flow_col(key: str, title: str, flows: Sequence[Flow], priority: int) -> Column:
    """`count / bytes`, as `report` prints a rank's copies and collectives; sorted by bytes."""
    cells = [f"{f.count:,} / {fmt_bytes(f.nbytes)}" for f in flows]
    nbytes = np.array([f.nbytes for f in flows], dtype=np.int64)
    return Column(key, title, lambda e: cells[e], nbytes, max(len(title), *(len(c) for c in cells)),
                  priority=priority)


def _rank_side(name: str, s: JobSummary, keys: Sequence[int | None]) -> Side:
    """One job's side: entity i < len(s.ranks) is its i-th rank, entity len(s.ranks) the job (its totals)."""
    rows = s.ranks
    where = {r.rank: i for i, r in enumerate(rows)}
    entity = np.array([len(rows) if k is None else where.get(k, -1) for k in keys], dtype=np.int64)
    devices = [r.device or "-" for r in rows] + ["-"]
    device_names = list(dict.fromkeys(devices))
    device_codes = np.array([device_names.index(d) for d in devices], dtype=np.int64)

    def ints(per_rank: Sequence[int], job: int) -> np.ndarray:
        return np.array([*per_rank, job], dtype=np.int64)

    j = s.job
    cols = (
        _text_col("device", "device", device_names, device_codes, 4, cap=12),
        _flow_col("h2d", "H2D", [r.totals.h2d for r in rows] + [j.h2d], 0),
        _flow_col("d2h", "D2H", [r.totals.d2h for r in rows] + [j.d2h], 0),
        _count_col("launches", "launches", ints([r.totals.launches.count for r in rows], j.launches.count), 3),
        _count_col("syncs", "syncs", ints([r.totals.syncs.count for r in rows], j.syncs.count), 2),
        _flow_col("collectives", "collectives", [r.collectives for r in rows] + [s.collectives], 1),
        _ns_col("busy", "busy", ints([r.busy_ns for r in rows], s.busy_ns), 0),
        _ns_col("in_collectives", "in collectives", ints([r.collectives.ns for r in rows], s.collectives.ns), 1),
        _ns_col("end", "last end", ints([r.end_ns for r in rows], j.wall_ns), 3),
    )
    title = f"{name}: ranks ({len(rows)} of world size {s.world_size})"
    return Side(title, cols, entity, text_match(device_names, device_codes), name=name)
