"""`r.capture()`: record a region's launch sequence once, replay it many times.

When kernels are short, the host's cost of issuing each launch (about 8 µs
for a bare CuPy RawKernel on the H200 machine) dominates: the device idles
between launches. A capture records the launches of its `with` block
without running them and replays the whole sequence with one call: on the
CuPy backend as a CUDA/HIP graph (stream capture), on the NumPy backend by
calling the recorded kernels directly, skipping the per-launch checks.

Every launch in a capture is checked as usual when it is recorded, and
must use only arrays the region keeps resident: a captured copy would run
at every replay, which is the mistake regions exist to avoid, so it is
refused with `BorrowError`. In naive mode (regions map nothing) a capture
records the `offload()` calls themselves and replays them through
`offload()`, copies included, so the same program still runs its naive
path. Nothing is launched while recording, in either mode.

A capture records the launches of the thread and task that opened it;
other threads' launches meanwhile run as usual. One capture records at a
time in the process.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from . import scope as scopes
from .claims import CLAIMS
from .errors import BorrowError, OffloadError, UseAfterMoveError
from .events import BUS, callsite

if TYPE_CHECKING:
    from .backends.base import Backend
    from .kernels import Kernel
    from .residency import Mapping


class CapturingRegion(Protocol):
    """What a capture reads of the region that made it (`offload_core.region.region`, which imports this module)."""

    @property
    def id(self) -> int | None: ...

    @property
    def active(self) -> bool: ...


class Capture:
    """A recorded launch sequence of one region."""

    def __init__(self, owner: CapturingRegion, backend: Backend, mode: str) -> None:
        self._region = owner
        self._backend = backend
        self._mode = mode
        self._recording = False
        self._handle: Any = None
        self._calls: list[tuple[Kernel, tuple[Any, ...], dict[str, Any]]] = []
        self._kernels: list[str] = []
        self._writes: list[Mapping] = []
        self._reads: list[Mapping] = []
        self._first_writes: list[Mapping] = []  # Out mappings a recorded launch initialises
        scope = scopes.current()
        #: whose launches this capture records: the opener's thread and task
        self.owner = scope.owner if scope is not None else None
        self.thread = threading.get_ident()

    @property
    def naive(self) -> bool:
        return self._mode == "naive"

    @property
    def launches(self) -> int:
        """How many launches one replay issues."""
        return len(self._kernels)

    # -------------------------------------------------------------- recording
    def __enter__(self) -> Capture:
        if self._recording or self._handle is not None or self._calls:
            raise OffloadError("a capture records once; start a new r.capture() for another sequence")
        present = self._backend.present
        if present.capture is not None:
            if present.capture.thread != self.thread or present.capture.owner is not self.owner:
                raise OffloadError("another thread or task is recording a capture; captures record one at a time")
            raise OffloadError("captures do not nest")
        present.invalidate()  # launch plans would bypass the recording
        present.capture = self
        self._recording = True
        if self._mode == "batched":
            self._backend.begin_capture()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._backend.present.capture = None
        self._recording = False
        if self._mode == "batched":
            handle = self._backend.end_capture()
            if exc_type is None:
                self._handle = handle
        if exc_type is not None:
            self._calls.clear()
            self._kernels.clear()
            for m in self._first_writes:  # nothing was recorded: they are unwritten again
                m.initialized = False

    def record_call(self, k: Kernel, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        """Naive mode: keep the call itself, to be re-issued through offload()."""
        self._calls.append((k, args, dict(kwargs)))
        self._kernels.append(k.name)

    def record_launch(self, k: Kernel, dev_args: list[Any], mappings: list[Mapping | None], temps: int) -> None:
        """Batched mode: the launch's arrays are all resident; record it on the device."""
        if temps:
            raise BorrowError(
                f"offload({k.name}) inside r.capture() has an argument no region keeps resident, so every replay "
                "would copy it; list the array in region(...)"
            )
        self._backend.capture_launch(k, dev_args)
        self._kernels.append(k.name)
        for i in k.array_indices:
            m = mappings[i]
            if m is None:
                continue
            writes = k.params[i].writes
            target = self._writes if writes else self._reads
            if m not in target:
                target.append(m)
            if writes and not m.initialized:
                # Launches recorded after this one may read what it will have
                # written: the sequence is checked as it will run.
                m.initialized = True
                self._first_writes.append(m)

    # ---------------------------------------------------------------- replay
    def replay(self, times: int = 1) -> None:
        """Run the recorded sequence `times` times, in order, asynchronously."""
        if self._recording:
            raise OffloadError("replay() is called after the capture's with block")
        if not isinstance(times, int) or times < 0:
            raise ValueError(f"replay(times=...) takes a non-negative int, got {times!r}")
        if not self._region.active:
            raise OffloadError("a capture replays only inside the region that recorded it")
        if self._mode == "naive":
            from .launch import offload

            for _ in range(times):
                for k, args, kwargs in self._calls:
                    offload(k, *args, **kwargs)
            return
        for m in self._writes + self._reads:
            if m.moved:
                raise UseAfterMoveError(f"replay(): {m.where()} was moved into an Owned parameter since the capture")
            if m.poisoned:
                raise BorrowError(f"replay(): the device copy of {m.where()} is undefined ({m.poisoned})")
        if self._handle is None or times == 0:
            return
        be = self._backend
        subs = BUS.subscribers
        site = callsite() if subs else None
        name = "graph:" + "+".join(dict.fromkeys(self._kernels))
        # Serialised with other threads' launches on these arrays (a shared region).
        claim = CLAIMS.claim([(m.lo, m.hi, m in self._writes) for m in self._writes + self._reads])
        try:
            for _ in range(times):
                index = next(BUS.launch_ids)
                BUS.launches = index + 1
                mark = be.mark() if subs else None
                be.replay(self._handle)
                if subs:
                    BUS.emit_timed(be.since(mark), kind="launch", kernel=name, launch=index, callsite=site,
                                   mode=self._mode, region=self._region.id)
        finally:
            CLAIMS.release(claim)
        for m in self._writes:
            m.dirty = True
            m.initialized = True
