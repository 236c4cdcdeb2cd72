"""`region(*arrays)`: keep arrays resident so a loop of launches copies once.

Entry maps every listed array (H2D, or only an allocation for `Out(z)`),
launches inside use the device copies in place, and exit copies back only
the arrays a launch wrote, then frees. This is the batched path. In naive
mode a region maps nothing, so the same program runs its naive path.

Semantics a user can rely on:

* **Nesting.** Mappings are reference counted, as in OpenMP `target data`:
  an inner region that lists an array already mapped (or a view lying
  inside one) only takes a reference, and the copy back happens when the
  last reference goes.
* **Access.** `region(x)` maps for reading and writing; `region(In(x))`
  maps read-only (a mutable launch of it raises `BorrowError`, since its
  result would never come back); `region(Out(z))` allocates without
  uploading, and no launch may read it before one writes it.
* **Exceptions.** A region left by an exception copies nothing back: every
  host array keeps the value it had at entry (or at the last
  `update_host`), never a half-finished one.
* **Checking.** With `check=True` (or `OFFLOAD_CHECK=1`) a host write to a
  mapped array is detected (by content digest) when a launch uses the
  array, when `update_host` would overwrite it and at exit, and raises
  `BorrowError` naming it.
* **Threads and tasks.** A region belongs to the thread or asyncio task
  that opened it (and to tasks created inside it): launches, regions and
  `update_host`/`update_device` elsewhere that touch its arrays raise
  `BorrowError`, rather than silently using (or changing) device data the
  other flow of control knows nothing about. `region(..., shared=True)`
  lends its arrays to every thread; launches on them are then serialised
  (see `scope` and `claims`), and the region's exit waits for the ones
  under way.
"""

from __future__ import annotations

import sys
import threading
import warnings
from types import TracebackType
from typing import Any, Sequence

import numpy as np

from .annotations import Access, MapRequest
from .backends.base import Backend, device_layout
from .borrows import MOVES, digest, fingerprint
from .capture import Capture
from .claims import CLAIMS, Claim
from .errors import BorrowError, OffloadError, UseAfterMoveError
from .events import BUS, callsite
from .launch import device_view
from . import scope as scopes
from .residency import Mapping, byte_bounds, data_pointer
from .settings import check_default, get_backend, get_mode
from .sites import Site


def _local_names(frame: Any, arrays: list[np.ndarray[Any, Any]]) -> list[str]:
    """The caller's variable name for each array, for messages ('u', not 'array #2')."""
    scope = frame.f_locals if frame is not None else {}
    names = []
    for pos, a in enumerate(arrays):
        name = next((k for k, v in scope.items() if v is a and not k.startswith("_")), None)
        names.append(name or f"region argument {pos + 1}")
    return names


class region:  # noqa: N801 - a context manager used like a keyword, as contextlib's are
    """Map arrays to the device for the duration of a `with` block.

    Arrays are named in messages and events after the caller's variables;
    `names=` overrides that (useful when the arrays live in a container).
    `shared=True` lets other threads and tasks launch on the arrays too,
    one launch at a time; by default they belong to the opener alone.
    """

    def __init__(
        self, *arrays: np.ndarray[Any, Any] | MapRequest, check: bool | None = None, names: Sequence[str] | None = None,
        shared: bool = False,
    ) -> None:
        requests: list[tuple[np.ndarray[Any, Any], Access]] = []
        for pos, item in enumerate(arrays):
            if isinstance(item, MapRequest):
                requests.append((item.array, item.access))
            elif isinstance(item, np.ndarray):
                requests.append((item, Access.INOUT))
            else:
                raise TypeError(
                    f"region() argument {pos + 1} is {type(item).__name__}; pass NumPy arrays, In(x) or Out(z)"
                )
            if requests[-1][0].dtype.hasobject:
                raise TypeError(f"region() argument {pos + 1}: object arrays cannot be copied to a device")
        self._requests = requests
        if names is not None:
            names = list(names)
            if len(names) != len(requests) or not all(isinstance(n, str) and n for n in names):
                raise TypeError(f"region(names=...) takes one non-empty string per array ({len(requests)})")
            self._names = names
        else:
            self._names = _local_names(sys._getframe(1), [a for a, _ in requests])
        self.check = check_default() if check is None else bool(check)
        self.shared = bool(shared)
        self.id: int | None = None
        self._backend: Backend | None = None
        self._mode = "batched"
        self._held: list[Mapping] = []
        self._site: Site | None = None
        self._active = False
        self._owner: scopes.Owner | None = None
        self._token: Any = None

    # ------------------------------------------------------------------ entry
    def __enter__(self) -> region:
        if self._active:
            raise OffloadError("this region is already active; nest a new region(...) instead")
        be = get_backend()
        mode = get_mode()
        self._backend, self._mode = be, mode
        self._site = callsite()
        present = be.present
        with present.lock:
            self.id = BUS.regions
            BUS.regions += 1
        scope, self._token = scopes.enter(self.id)
        self._owner = scope.owner
        if mode == "naive":
            with present.lock:
                present.regions.append(self.id)
            self._active = True
            self._emit("region_enter", 0, be.host_mark())
            return self

        claim: Claim | None = None
        try:
            with present.lock:  # no other thread's region maps these arrays between the look-up and the mapping
                # Other threads' copies into these host arrays finish first, and
                # the look-ups see what they left (a move, a mapping).
                claim = CLAIMS.claim([(*byte_bounds(a), False) for a, access in self._requests if access is not Access.OUT])
                plan = self._plan(be)
                new_bytes = sum(a.nbytes for a, _, _, m in plan if m is None)
                present.regions.append(self.id)
                self._active = True
                if be.nvtx:
                    be.range_push(f"region {', '.join(self._names)}")
                self._emit("region_enter", new_bytes, be.host_mark())
                try:
                    for array, access, name, existing in plan:
                        if existing is not None:
                            if existing not in self._held:
                                existing.refs += 1
                                self._held.append(existing)
                            continue
                        self._held.append(self._map(be, array, access, name))
                    if self.check:
                        for m in self._held:
                            if m.checks == 0:  # an outer checking region already holds a digest
                                m.digest = digest(m.host)
                            m.checks += 1
                        present.invalidate()
                    be.settle_uploads()
                except BaseException:
                    be.settle_uploads()
                    self._release(be, copy_back=False)
                    raise
        except BaseException:
            if not self._active:  # refused before anything was mapped
                scopes.leave(self._token, self.id)
            raise
        finally:
            if claim is not None:
                CLAIMS.release(claim)
        return self

    def _plan(self, be: Backend) -> list[tuple[np.ndarray[Any, Any], Access, str, Mapping | None]]:
        """Validate every request before anything is allocated or copied."""
        present = be.present
        plan: list[tuple[np.ndarray[Any, Any], Access, str, Mapping | None]] = []
        planned: list[tuple[int, int, str]] = []
        for (array, access), name in zip(self._requests, self._names):
            record = MOVES.find(array)
            if record is not None:
                raise UseAfterMoveError(f"region(): '{name}' was {record.where()} and cannot be mapped")
            if be.native_only and not array.dtype.isnative:
                raise TypeError(f"region(): '{name}': the {be.name} backend needs native byte order, got {array.dtype.str}")
            if access is Access.OUT and not array.flags.writeable:
                raise BorrowError(f"region(): '{name}' is mapped Out but the host array is read-only")
            existing = present.find(array)
            if existing is not None:
                if existing.owner is not self._owner and not existing.shared:
                    raise BorrowError(f"region(): {existing.foreign()}")
                if self.shared and not existing.shared:
                    raise BorrowError(
                        f"region(..., shared=True): {existing.where()} is mapped already by a region that is not "
                        "shared; open the outer region with shared=True"
                    )
                if existing.moved:
                    raise UseAfterMoveError(f"region(): {existing.where()} was moved into an Owned parameter")
                plan.append((array, access, name, existing))
                continue
            partial = present.overlap(array)
            if partial is not None:
                raise BorrowError(
                    f"region(): '{name}' overlaps {partial.where()} without lying inside it; "
                    "map the larger array first"
                )
            lo, hi = byte_bounds(array)
            clash = next(((plo, phi, pname) for plo, phi, pname in planned if lo < phi and plo < hi), None)
            if clash is not None:
                if clash[0] <= lo and hi <= clash[1]:
                    continue  # a view of an array this region maps anyway
                raise BorrowError(f"region(): '{name}' and '{clash[2]}' overlap; map only the larger array")
            planned.append((lo, hi, name))
            plan.append((array, access, name, None))
        return plan

    def _map(self, be: Backend, array: np.ndarray[Any, Any], access: Access, name: str) -> Mapping:
        subs = BUS.subscribers
        mark = be.host_mark()
        dev = be.empty(array.shape, array.dtype, device_layout(array))
        lo, hi = byte_bounds(array)
        m = Mapping(array, dev, lo, hi, data_pointer(array), access, name, self.id or 0, self._site,
                    initialized=access is not Access.OUT, owner=self._owner, shared=self.shared,
                    thread=threading.get_ident())
        be.present.add(m)
        if subs:
            self._emit_copy("alloc", m, array, mark, host=True)
        if access is not Access.OUT:
            mark = be.mark()
            try:
                be.upload(array, dev)
            except BaseException:
                be.present.remove(m)
                be.free(dev)
                raise
            if subs:
                self._emit_copy("h2d", m, array, mark)
        return m

    # ------------------------------------------------------------------ exit
    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        be = self._backend
        assert be is not None and self._active
        present = be.present
        written_by_host: list[Mapping] = []
        try:
            with present.lock:
                # Launches of other threads on these arrays (a shared region)
                # finish before anything is copied back or freed.
                claim = CLAIMS.claim([(m.lo, m.hi, True) for m in self._held])
                try:
                    if self.check and exc_type is None:
                        written_by_host = [m for m in self._held if m.digest != digest(m.host)]
                    self._release(be, copy_back=exc_type is None, skip=written_by_host)
                finally:
                    CLAIMS.release(claim)
        finally:
            scopes.leave(self._token, self.id or 0)
        if written_by_host:
            names = ", ".join(m.where() for m in written_by_host)
            raise BorrowError(
                f"host code wrote {names} while the region had it mapped; its device results were "
                "discarded and the host writes kept; call update_device() after host writes"
            )

    def _release(self, be: Backend, copy_back: bool, skip: Sequence[Mapping] = ()) -> None:
        """Drop this region's references; copy back, sync, then free mappings that reach zero."""
        present = be.present
        start = be.host_mark()
        copied = 0
        last: list[Mapping] = []
        try:
            present.invalidate()
            for m in reversed(self._held):
                if self.check:
                    m.checks -= 1
                m.refs -= 1
                if m.refs == 0:
                    last.append(m)
            for m in last:
                if not (copy_back and m.dirty and not m.moved and m not in skip):
                    continue
                if m.poisoned:
                    warnings.warn(
                        f"region exit: {m.where()} was not copied back, its device copy is undefined ({m.poisoned})",
                        RuntimeWarning,
                        stacklevel=3,
                    )
                    continue
                mark = be.mark()
                be.download(m.device, m.host)
                copied += m.host.nbytes
                if BUS.subscribers:
                    self._emit_copy("d2h", m, m.host, mark)
            if copied:
                mark = be.host_mark()
                be.synchronize()
                self._emit("sync", 0, mark)
        finally:
            # Whatever failed above, the device memory goes back and the table forgets.
            for m in last:
                present.remove(m)
                m.released = True
                mark = be.host_mark()
                be.free(m.device)
                # the last reference (plans were dropped by invalidate()): the memory goes back inside the free's
                # record, where a fix that drops the free can price it; a released mapping has no device array
                m.device = None  # type: ignore[assignment]
                if BUS.subscribers:
                    self._emit_copy("free", m, m.host, mark, host=True)
            self._held = []
            self._active = False
            if self.id in present.regions:
                present.regions.remove(self.id)
            if BUS.subscribers:
                BUS.emit_timed(be.host_since(start), kind="region_exit", nbytes=copied, callsite=self._site,
                               mode=self._mode, region=self.id)
            if be.nvtx and self._mode != "naive":
                be.range_pop()
            be.flush_events()

    # ------------------------------------------------------------- mid-region
    def update_host(self, array: np.ndarray[Any, Any]) -> None:
        """Copy the device data of a mapped array (or a view into one) to the host now."""
        be, m = self._lookup("update_host", array)
        if m is None:
            return
        if not m.initialized:
            raise BorrowError(f"update_host(): {m.where()} is mapped Out and no launch has written it yet")
        if m.poisoned:
            raise BorrowError(f"update_host(): the device copy of {m.where()} is undefined ({m.poisoned})")
        if m.checks and digest(m.host) != m.digest:
            raise BorrowError(
                f"update_host(): host code wrote {m.where()} while it was mapped, and update_host would "
                "overwrite that; call update_device() after host writes"
            )
        if not array.flags.writeable:
            raise BorrowError("update_host(): the host array is read-only")
        claim = CLAIMS.claim([(*byte_bounds(array), True)])  # no other thread's copy of these bytes meanwhile
        try:
            dev = device_view(be, m, array, "update_host()")
            mark = be.mark()
            be.download(dev, array)
            if BUS.subscribers:
                self._emit_copy("d2h", m, array, mark)
            mark = be.host_mark()
            be.synchronize()
            self._emit("sync", 0, mark)
        finally:
            CLAIMS.release(claim)
        if self._covers(m, array):
            m.dirty = False
        if m.checks:
            m.digest = digest(m.host)
        be.flush_events()

    def update_device(self, array: np.ndarray[Any, Any]) -> None:
        """Copy the host data of a mapped array (or a view into one) to the device now."""
        be, m = self._lookup("update_device", array)
        if m is None:
            return
        claim = CLAIMS.claim([(*byte_bounds(array), False)])
        try:
            dev = device_view(be, m, array, "update_device()")
            mark = be.mark()
            be.upload(array, dev)
            be.settle_uploads()
            if BUS.subscribers:
                self._emit_copy("h2d", m, array, mark)
        finally:
            CLAIMS.release(claim)
        if self._covers(m, array):
            m.initialized = True
            m.poisoned = None
            m.dirty = False
            be.present.invalidate()
        if m.checks:
            m.digest = digest(m.host)

    @property
    def active(self) -> bool:
        """Inside the with block."""
        return self._active

    def capture(self) -> Capture:
        """Record the launches of a `with` block once, to replay them with `.replay()`.

        See `offload_core.capture`: on the CuPy backend the sequence becomes a
        CUDA/HIP graph, so a loop of short kernels pays one launch per replay.
        """
        if not self._active or self._backend is None:
            raise OffloadError("capture() needs an active region; call it inside the with block")
        return Capture(self, self._backend, self._mode)

    def is_resident(self, array: np.ndarray[Any, Any]) -> bool:
        """Whether launches inside this region use `array` in place (no copies)."""
        return self._active and self._backend is not None and self._backend.present.find(array) is not None

    def _lookup(self, verb: str, array: np.ndarray[Any, Any]) -> tuple[Backend, Mapping | None]:
        if not self._active or self._backend is None:
            raise OffloadError(f"{verb}() needs an active region; call it inside the with block")
        if not isinstance(array, np.ndarray):
            raise TypeError(f"{verb}() takes a NumPy array, got {type(array).__name__}")
        if self._mode == "naive":
            return self._backend, None  # nothing is mapped: the host copy is the only copy
        m = self._backend.present.find(array)
        if m is None:
            raise BorrowError(f"{verb}(): the array is not mapped by an active region; list it in region(...)")
        scope = scopes.current()
        if m.owner is not (scope.owner if scope is not None else None) and not m.shared:
            raise BorrowError(f"{verb}(): {m.foreign()}")
        if m.moved:
            raise UseAfterMoveError(f"{verb}(): {m.where()} was moved into an Owned parameter")
        return self._backend, m

    @staticmethod
    def _covers(m: Mapping, array: np.ndarray[Any, Any]) -> bool:
        return array is m.host or byte_bounds(array) == (m.lo, m.hi) and array.nbytes == m.host.nbytes

    # ----------------------------------------------------------------- events
    def _emit(self, kind: str, nbytes: int, mark: Any) -> None:
        """A region edge or sync: timed on the host (what the program waited)."""
        if BUS.subscribers:
            be = self._backend
            assert be is not None
            BUS.emit_timed(be.host_since(mark), kind=kind, nbytes=nbytes, callsite=self._site, mode=self._mode,
                           region=self.id)

    def _emit_copy(self, kind: str, m: Mapping, array: np.ndarray[Any, Any], mark: Any, host: bool = False) -> None:
        be = self._backend
        assert be is not None
        timing = be.host_since(mark) if host else be.since(mark)
        fp = None
        if BUS.fingerprinting and kind in ("h2d", "d2h"):
            if kind == "d2h":
                be.synchronize()  # the host bytes are final only once the copy has landed
            fp = fingerprint(array)
        BUS.emit_timed(
            timing, kind=kind, nbytes=array.nbytes, pinned=be.is_pinned(array), param=m.name,
            array=data_pointer(array), callsite=callsite(), mode=self._mode, region=self.id, fingerprint=fp,
        )
