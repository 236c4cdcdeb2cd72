"""CUPTI's records in the profiler's own vocabulary: frozen, plain, independent of cupti-python.

The live source (`tracer`) copies each activity record it is handed into
one of these (cupti-python's objects view a buffer CUPTI reuses), and
each intercepted API call into an `ApiCall`. Everything after that, the
conversion into a `profiler.model.Run` included, works on these records
only, so it runs and is tested on machines without a GPU or cupti-python.

Enum values are CUPTI's (`CUpti_ActivityMemcpyKind`, `CUpti_ActivityMemoryKind`,
`CUpti_ActivitySynchronizationType`), stable across CUPTI versions; they
are decoded here into names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: CUpti_ActivityMemcpyKind -> direction (array copies count as the host or device side they touch)
COPY_KINDS = {0: "unknown", 1: "h2d", 2: "d2h", 3: "h2d", 4: "d2h", 5: "d2d", 6: "d2d", 7: "d2d", 8: "d2d",
              9: "h2h", 10: "p2p"}
#: CUpti_ActivityMemoryKind -> name
MEMORY_KINDS = {0: "unknown", 1: "pageable", 2: "pinned", 3: "device", 4: "array", 5: "managed",
                6: "device", 7: "managed"}
#: CUpti_ActivitySynchronizationType -> name; a stream waiting on an event blocks no host thread
SYNC_TYPES = {0: "unknown", 1: "event", 2: "stream_wait_event", 3: "stream", 4: "context"}
HOST_WAITS = frozenset({"event", "stream", "context"})


@dataclass(frozen=True, slots=True)
class Copy:
    """A memcpy activity: what moved, between which kinds of memory, when, on which stream."""

    correlation: int
    runtime_correlation: int
    direction: str  # h2d d2h d2d h2h p2p unknown
    src_kind: str
    dst_kind: str
    nbytes: int
    start: int
    end: int
    stream: int = 0
    device: int = 0

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


def copy_from(a: Any) -> Copy:
    """A `Copy` from a cupti-python `ActivityMemcpy*` (any version with these fields)."""
    return Copy(int(a.correlation_id), int(getattr(a, "runtime_correlation_id", 0) or 0),
                COPY_KINDS.get(int(a.copy_kind), "unknown"), MEMORY_KINDS.get(int(a.src_kind), "unknown"),
                MEMORY_KINDS.get(int(a.dst_kind), "unknown"), int(a.bytes), int(a.start), int(a.end),
                int(getattr(a, "stream_id", 0)), int(getattr(a, "device_id", 0)))


def peer_copy_from(a: Any) -> Copy:
    """A device-to-device `Copy` from an `ActivityMemcpyPtoP*` record."""
    return Copy(int(a.correlation_id), 0, "p2p", "device", "device", int(a.bytes), int(a.start), int(a.end),
                int(getattr(a, "stream_id", 0)), int(getattr(a, "device_id", 0)))


def memset_from(a: Any) -> Memset:
    return Memset(int(a.correlation_id), int(a.bytes), MEMORY_KINDS.get(int(getattr(a, "memory_kind", 0)), "unknown"),
                  int(a.start), int(a.end), int(getattr(a, "stream_id", 0)), int(getattr(a, "device_id", 0)))


def kernel_from(a: Any) -> Kernel:
    return Kernel(int(a.correlation_id), str(a.name), int(a.start), int(a.end), int(getattr(a, "stream_id", 0)),
                  int(getattr(a, "device_id", 0)))


def sync_from(a: Any) -> Sync:
    return Sync(int(a.correlation_id), SYNC_TYPES.get(int(a.type), "unknown"), int(a.start), int(a.end),
                int(getattr(a, "stream_id", 0)))
