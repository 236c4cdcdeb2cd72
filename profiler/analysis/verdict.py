"""Where the time went: the run's verdict (host-, device-, transfer- or sync-bound) with its evidence.

Findings say what is wrong at one line; the verdict says what the run
was, so a user knows which findings can matter at all. The wall time is
split into four parts that do not overlap, from the device's side:

* **kernels**: some kernel was running;
* **copies**: a copy was running and no kernel (copies hidden behind
  compute cost nothing here);
* **idle after a wait**: no device work, because the host had waited for
  the device (a sync, or a blocking copy that waited for queued work) and
  the queue ran dry while it did; the gap lasts until the host issues
  again. Each such gap is charged to the line that made the host wait
  (`profiler.analysis.waits`), not to the line that next launched;
* **idle, host busy**: no device work and no wait behind it: the host was
  doing its own work (Python, data loading, launching one small kernel at
  a time). Such gaps are charged to the line whose operation ended them.

The largest part names the verdict: device-bound, transfer-bound,
sync-bound or host-bound. On the NumPy backend the host thread does the
copies and kernels itself, so there is no queue to drain and no gap is
charged to a wait; and a launch's allocations and frees of its per-launch
device arrays count with its copies (`allocations`): allocating commits
fresh memory there, the first-touch page faults the copies into it paid
before the backend committed it at allocation, and keeping the arrays
resident is what saves both. The evidence figures (busy share, copy and sync share,
launch rate, the lines behind the idle time) come with it, so a report
can show why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Final, Literal

import numpy as np

from ..trace.columns import NULL, exact_sum, saturating_add
from ..trace.model import Run
from ..trace.records import KINDS, Site, relative_file
from ..units import fmt_bytes, fmt_ns
from .replay import Timeline
from .replay.timeline import DEVICE, HOST_EXECUTED, WAIT
from .waits import sync_cause_codes

Kind = Literal["host-bound", "device-bound", "transfer-bound", "sync-bound"]
#: why the device sat idle: a wait drained its queue, the host was busy, before the first or after the last operation
IdleReason = Literal["wait", "host", "start-up", "end"]
#: a gap that starts this soon after a wait ended still counts as the wait's
WAIT_SLACK_NS: Final = 2_000
#: a host-bound run launching at least this often is bound by the launch rate (CUDA's launch alone costs 2-7 µs)
LAUNCH_BOUND_NS: Final = 50_000
#: how many lines behind idle time a verdict keeps
TOP_CAUSES: Final = 5


@dataclass(frozen=True)
class IdleCause:
    """Device idle time charged to one line, for one reason."""

    site: Site | None
    reason: IdleReason
    ns: int
    count: int


@dataclass(frozen=True)
class Verdict:
    """What bounded the run, and the figures that show it (times in ns, shares of the wall time)."""

    kind: Kind
    wall_ns: int
    kernel_ns: int
    copy_ns: int
    wait_idle_ns: int
    host_idle_ns: int
    busy_ns: int
    sync_ns: int
    syncs: int
    launches: int
    mean_kernel_ns: int
    copies: int
    copy_bytes: int
    causes: tuple[IdleCause, ...]
    #: per-launch allocations and frees counted with the copies (the NumPy backend's: module docstring)
    allocations: int = 0

    @property
    def idle_ns(self) -> int:
        return self.wait_idle_ns + self.host_idle_ns

    def share(self, ns: int) -> float:
        return ns / self.wall_ns if self.wall_ns > 0 else 0.0

    @property
    def busy_share(self) -> float:
        """The device busy (a kernel or a copy running), as a share of the wall time."""
        return self.share(self.busy_ns)

    @property
    def launch_interval_ns(self) -> int | None:
        """Wall time per launch between the first and the last device operation: how fast work was issued.

        The start-up before the first operation (imports, reading the data)
        and the time after the last are left out: a training loop that
        launches every 19 µs after 3 s of start-up issues at that rate,
        not at the wall time's.
        """
        if not self.launches:
            return None
        ends = sum(c.ns for c in self.causes if c.reason in ("start-up", "end"))
        return max(self.wall_ns - ends, 0) // self.launches

    def _pct(self, ns: int) -> str:
        return f"{100 * self.share(ns):.0f}%"

    def evidence(self, cwd: str = "", where: Callable[[Site | None], str] | None = None) -> str:
        """One sentence of figures for the verdict; call sites relative to `cwd` (the run's folder), or as `where`
        names them (a notebook's cells)."""
        if self.kind == "device-bound":
            return (f"kernels ran {self._pct(self.kernel_ns)} of the wall time ({self.launches:,} launches, "
                    f"{fmt_ns(self.mean_kernel_ns)} on average)")
        if self.kind == "transfer-bound":
            memory = f", and their device arrays' {self.allocations:,} allocations and frees" if self.allocations else ""
            return (f"copies ran {self._pct(self.copy_ns)} of the wall time with no kernel beside them "
                    f"({self.copies:,} copies, {fmt_bytes(self.copy_bytes)}{memory})")
        most = self.idle_text(cwd, where)
        most = f"; {most}" if most else ""
        if self.kind == "sync-bound":
            return (f"the device sat idle {self._pct(self.wait_idle_ns)} of the wall time after the host waited for it "
                    f"({self.syncs:,} syncs){most}")
        rate = "" if not self.launches else (
            f"; {self.launches:,} launches, one per {fmt_ns(self.launch_interval_ns)} of device activity, "
            f"kernels {fmt_ns(self.mean_kernel_ns)} on average")
        return f"the device sat idle {self._pct(self.host_idle_ns)} of the wall time while the host worked{rate}{most}"

    def idle_text(self, cwd: str = "", where: Callable[[Site | None], str] | None = None) -> str:
        """`most before app.py:12 (4.46 ms, 99 times)`: the largest cause of the idle time the verdict is about
        (waits for sync-bound, host work otherwise); when that is start-up or the end, the largest line after
        it, since that is what a change can target. Empty for device- and transfer-bound runs."""
        if self.kind in ("device-bound", "transfer-bound"):
            return ""
        wanted = ("wait",) if self.kind == "sync-bound" else ("host", "start-up", "end")
        top = next((c for c in self.causes if c.reason in wanted), None)
        if top is None:
            return ""
        most = "most " + cause_text(top, cwd, where)
        if top.site is None:
            line = next((c for c in self.causes if c.reason in wanted and c.site is not None), None)
            most += "" if line is None else ", then " + cause_text(line, cwd, where)
        return most

    def remedy(self) -> str:
        """What kind of change can shorten this run, in one sentence: the verdict's consequence for the user.

        A host-bound run that launches every few tens of µs is bound by the
        launch rate (the fix is fewer, larger launches); one with longer gaps
        by the host's own work between device operations.
        """
        if self.kind == "device-bound":
            return ("the kernels are the limit: copy and sync fixes save little here; faster, fused or fewer kernels "
                    "(less work, lower precision) do")
        if self.kind == "transfer-bound":
            return ("copy less or hide the copies: keep arrays on the device between launches, page-lock buffers "
                    "copied every step, overlap copies with kernels on another stream")
        if self.kind == "sync-bound":
            return ("wait less: keep the values the host reads on the device and read them every N steps or after "
                    "the loop, so that launches can queue")
        interval = self.launch_interval_ns
        if interval is not None and interval <= LAUNCH_BOUND_NS:
            return ("issue fewer, larger launches: fuse kernels (torch.compile, cupy.fuse, a CUDA graph of the step) "
                    "or give each more work (larger batches); copy and sync fixes save little while the host "
                    "cannot launch faster")
        return ("the host's own work between device operations is the limit: overlap it with the device "
                "(prefetch the next batch, DataLoader workers) or take it out of the loop, at the lines named")

    def short(self) -> str:
        """`host-bound (idle 87%)`: the verdict and its deciding figure, for a headline."""
        figure = {"device-bound": ("kernels", self.kernel_ns), "transfer-bound": ("copies", self.copy_ns),
                  "sync-bound": ("idle after waits", self.wait_idle_ns),
                  "host-bound": ("idle", self.host_idle_ns)}[self.kind]
        return f"{self.kind} ({figure[0]} {100 * self.share(figure[1]):.0f}%)"

    def summary(self, cwd: str = "", where: Callable[[Site | None], str] | None = None) -> str:
        """`host-bound: device busy 13%, copies 2%, syncs 4% of 11 s; the device sat idle ...`"""
        return (f"{self.kind}: device busy {100 * self.busy_share:.0f}%, copies {100 * self.share(self.copy_ns):.0f}%, "
                f"syncs {100 * self.share(self.sync_ns):.0f}% of {fmt_ns(self.wall_ns)}; {self.evidence(cwd, where)}")


def cause_text(cause: IdleCause, cwd: str, where: Callable[[Site | None], str] | None = None) -> str:
    """`after app.py:9 (30 ms, 10 times)`, `before the first device operation (start-up, 41 ms)`.

    The site is `where_text` of it, or what `where` calls it (a notebook's `Cell In[3], line 4`).
    """
    if cause.reason == "start-up":
        return f"before the first device operation (start-up, {fmt_ns(cause.ns)})"
    if cause.reason == "end":
        return f"after the last device operation ({fmt_ns(cause.ns)})"
    side = "after" if cause.reason == "wait" else "before"
    site = where_text(cause.site, cwd) if where is None else where(cause.site)
    return f"{side} {site} ({fmt_ns(cause.ns)}, {cause.count:,} times)"


def where_text(site: Site | None, cwd: str = "") -> str:
    """`app.py:12` (the file relative to `cwd`), or `(no call site)`."""
    return "(no call site)" if site is None else f"{relative_file(site.file, cwd)}:{site.line}"


def verdict(run: Run, timeline: Timeline | None = None) -> Verdict | None:
    """The verdict of `run`; None when it recorded no device work (nothing to judge).

    `timeline` is the run's, if the caller has it; it is needed (and
    otherwise inferred) only where the device has a queue to drain, so a
    NumPy-backend run is judged with array operations alone.
    """
    c = run.columns
    wall = max(run.meta.wall_ns, 0)
    device = np.flatnonzero(c.kind_mask("h2d", "d2h", "launch"))
    if device.size == 0 or wall == 0:
        return None
    memory = np.zeros(0, dtype=device.dtype)
    if run.meta.backend in HOST_EXECUTED:  # per-launch device arrays' allocations and frees: with the copies
        memory = np.flatnonzero(c.kind_mask("alloc", "free") & (c.launch != NULL))
        device = np.sort(np.concatenate((device, memory)))
    start = np.clip(c.start_ns[device], 0, wall)
    end = np.clip(saturating_add(c.start_ns[device], c.duration_ns[device]), 0, wall)
    is_kernel = c.kind[device] == KINDS.index("launch")
    kernel_ns = _union(start[is_kernel], end[is_kernel])
    busy_ns = _union(start, end)
    copy_ns = busy_ns - kernel_ns
    causes = _idle_causes(run, timeline, device, start, end, wall)
    wait_idle = sum(ns for (_, reason), (ns, _) in causes.items() if reason == "wait")
    host_idle = wall - busy_ns - wait_idle
    parts: dict[Kind, int] = {"device-bound": kernel_ns, "transfer-bound": copy_ns, "sync-bound": wait_idle,
                              "host-bound": host_idle}
    kind = max(parts, key=lambda k: parts[k])
    syncs = c.kind == KINDS.index("sync")
    launches = int(is_kernel.sum())
    copies = np.flatnonzero(c.kind_mask("h2d", "d2h"))
    ranked = sorted(causes.items(), key=lambda kv: -kv[1][0])[:TOP_CAUSES]
    return Verdict(
        kind=kind, wall_ns=wall, kernel_ns=kernel_ns, copy_ns=copy_ns, wait_idle_ns=wait_idle, host_idle_ns=host_idle,
        busy_ns=busy_ns, sync_ns=exact_sum(c.duration_ns[syncs]), syncs=int(syncs.sum()), launches=launches,
        mean_kernel_ns=exact_sum(c.duration_ns[device[is_kernel]]) // launches if launches else 0,
        copies=int(copies.size), copy_bytes=exact_sum(c.nbytes[copies]),
        causes=tuple(IdleCause(site, reason, ns, n) for (site, reason), (ns, n) in ranked), allocations=int(memory.size),
    )


def _union(start: np.ndarray, end: np.ndarray) -> int:
    """Total length of the union of intervals."""
    if start.size == 0:
        return 0
    order = np.argsort(start, kind="stable")
    s, e = start[order], np.maximum.accumulate(end[order])
    prev_end = np.concatenate(([s[0]], e[:-1]))
    # each interval adds what reaches past everything before it
    return exact_sum(np.maximum(e - np.maximum(s, prev_end), 0))


def _idle_causes(run: Run, tl: Timeline | None, device: np.ndarray, start: np.ndarray, end: np.ndarray,
                 wall: int) -> dict[tuple[Site | None, IdleReason], tuple[int, int]]:
    """(site, reason) -> (idle ns, gaps) for every stretch with no device work in [0, wall].

    Array operations throughout: one epoch of a small LSTM leaves 300,000
    gaps between its launches.
    """
    c = run.columns
    order = np.argsort(start, kind="stable")
    s, reach = start[order], np.maximum.accumulate(end[order])
    gap_end = np.concatenate((s, [wall]))
    gap_start = np.concatenate(([0], reach))
    # the operation whose start ends each gap (none for the last)
    ender = np.concatenate((device[order], [-1]))
    keep = gap_end > gap_start
    gap_start, gap_end, ender = gap_start[keep], gap_end[keep], ender[keep]
    waits = _waits(run, tl)
    drained, wait_site = waits.drainers(gap_start)
    # each gap's reason, and its line: a code into `c.sites` (host) or into `waits.sites` (wait); -1 for none
    reason = np.full(gap_start.size, _HOST, dtype=np.int64)
    line = np.where(ender >= 0, c.site[np.maximum(ender, 0)], -1).astype(np.int64)
    reason[drained] = _WAIT
    line[drained] = wait_site[drained]
    reason[ender < 0] = _END
    reason[gap_end <= int(s[0])] = _START
    line[reason >= _END] = -1
    keys, first, inverse = np.unique(np.stack((reason, line)), axis=1, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    ns = np.zeros(keys.shape[1], dtype=np.int64)
    np.add.at(ns, inverse, (gap_end - gap_start).astype(np.int64))
    counts = np.bincount(inverse, minlength=keys.shape[1])
    out: dict[tuple[Site | None, IdleReason], tuple[int, int]] = {}
    for j in np.argsort(first, kind="stable").tolist():  # in the order the gaps came: ties rank by time
        r, k = int(keys[0, j]), int(keys[1, j])
        table = waits.sites if r == _WAIT else c.sites
        out[(table[k] if k >= 0 else None, _REASONS[r])] = (int(ns[j]), int(counts[j]))
    return out


#: gap reasons as codes, for the array operations above
_HOST, _WAIT, _END, _START = 0, 1, 2, 3
_REASONS: dict[int, IdleReason] = {_HOST: "host", _WAIT: "wait", _END: "end", _START: "start-up"}


class _Waits:
    """The host's waits for the device, as sorted intervals, with the line each one is charged to.

    `site` holds codes into `sites` (-1: no line).
    """

    def __init__(self, begin: np.ndarray, finish: np.ndarray, site: np.ndarray, sites: tuple[Site, ...]) -> None:
        order = np.argsort(begin, kind="stable")
        self.begin = begin[order].astype(np.int64)
        self.finish = finish[order].astype(np.int64)
        self.site = site[order].astype(np.int64)
        self.sites = sites

    def drainers(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each time in `t`: whether the host was waiting as the device ran dry then, and the line charged."""
        if not self.begin.size:
            return np.zeros(t.size, dtype=bool), np.full(t.size, -1, dtype=np.int64)
        k = np.searchsorted(self.begin, t, side="left") - 1
        safe = np.maximum(k, 0)
        drained = (k >= 0) & (t <= self.finish[safe] + WAIT_SLACK_NS)
        return drained, np.where(drained, self.site[safe], -1)


def _waits(run: Run, tl: Timeline | None) -> _Waits:
    """Syncs, and blocking copies that waited for queued work, from the inferred host timeline."""
    c = run.columns
    empty = np.zeros(0, dtype=np.int64)
    if run.meta.backend in HOST_EXECUTED:
        return _Waits(empty, empty, empty, c.sites)
    if tl is None:
        tl = Timeline.of(run)
    after = np.asarray(tl.host_after, dtype=np.int64)
    at = np.concatenate(([0], after[:-1])) + np.asarray(tl.gap, dtype=np.int64)
    role = np.asarray(tl.role)
    waited = after > at
    is_wait = (role == WAIT) & waited
    blocked = (role == DEVICE) & np.asarray(tl.blocking, dtype=bool) & np.asarray(tl.queued, dtype=bool) & waited
    site = c.site.astype(np.int64, copy=True)
    syncs, causes = sync_cause_codes(c)
    site[syncs] = causes
    pick = np.flatnonzero(is_wait | blocked)
    return _Waits(at[pick], after[pick], site[pick], c.sites)
