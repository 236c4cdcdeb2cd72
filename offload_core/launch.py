"""`offload(kernel, *args)`: check, copy, launch, copy back.

A launch runs in two phases. The *check* phase reads every argument and
raises, before a single byte moves, on a wrong count or kind, a dtype
mismatch, a read-only array passed as mutable, a use after move, an alias
between a mutable argument and another, or a borrow a region forbids. The
*transfer* phase then uploads what the annotations say (only for arguments
no region keeps resident), launches, downloads into the caller's own arrays,
synchronises if it downloaded anything, and frees its temporaries. If the
kernel raises, nothing is downloaded, so every host array is exactly as it
was; resident device copies it may have half-written are marked poisoned.

The resident fast path (every argument mapped by a region, looked up by
identity) does no allocation, copy or sync, and builds no event unless
someone subscribed.

Threads (see `scope` and `claims`): a launch may use only the mappings of
its own thread's or task's regions, and those of `shared=True` regions; a
mapping of another owner is a `BorrowError`. A launch that copies, or that
uses a mapping another thread may use too, first claims the host bytes it
touches, so two threads' launches on one array run one after the other.
A launch that had to wait is checked again from the start, since the
mappings it found may have changed meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass
from threading import get_ident
from time import perf_counter_ns
from typing import Any

import numpy as np

from .annotations import Access
from .backends.base import Backend, device_layout
from .borrows import MOVES, MoveRecord, digest, fingerprint, may_overlap
from .claims import CLAIMS, Range
from .errors import AliasError, BorrowError, UseAfterMoveError
from .events import BUS, callsite
from .kernels import Kernel
from .kinds import Kind
from .params import Param, cast_scalar
from .residency import Mapping, byte_bounds, data_pointer
from .scope import Owner, Scope
from .scope import current as current_scope
from .settings import _S, get_backend, get_mode
from .sites import Site

_F64 = np.float64


def device_view(be: Backend, m: Mapping, host: np.ndarray[Any, Any], what: str) -> Any:
    """The device twin of `host`, an array lying inside mapping `m`."""
    if host is m.host:
        return m.device
    if not m.derivable:
        raise BorrowError(
            f"{what} is a view into {m.where()}, whose host array is not contiguous, so the "
            "view has no device twin; pass the mapped array itself or map a contiguous one"
        )
    return be.view(m.device, data_pointer(host) - m.ptr, host.shape, host.strides, host.dtype)


def check_resident(m: Mapping, param: Param, host: np.ndarray[Any, Any], what: str) -> None:
    """Borrow rules for an argument a region keeps resident."""
    access = param.access
    assert access is not None
    if m.moved:
        raise UseAfterMoveError(f"{what}: {m.where()} was moved into an Owned parameter and cannot be used again")
    if m.poisoned:
        raise BorrowError(f"{what}: the device copy of {m.where()} is undefined ({m.poisoned}); call update_device() on it first")
    if access.writes and m.access is Access.IN:
        raise BorrowError(f"{what}: {m.where()} is mapped In (read-only), so it cannot be passed as {access.value}")
    if access.reads and not m.initialized:
        raise BorrowError(
            f"{what}: {m.where()} is mapped Out and no launch has written it yet, so it cannot be read; "
            "map it without Out to upload its host data"
        )
    if access.copies_back and not host.flags.writeable:
        raise BorrowError(f"{what} is {access.value} but the host array is read-only")
    if access is Access.OWNED and host is not m.host:
        raise BorrowError(f"{what} is a view into {m.where()}; only a whole mapped array can be moved into an Owned parameter")
    if m.checks and digest(m.host) != m.digest:
        raise BorrowError(
            f"{what}: host code wrote {m.where()} while it was mapped; call update_device() after "
            "host writes, or leave the region first"
        )


def _what(k: Kernel, p: Param) -> str:
    return f"kernel '{k.name}': parameter {p.describe()}"


def offload(k: Kernel, /, *args: Any, **kwargs: Any) -> None:
    """Launch kernel `k` on `args`, with the copies its annotations imply.

    Outside a region (or in naive mode) every array argument is copied to the
    device before and, for `InOut`/`Out`, back after the launch, which then
    synchronises. Arrays a `region` keeps resident are used in place.
    """
    if not isinstance(k, Kernel):
        name = getattr(k, "__name__", type(k).__name__)
        raise TypeError(f"offload() launches a @kernel or RawKernel, got {name!r}; decorate it with @kernel")
    params = k.params
    n = len(params)
    be = _S.backend or get_backend()
    present = be.present
    scope = current_scope()
    owner = scope.owner if scope is not None else None
    me = get_ident()
    if k.plans and not kwargs and len(args) == n:
        # The same resident arrays as a recent launch of this thread and owner,
        # and no mapping changed since (any change drops the plans): only
        # scalars and writability are new.
        for plan in k.plans:
            if plan.present is not present or plan.owner is not owner or plan.thread != me:
                continue
            for i, host in plan.hosts:
                if args[i] is not host or (i in plan.writable and not host.flags.writeable):
                    break
            else:
                _launch_planned(be, k, plan, args, scope)
                return
    values = args if not kwargs and len(args) == n else k.bind(args, kwargs)
    be.check_kernel(k)
    version = present.version
    by_id = present.by_id
    dev_args: list[Any] = [None] * n
    mappings: list[Mapping | None] = [None] * n
    arrays: list[int] = []
    temps = 0
    contended = False  # uses a mapping another thread may use too

    # ---- check phase: nothing is copied or written until every check passed.
    # Messages are built only on failure: this loop runs on every launch.
    _cast_scalars(k, values, dev_args)
    for i in k.array_indices:
        p = params[i]
        v = values[i]
        want = p.dtype
        if type(v) is not np.ndarray and not isinstance(v, np.ndarray):
            if be.is_device_array(v):
                if want is not None and v.dtype != want:
                    raise TypeError(f"{_what(k, p)} takes {want.name}, got a device array of {v.dtype.name}")
                dev_args[i] = v
                arrays.append(i)
                continue
            raise TypeError(f"{_what(k, p)} takes a NumPy array, got {type(v).__name__}")
        if want is not None and v.dtype is not want and v.dtype != want:
            raise TypeError(f"{_what(k, p)} takes {want.name}, got {v.dtype.name}; convert with .astype(np.{want.name})")
        m = by_id.get(id(v))
        if m is None and present.mappings:
            m = present.find(v)
        if m is not None:
            if m.owner is not owner or m.thread != me or m.shared:
                if m.owner is not owner and not m.shared:
                    raise BorrowError(f"{_what(k, p)}: {m.foreign()}")
                contended = True
            if m.moved or m.poisoned or m.checks or not m.initialized or m.access is not Access.INOUT or (
                p.copies_back and not v.flags.writeable) or (p.access is Access.OWNED and v is not m.host):
                check_resident(m, p, v, _what(k, p))
            dev_args[i] = m.device if v is m.host else device_view(be, m, v, _what(k, p))
            mappings[i] = m
        else:
            _check_host(be, k, p, v, present)
            temps += 1
        arrays.append(i)

    if k.alias_pairs:
        _check_aliases(be, k, values, mappings)
    capture = present.capture
    if capture is not None and capture.owner is owner and capture.thread == me:  # r.capture(): record, run later
        if capture.naive:
            capture.record_call(k, args, kwargs)
        else:
            capture.record_launch(k, dev_args, mappings, temps)
        return

    # ---- transfer phase
    claim = CLAIMS.claim(lambda: _ranges(k, values, mappings, arrays)) if temps or contended else None
    if claim is not None and (claim.waited or present.version != version):
        # Another thread's launch or region went first, or changed a mapping
        # after the checks: what they found may be stale (a mapping released,
        # moved, written). Check it all again; holding no claim while doing so
        # keeps claims free of deadlock.
        CLAIMS.release(claim)
        offload(k, *args, **kwargs)
        return
    try:
        subs = BUS.subscribers
        index = next(BUS.launch_ids)
        BUS.launches = index + 1
        region_id = scope.regions[-1] if scope is not None else None
        plannable = not contended and not kwargs and not k.owns
        if subs:
            _run_traced(be, k, params, values, dev_args, mappings, arrays, index, callsite(2), get_mode(), region_id)
            if not temps and plannable:
                _make_plan(k, present, values, dev_args, mappings, owner, me)
        elif temps:
            _run_quiet(be, k, params, values, dev_args, mappings, arrays)
        else:  # every array is resident: no copy, no allocation, no sync
            try:
                be.launch(k, dev_args)
            except BaseException as exc:
                _poison(be, k, params, mappings, arrays, exc)
                raise
            if plannable:
                _make_plan(k, present, values, dev_args, mappings, owner, me)
        if k.mutable:
            _settle(present, k, values, mappings)
    finally:
        if claim is not None:
            CLAIMS.release(claim)


def _ranges(k: Kernel, values: Any, mappings: list[Mapping | None], arrays: list[int]) -> list[Range]:
    """The host bytes a launch reads or writes, for its claim."""
    out: list[Range] = []
    for i in arrays:
        v = values[i]
        if not isinstance(v, np.ndarray):
            continue  # a device array: no host memory
        m = mappings[i]
        lo, hi = (m.lo, m.hi) if m is not None and v is m.host else byte_bounds(v)
        out.append((lo, hi, k.params[i].writes))
    return out


@dataclass(slots=True)
class Plan:
    """A launch whose arrays are all resident, kept for repeating it cheaply.

    Valid while no mapping of its backend changes: `PresentTable.invalidate()`
    (called on every mapping change) drops all plans, which also releases
    the arrays a plan refers to.
    """

    present: Any
    owner: Owner | None
    thread: int
    hosts: tuple[tuple[int, np.ndarray[Any, Any]], ...]
    writable: frozenset[int]
    template: list[Any]
    dirty: tuple[Mapping, ...]


#: plans kept per kernel: enough for launches that alternate arrays (ping-pong stencils)
PLANS_PER_KERNEL = 4


def _make_plan(
    k: Kernel, present: Any, values: Any, dev_args: list[Any], mappings: list[Mapping | None], owner: Owner | None,
    thread: int,
) -> None:
    for i in k.array_indices:
        m = mappings[i]
        # Only the mapped arrays themselves: a view made afresh per launch would
        # never match, and host-write checks need the full path.
        if m is None or m.checks or values[i] is not m.host:
            return
    plan = Plan(
        present,
        owner,
        thread,
        tuple((i, values[i]) for i in k.array_indices),
        frozenset(i for i in k.array_indices if k.params[i].copies_back),
        list(dev_args),
        tuple(dict.fromkeys(mappings[i] for i in k.mutable)),  # type: ignore[misc]
    )
    if len(k.plans) >= PLANS_PER_KERNEL:
        k.plans.pop(0)
    k.plans.append(plan)
    if k not in present.plans:
        present.plans.append(k)


def _launch_planned(be: Backend, k: Kernel, plan: Plan, args: tuple[Any, ...], scope: Scope | None) -> None:
    dev_args = plan.template.copy()
    _cast_scalars(k, args, dev_args)
    index = next(BUS.launch_ids)
    BUS.launches = index + 1
    try:
        if BUS.subscribers:
            region_id = scope.regions[-1] if scope is not None else None
            timer = be.timer
            if timer is None:  # a host-clock backend: the launch's own interval
                trace = _Trace(be, k.name, index, callsite(3), get_mode(), region_id)
                mark = trace.mark()
                be.launch(k, dev_args)
                trace.device("launch", mark)
            else:  # a device: sampled, no device event for most launches (launchtiming)
                site = callsite(3)
                token = timer.start(k.name)
                issued = perf_counter_ns()
                be.launch(k, dev_args)
                timer.finish(k.name, token, issued, index, site, get_mode(), region_id)
        else:
            be.launch(k, dev_args)
    except BaseException as exc:
        for m in plan.dirty:
            m.poisoned = f"kernel '{k.name}' raised {type(exc).__name__} while it held the array mutably"
        be.present.invalidate()
        raise
    for m in plan.dirty:
        m.dirty = True


def _cast_scalars(k: Kernel, values: Any, dev_args: list[Any]) -> None:
    """Scalars to their exact NumPy types; the common exact cases without a call."""
    params = k.params
    for i in k.scalar_indices:
        p = params[i]
        v = values[i]
        kind = type(v)
        if kind is p.scalar:
            dev_args[i] = v
        elif kind is float and p.scalar is _F64:
            dev_args[i] = _F64(v)
        else:
            dev_args[i] = cast_scalar(p, v, f"kernel '{k.name}'")


def _check_host(be: Backend, k: Kernel, p: Param, v: np.ndarray[Any, Any], present: Any) -> None:
    """Checks for a host array no region keeps resident (it will be copied)."""
    if v.dtype.hasobject:
        raise TypeError(f"{_what(k, p)}: object arrays cannot be copied to a device")
    if be.native_only and not v.dtype.isnative:
        raise TypeError(
            f"{_what(k, p)}: the {be.name} backend needs native byte order, got {v.dtype.str}; "
            "convert with .astype(a.dtype.newbyteorder('='))"
        )
    if MOVES:
        record = MOVES.find(v)
        if record is not None:
            raise UseAfterMoveError(f"{_what(k, p)}: the array was {record.where()} and cannot be used again")
    if present.mappings:
        partial = present.overlap(v)
        if partial is not None:
            raise BorrowError(f"{_what(k, p)} overlaps {partial.where()} without lying inside it")
    if p.copies_back and not v.flags.writeable:
        raise BorrowError(f"{_what(k, p)} is {p.access.value} but the host array is read-only; pass a writable array")  # type: ignore[union-attr]


def _check_aliases(be: Backend, k: Kernel, values: Any, mappings: list[Mapping | None]) -> None:
    """No mutable argument may share memory with another argument of the launch."""
    exact = k.alias_check == "exact"
    for i, j in k.alias_pairs:
        vi, vj = values[i], values[j]
        on_host = isinstance(vi, np.ndarray)
        if on_host != isinstance(vj, np.ndarray):
            continue  # host and device memory never overlap
        if on_host:
            mi, mj = mappings[i], mappings[j]
            if mi is not None and mj is not None and mi is not mj:
                continue  # distinct mappings never overlap
            overlap = may_overlap(vi, vj, exact)
        else:
            overlap = be.device_overlap(vi, vj)
        if overlap:
            pi, pj = k.params[i], k.params[j]
            hint = "" if exact else " (a bounds check; @kernel(alias_check='exact') tests element overlap)"
            raise AliasError(
                f"kernel '{k.name}': parameter {pi.describe()} and parameter {pj.describe()} share memory, "
                f"and one is mutable; pass separate arrays or a copy{hint}"
            )


def _run_quiet(
    be: Backend,
    k: Kernel,
    params: tuple[Param, ...],
    values: Any,
    dev_args: list[Any],
    mappings: list[Mapping | None],
    arrays: list[int],
) -> None:
    temps: list[int] = []
    launched = False
    try:
        for i in arrays:
            if mappings[i] is not None or dev_args[i] is not None:
                continue
            v = values[i]
            dev = be.empty(v.shape, v.dtype, device_layout(v))
            dev_args[i] = dev
            temps.append(i)
            if params[i].reads:
                be.upload(v, dev)
        launched = True
        be.launch(k, dev_args)
        downloaded = False
        for i in temps:
            if params[i].copies_back:
                be.download(dev_args[i], values[i])
                downloaded = True
        if downloaded:
            be.synchronize()
    except BaseException as exc:
        if launched:
            _poison(be, k, params, mappings, arrays, exc)
        raise
    finally:
        if temps:
            be.settle_uploads()  # no host write may race an upload still reading it
            for i in temps:
                be.free(dev_args[i])


class _Trace:
    """Builds the events of one traced launch with as little per-event work as possible.

    The fields every event of the launch shares are fixed once; an event is
    one row (a tuple in `Event`'s field order) and one bus call. Host-timed intervals
    (allocations, frees, syncs, and everything on a host-clocked backend)
    are plain `perf_counter_ns` differences.
    """

    __slots__ = ("be", "kernel", "launch", "site", "mode", "region", "host_clock")

    def __init__(self, be: Backend, kernel: str, launch: int, site: Site | None, mode: str,
                 region: int | None) -> None:
        self.be = be
        self.kernel = kernel
        self.launch = launch
        self.site = site
        self.mode = mode
        self.region = region  # the innermost region of the launching context
        self.host_clock = be.host_clock

    def host(self, kind: Kind, start: int, nbytes: int = 0, pinned: bool = False, param: str | None = None,
             array: int | None = None) -> None:
        BUS.emit_row((kind, nbytes, pinned, start, perf_counter_ns() - start, self.kernel, self.launch, param, array,
                      self.site, self.mode, self.region, None))

    def device(self, kind: Kind, mark: Any, nbytes: int = 0, pinned: bool = False, param: str | None = None,
               array: int | None = None, fp: str | None = None) -> None:
        if self.host_clock:
            BUS.emit_row((kind, nbytes, pinned, mark, perf_counter_ns() - mark, self.kernel, self.launch, param,
                          array, self.site, self.mode, self.region, fp))
        else:
            BUS.emit_timed(self.be.since(mark), kind=kind, nbytes=nbytes, pinned=pinned, kernel=self.kernel,
                           launch=self.launch, param=param, array=array, callsite=self.site, mode=self.mode,
                           region=self.region, fingerprint=fp)

    def mark(self) -> Any:
        return perf_counter_ns() if self.host_clock else self.be.mark()


def _run_traced(
    be: Backend,
    k: Kernel,
    params: tuple[Param, ...],
    values: Any,
    dev_args: list[Any],
    mappings: list[Mapping | None],
    arrays: list[int],
    index: int,
    site: Site | None,
    mode: str,
    region: int | None,
) -> None:
    """`_run_quiet` with one event per operation; kept separate so the quiet path stays lean."""
    trace = _Trace(be, k.name, index, site, mode, region)
    temps: list[tuple[int, int, bool]] = []  # (param index, host address, pinned)
    launched = False
    fingerprints = bool(BUS.fingerprinting)
    try:
        for i in arrays:
            if mappings[i] is not None or dev_args[i] is not None:
                continue
            v = values[i]
            name = params[i].name
            start = perf_counter_ns()
            dev_args[i] = be.empty(v.shape, v.dtype, device_layout(v))  # no other reference: see the frees below
            ptr = data_pointer(v)
            temps.append((i, ptr, False))
            trace.host("alloc", start, v.nbytes, False, name, ptr)
            if params[i].reads:
                mark = trace.mark()
                be.upload(v, dev_args[i])
                pinned = be.is_pinned(v)
                temps[-1] = (i, ptr, pinned)
                trace.device("h2d", mark, v.nbytes, pinned, name, ptr, fingerprint(v) if fingerprints else None)
        launched = True
        timer = be.timer
        if timer is None:
            mark = trace.mark()
            be.launch(k, dev_args)
            trace.device("launch", mark)
        else:
            token = timer.start(k.name)
            issued = perf_counter_ns()
            be.launch(k, dev_args)
            timer.finish(k.name, token, issued, index, site, mode, region)
        downloaded = False
        for i, ptr, pinned in temps:
            if params[i].copies_back:
                v = values[i]
                mark = trace.mark()
                be.download(dev_args[i], v)
                fp = None
                if fingerprints:
                    be.synchronize()  # the host bytes are final only once the copy has landed
                    fp = fingerprint(v)
                trace.device("d2h", mark, v.nbytes, be.is_pinned(v), params[i].name, ptr, fp)
                downloaded = True
        if downloaded:
            start = perf_counter_ns()
            be.synchronize()
            trace.host("sync", start)
            be.flush_events()
    except BaseException as exc:
        if launched:
            _poison(be, k, params, mappings, arrays, exc)
        raise
    finally:
        if temps:
            be.settle_uploads()
        for i, ptr, pinned in temps:
            start = perf_counter_ns()
            be.free(dev_args[i])
            # the last reference: the memory goes back (a pool's, or the C library's, which may return it to the
            # operating system) inside the free's record, where a fix that drops the free can price it
            dev_args[i] = None
            trace.host("free", start, values[i].nbytes, pinned, params[i].name, ptr)


def _poison(
    be: Backend, k: Kernel, params: tuple[Param, ...], mappings: list[Mapping | None], arrays: list[int],
    exc: BaseException,
) -> None:
    """A kernel raised: the device copies it held mutably are no longer trustworthy."""
    for i in arrays:
        m = mappings[i]
        if m is not None and params[i].writes:
            m.poisoned = f"kernel '{k.name}' raised {type(exc).__name__} while it held the array as {params[i].access.value}"  # type: ignore[union-attr]
            be.present.invalidate()


def _settle(present: Any, k: Kernel, values: Any, mappings: list[Mapping | None]) -> None:
    """After a successful launch: record writes to resident arrays, freeze moved ones."""
    for i in k.mutable:
        m = mappings[i]
        if m is not None:
            m.dirty = True
            if not m.initialized:  # an Out mapping's first write: plans made before are stale
                m.initialized = True
                present.invalidate()
        if k.params[i].access is Access.OWNED:
            v = values[i]
            if not isinstance(v, np.ndarray):
                continue
            if m is not None:
                m.moved = True
                m.dirty = False
                present.invalidate()
            lo, hi = byte_bounds(v)
            MOVES.add(v, MoveRecord(lo, hi, k.name, k.params[i].name, callsite()))
            v.flags.writeable = False
