"""CUPTI's records in the profiler's own vocabulary: frozen, plain, independent of cupti-python.

The live source (`tracer`) decodes the activity buffers CUPTI filled
(`buffers`: structured NumPy arrays, one per record kind) into these, and
keeps each intercepted API call as an `ApiCall`. Everything after that, the
conversion into a `profiler.model.Run` included, works on these records
only, so it runs and is tested on machines without a GPU or cupti-python.

Enum values are CUPTI's (`CUpti_ActivityMemcpyKind`, `CUpti_ActivityMemoryKind`,
`CUpti_ActivitySynchronizationType`), stable across CUPTI versions; they
are decoded here into names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal

#: where a copy goes; the trace keeps h2d and d2h, d2d and p2p (as `d2d` records naming both devices) and counts the rest
CopyDirection = Literal["h2d", "d2h", "d2d", "h2h", "p2p", "unknown"]
#: CUpti_ActivityMemcpyKind -> direction (array copies count as the host or device side they touch)
CUPTI_COPY_KINDS: dict[int, CopyDirection] = {0: "unknown", 1: "h2d", 2: "d2h", 3: "h2d", 4: "d2h", 5: "d2d", 6: "d2d",
                                              7: "d2d", 8: "d2d", 9: "h2h", 10: "p2p"}
#: CUpti_ActivityMemoryKind -> name
CUPTI_MEMORY_KINDS = {0: "unknown", 1: "pageable", 2: "pinned", 3: "device", 4: "array", 5: "managed",
                      6: "device", 7: "managed"}


@dataclass(frozen=True, slots=True)
class Copy:
    """A memcpy activity: what moved, between which kinds of memory, when, on which stream."""

    correlation: int
    runtime_correlation: int
    direction: CopyDirection
    src_kind: str
    dst_kind: str
    nbytes: int
    start: int
    end: int
    stream: int = 0
    device: int = 0
    #: the destination device of a peer copy (p2p); None for every other copy, which stays on `device`
    peer: int | None = None

    @property
    def host_kind(self) -> str:
        """The memory kind on the host side of an H2D or D2H copy."""
        return self.src_kind if self.direction == "h2d" else self.dst_kind


@dataclass(frozen=True, slots=True)
class Memset:
    correlation: int
    nbytes: int
    memory_kind: str
    start: int
    end: int
    stream: int = 0
    device: int = 0


@dataclass(frozen=True, slots=True)
class Kernel:
    correlation: int
    name: str
    start: int
    end: int
    stream: int = 0
    device: int = 0


@dataclass(frozen=True, slots=True)
class Sync:
    """A host-side synchronisation (cudaStreamSynchronize, cudaDeviceSynchronize, ...)."""

    correlation: int
    type: str
    start: int
    end: int
    stream: int = 0


@dataclass(frozen=True, slots=True)
class ApiCall:
    """One intercepted CUDA call: its Python call site, and for copies what the arguments said.

    `site` is (file, line, function) of the user frame, None when no user
    frame was found. `instr` identifies the Python instruction that made the
    call, so that two CUDA calls made by one `x.item()` can be told from two
    statements. `host`/`count` are the host pointer and byte count of a flat
    H2D or D2H copy, `fingerprint` a digest of those bytes (taken when they
    were final), `enter_ns` the CUPTI clock when the call began.
    """

    correlation: int
    name: str
    role: str
    site: tuple[str, int, str] | None
    instr: tuple[int, int] | None = None
    synchronous: bool = False
    dst: int | None = None
    src: int | None = None
    count: int | None = None
    fingerprint: str | None = None
    enter_ns: int = 0


@dataclass(frozen=True)
class Capture:
    """Everything one recording collected, before conversion; times on CUPTI's clock (ns)."""

    t0: int
    t1: int
    calls: dict[int, ApiCall]
    copies: tuple[Copy, ...] = ()
    memsets: tuple[Memset, ...] = ()
    kernels: tuple[Kernel, ...] = ()
    syncs: tuple[Sync, ...] = ()
    dropped: int = 0
    errors: tuple[str, ...] = ()
    #: per host sync, and per synchronous copy, the time (ns) the tracer's own exit callbacks took after the host's
    #: wait ended (the tracer's module docstring)
    sync_exits: tuple[int, ...] = ()
    copy_exits: tuple[int, ...] = ()


def _column(rows: Any, name: str, default: int | None = None) -> list[int]:
    """One field of every record as Python ints; `default` for a field this CUPTI version lacks."""
    names = rows.dtype.names or ()
    if name not in names:
        if default is None:
            raise KeyError(f"CUPTI records have no field {name!r} (fields: {', '.join(names)})")
        return [default] * len(rows)
    return rows[name].tolist()


def copies_from(rows: Any) -> list[Copy]:
    """`Copy`s from a structured array of memcpy records (cupti-python's `activity_memcpy*_dtype`)."""
    kinds, memory = CUPTI_COPY_KINDS, CUPTI_MEMORY_KINDS
    return [Copy(corr, rt, kinds.get(ck, "unknown"), memory.get(sk, "unknown"), memory.get(dk, "unknown"), n, s, e,
                 st, dev)
            for corr, rt, ck, sk, dk, n, s, e, st, dev in zip(
                _column(rows, "correlation_id"), _column(rows, "runtime_correlation_id", 0), _column(rows, "copy_kind"),
                _column(rows, "src_kind"), _column(rows, "dst_kind"), _column(rows, "bytes"), _column(rows, "start"),
                _column(rows, "end"), _column(rows, "stream_id", 0), _column(rows, "device_id", 0))]


def peer_copies_from(rows: Any) -> list[Copy]:
    """Device-to-device `Copy`s from peer-copy records (`activity_memcpy_pto_p*_dtype`)."""
    return [Copy(corr, 0, "p2p", "device", "device", n, s, e, st, src, dst)
            for corr, n, s, e, st, src, dst in zip(_column(rows, "correlation_id"), _column(rows, "bytes"),
                                                   _column(rows, "start"), _column(rows, "end"),
                                                   _column(rows, "stream_id", 0),
                                                   _column(rows, "src_device_id", _column(rows, "device_id", 0)),
                                                   _column(rows, "dst_device_id", _column(rows, "device_id", 0)))]


def memsets_from(rows: Any) -> list[Memset]:
    return [Memset(corr, n, CUPTI_MEMORY_KINDS.get(mk, "unknown"), s, e, st, dev)
            for corr, n, mk, s, e, st, dev in zip(_column(rows, "correlation_id"), _column(rows, "bytes"),
                                                  _column(rows, "memory_kind", 0), _column(rows, "start"),
                                                  _column(rows, "end"), _column(rows, "stream_id", 0),
                                                  _column(rows, "device_id", 0))]


def kernels_from(rows: Any, name_of: Callable[[int], str]) -> list[Kernel]:
    """`Kernel`s; `name_of` turns the record's name pointer (a C string CUPTI owns) into text."""
    return [Kernel(corr, name_of(ptr), s, e, st, dev)
            for corr, ptr, s, e, st, dev in zip(_column(rows, "correlation_id"), _column(rows, "name"),
                                                _column(rows, "start"), _column(rows, "end"),
                                                _column(rows, "stream_id", 0), _column(rows, "device_id", 0))]


def sync_type_of(api_name: str) -> str:
    """What a host sync call waits for: `cudaEventSynchronize_v3020` -> `event`, `cuStreamSynchronize` -> `stream`,
    `cudaDeviceSynchronize_v3020` or `cuCtxSynchronize` -> `context`."""
    if "Event" in api_name:
        return "event"
    if "Stream" in api_name:
        return "stream"
    return "context"
