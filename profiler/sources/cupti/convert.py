"""CUPTI activity records and intercepted calls -> `profiler.model.Record`s in issue order.

The trace model was shaped by offload_core's events; a CUPTI capture maps
onto it so that summaries, detectors, reports, the gate and the TUI read a
plain CuPy or PyTorch program exactly as they read an offload_core one:

* H2D and D2H copies become `h2d`/`d2h` records: device start and
  duration, bytes, `pinned` when the host side was page-locked, `param`
  naming the host memory kind (`"pageable buffer"`), `array` the host
  address and `fingerprint` the digest the callback took of the host bytes.
* Kernels become `launch` records (numbered in issue order, so that
  per-launch summaries and the launch-interval rules work); host-blocking
  synchronisations become `sync` records.
* A blocking D2H (a synchronous API, or a copy into pageable memory, which
  CUDA completes before returning) is a wait for the device that CUPTI
  reports as no synchronisation at all; it gets a `sync` record of its own,
  the time from the call's entry to the copy's start, unless the same
  Python instruction synchronises explicitly right after (`x.item()` in
  PyTorch), so that one wait is counted once.

Issue order is correlation-id order: CUPTI numbers API calls from one
counter as they are made, while device timestamps interleave across
streams. Device-to-device copies (within a device: `d2d` with `device`
and `peer` equal; between peers: `peer` the destination), memsets and
NCCL's kernels (`collective` records named by the kernel: every NCCL
collective and point-to-point transfer runs as one) are records of their
own. What the model still has no kind for (host-to-host copies, copies of
an unknown kind) is counted in `Leftovers`, so that the CLI can say what
the trace leaves out; streams' waits on events are not recorded at all
(`tracer`: no SYNCHRONIZATION records).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Sequence, Union

from ...trace.columns import ColumnsBuilder, RecordTable
from ...trace.records import Record, Site
from ..sitecache import SiteCache
from .activity import ApiCall, Capture, Copy, Kernel, Memset, Sync
from .apis import COPY, LAUNCH, MEMSET, SYNC

Activity = Union[Copy, Memset, Kernel, Sync]


@dataclass(frozen=True)
class Leftovers:
    """Activity the trace model cannot hold, by kind: (count, bytes)."""

    device_copies: tuple[int, int] = (0, 0)
    memsets: tuple[int, int] = (0, 0)

    def describe(self) -> str:
        """One line for the CLI, or "" when nothing was left out."""
        from ...units import fmt_bytes

        parts = []
        if self.device_copies[0]:
            parts.append(f"{self.device_copies[0]} device-side copies ({fmt_bytes(self.device_copies[1])})")
        if self.memsets[0]:
            parts.append(f"{self.memsets[0]} memsets ({fmt_bytes(self.memsets[1])})")
        return ", ".join(parts)


@dataclass(frozen=True)
class Converted:
    #: in issue order; a `RecordTable` (records built on demand) unless a value did not fit the columns
    records: Sequence[Record]
    leftovers: Leftovers
    #: launches whose site was taken from a sampled launch of the same kernel
    inferred_sites: int = 0
    #: activities by kind (a copy by its direction) whose call CUPTI did not call back for (`call_of`)
    unheard: tuple[tuple[str, int], ...] = ()

    def unheard_text(self) -> str:
        """One warning line about activities whose call went unheard, or ""."""
        if not self.unheard:
            return ""
        kinds = ", ".join(f"{n:,} {kind}" for kind, n in self.unheard)
        return (f"CUPTI did not call back for the calls that made {kinds} record(s): they have no call site, and "
                "a host sync those calls made is missing from the trace")


#: what an activity whose call went unheard is counted as (a copy: by its direction)
_UNHEARD_KIND: dict[type, str] = {Memset: "memset", Kernel: "launch", Sync: "sync"}
#: the roles of the calls that may issue it: a copy or memset call may run a kernel of the runtime's own (a
#: strided copy), so a kernel takes such a call's site; a CUDA graph's launch (`_GRAPH`) may issue anything
_ISSUERS: dict[type, frozenset[str]] = {Copy: frozenset({COPY}), Memset: frozenset({MEMSET}),
                                        Kernel: frozenset({LAUNCH, COPY, MEMSET}), Sync: frozenset({SYNC})}
_GRAPH = "GraphLaunch"


def call_of(calls: dict[int, ApiCall], a: Activity) -> ApiCall | None:
    """The intercepted call that issued `a`, by its correlation id or a memcpy's runtime one; None if none did.

    A copy made through the runtime is two calls (the runtime call and the
    driver call inside it); the tracer reads the arguments of the outer one
    only, so the runtime call is preferred when it has them.

    A call that cannot have issued it is never the answer (`_ISSUERS`).
    When CUPTI does not call back for the call that issued an activity, the
    activity's record still carries a correlation id, that of a call CUPTI
    did call back for (on the H200, 672 `.item()` copies of
    word_language_model's last evaluation all named one call on the LSTM's
    forward line); taking it would charge every such copy to that line.
    """
    call = calls.get(a.correlation)
    if isinstance(a, Copy) and a.runtime_correlation and (call is None or call.count is None):
        outer = calls.get(a.runtime_correlation)
        if outer is not None:
            call = outer
    if call is not None and call.role not in _ISSUERS[type(a)] and _GRAPH not in call.name:
        return None
    return call


def blocking(copy: Copy, call: ApiCall | None) -> bool:
    """Whether the host thread waited for this D2H copy to finish."""
    return copy.direction == "d2h" and ((call is not None and call.synchronous) or copy.dst_kind == "pageable")


def cxx_demangler() -> Callable[[Iterable[str]], dict[str, str]] | None:
    """A demangler for C++ kernel names (PyTorch's) through binutils' `c++filt`, if it is installed."""
    tool = shutil.which("c++filt")
    if tool is None:
        return None

    def demangle(names: Iterable[str]) -> dict[str, str]:
        todo = sorted({n for n in names if n.startswith("_Z")})
        if not todo:
            return {}
        try:
            out = subprocess.run([tool], input="\n".join(todo), capture_output=True, text=True, timeout=60,
                                 check=True).stdout.splitlines()
        except (OSError, subprocess.SubprocessError):
            return {}
        return dict(zip(todo, out)) if len(out) == len(todo) else {}

    return demangle


def convert(capture: Capture, mode: str = "batched",
            demangle: Callable[[Iterable[str]], dict[str, str]] | None = None, infer_launch_sites: bool = False
            ) -> Converted:
    """The capture's records in issue order, times relative to `capture.t0`; kernel names demangled if asked.

    With `infer_launch_sites` (launch sites were sampled, `sampling`), a
    launch the callbacks did not see takes the site of the latest sampled
    launch of the same kernel before it, else of the first one after it.
    """
    if demangle is not None:
        names = demangle(k.name for k in capture.kernels)
        if names:
            kernels = tuple(Kernel(k.correlation, names.get(k.name, k.name), k.start, k.end, k.stream, k.device)
                            for k in capture.kernels)
            capture = replace(capture, kernels=kernels)
    calls = capture.calls
    t0 = capture.t0
    order: list[tuple[int, int, int, Activity, ApiCall | None]] = []
    device, memsets = [0, 0], [0, 0]
    missed: dict[str, int] = {}
    activities: list[Activity] = [*capture.copies, *capture.kernels, *capture.syncs, *capture.memsets]
    for a in activities:
        if isinstance(a, Copy) and a.direction not in ("h2d", "d2h", "d2d", "p2p"):
            device[0] += 1
            device[1] += a.nbytes
            continue
        call = call_of(calls, a)
        if call is None and a.correlation in calls:  # it named a call of another kind: its own went unheard
            kind = a.direction if isinstance(a, Copy) else _UNHEARD_KIND[type(a)]
            missed[kind] = missed.get(kind, 0) + 1
        key = call.correlation if call is not None else a.correlation
        order.append((key, a.start, len(order), a, call))
    order.sort(key=lambda t: (t[0], t[1], t[2]))

    cache = SiteCache()
    sites = [cache.get(call.site if call is not None else None) for _, _, _, _, call in order]
    inferred = 0
    # each kernel's kind, decided once: an NCCL kernel is a collective, the rest are launches
    collective = [type(a) is Kernel and is_collective(a.name) for _, _, _, a, _ in order]  # type: ignore[union-attr]
    if infer_launch_sites:  # before any record is made: a frozen record would have to be made twice
        at = [n for n, (_, _, _, a, _) in enumerate(order) if type(a) is Kernel and not collective[n]]
        launch_sites = [sites[n] for n in at]
        inferred = infer_sites([order[n][3].name for n in at], launch_sites)  # type: ignore[union-attr]
        for n, site in zip(at, launch_sites):
            sites[n] = site
    rows = ColumnsBuilder()
    add = rows.add
    launch = 0
    for n, (_, _, _, a, call) in enumerate(order):
        site = sites[n]
        if isinstance(a, Kernel) and collective[n]:
            add("collective", a.start - t0, max(a.end - a.start, 0), kernel=a.name, site=site, mode=mode,
                device=a.device)
        elif isinstance(a, Kernel):
            add("launch", a.start - t0, max(a.end - a.start, 0), kernel=a.name, launch=launch, site=site, mode=mode)
            launch += 1
        elif isinstance(a, Memset):
            add("memset", a.start - t0, max(a.end - a.start, 0), a.nbytes, site=site, mode=mode, device=a.device)
        elif isinstance(a, Copy) and a.direction in ("d2d", "p2p"):
            add("d2d", a.start - t0, max(a.end - a.start, 0), a.nbytes, site=site, mode=mode, device=a.device,
                peer=a.peer if a.peer is not None else
                a.device if a.direction == "d2d" else None)  # a p2p memcpy record names no peer
        elif isinstance(a, Sync):
            add("sync", a.start - t0, max(a.end - a.start, 0), site=site, mode=mode)
        elif isinstance(a, Copy):
            _add_copy(add, a, call, site, t0, mode)
            if blocking(a, call) and not _synced_next(order, n, call):
                enter = call.enter_ns if call is not None and call.enter_ns else a.start
                enter = min(enter, a.start)
                add("sync", enter - t0, a.start - enter, site=site, mode=mode)
    leftovers = Leftovers((device[0], device[1]), (memsets[0], memsets[1]))
    return Converted(_records(rows), leftovers, inferred, tuple(sorted(missed.items())))


def _records(rows: ColumnsBuilder) -> Sequence[Record]:
    """The rows as records built on demand (`RecordTable`), or built now where the columns cannot hold a value."""
    try:
        return RecordTable(rows.columns())
    except OverflowError:  # an integer beyond the columns' 64 bits: the trace file then holds rows too
        return tuple(map(Record, *rows.fields.values()))


def is_collective(kernel: str) -> bool:
    """Whether a kernel is NCCL's (`ncclDevKernel_AllReduce_Sum_f32_RING_LL`, `ncclKernel_...`): a collective or a
    point-to-point transfer of a distributed job, which the trace records as such rather than as a launch."""
    return kernel.startswith("nccl")


def infer_sites(kernels: Sequence[str], sites: list[Site | None]) -> int:
    """Give site-less launches the site of a sampled launch of the same kernel; how many were given one.

    `kernels` and `sites` are the launches' kernel names and sites in issue
    order; `sites` is filled in place: the latest sampled site of the kernel
    before the launch, else the first one after it.
    """
    latest: dict[str, Site] = {}
    first: dict[str, Site] = {}
    before: list[int] = []  # launches ahead of their kernel's first sample
    inferred = 0
    for i, (kernel, site) in enumerate(zip(kernels, sites)):
        if site is not None:
            latest[kernel] = site
            first.setdefault(kernel, site)
            continue
        known = latest.get(kernel)
        if known is None:
            before.append(i)
            continue
        sites[i] = known
        inferred += 1
    for i in before:
        known = first.get(kernels[i])
        if known is not None:
            sites[i] = known
            inferred += 1
    return inferred


def _add_copy(add: Callable[..., None], a: Copy, call: ApiCall | None, site: Site | None, t0: int, mode: str
              ) -> None:
    direction = a.direction
    if direction != "h2d" and direction != "d2h":
        raise ValueError(f"not a host<->device copy: {direction}")  # the caller passes only those on
    host = None
    fingerprint = None
    if call is not None:
        host = call.src if direction == "h2d" else call.dst
        if call.count == a.nbytes:
            fingerprint = call.fingerprint
    add(direction, a.start - t0, max(a.end - a.start, 0), a.nbytes, a.host_kind == "pinned",
        param=f"{a.host_kind} buffer", array=host or None, site=site, mode=mode, fingerprint=fingerprint)


def _synced_next(order: list[tuple[int, int, int, Activity, ApiCall | None]], n: int, call: ApiCall | None) -> bool:
    """Whether the next call after entry `n` is an explicit host sync made by the same Python instruction."""
    if call is None or call.instr is None:
        return False
    for i in range(n + 1, len(order)):  # by index: a slice would copy the rest of the run for every copy
        a, other = order[i][3], order[i][4]
        if other is not None and other.correlation == call.correlation:
            continue  # more records of the same call
        return isinstance(a, Sync) and other is not None and other.instr == call.instr
    return False
