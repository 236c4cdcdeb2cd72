"""Activity buffers: handed to CUPTI, kept as it returns them, decoded in bulk after the recording.

CUPTI writes activity records into buffers the client provides and hands
each one back when it is full or flushed, on a thread of its own. Doing
anything per record at that moment (cupti-python builds an object per
record) competes with the program for the interpreter, so a completed
buffer is only queued here. After the recording, `decode` walks each
buffer once (CUPTI's own `cuptiActivityGetNextRecord` gives the record
offsets, so no record size is guessed), gathers the records of each kind
into one structured NumPy array laid out as cupti-python's
`activity_*_dtype` says, and checks that CUPTI's records are at least as
long as that layout before reading a field.

Buffers are NumPy arrays (8-byte aligned, as CUPTI requires); a pool
reuses them across recordings of one process.
"""

from __future__ import annotations

import ctypes
import re
import threading
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from . import activity as act
from .probe import version_mismatch

#: bytes per buffer; a memcpy record is 128 bytes, so one buffer holds about 65,000 of them
BUFFER_BYTES = 8 << 20
#: activity kind name -> prefix of cupti-python's dtype for its record (the highest version is used)
RECORD_DTYPES = {"MEMCPY": "activity_memcpy", "MEMSET": "activity_memset", "CONCURRENT_KERNEL": "activity_kernel",
                 "MEMCPY2": "activity_memcpy_pto_p"}


def record_dtypes(cupti: ModuleType) -> dict[int, np.dtype]:
    """Activity kind value -> the structured dtype of its records, for the kinds the tracer reads."""
    out: dict[int, np.dtype] = {}
    for kind_name, prefix in RECORD_DTYPES.items():
        kind = getattr(cupti.ActivityKind, kind_name, None)
        if kind is None:
            continue
        pattern = re.compile(rf"^{re.escape(prefix)}(\d*)_dtype$")
        found = [(int(m.group(1) or 0), name) for name in dir(cupti) if (m := pattern.match(name))]
        if found:
            out[int(kind)] = np.dtype(getattr(cupti, max(found)[1]))
    return out


@dataclass
class Pool:
    """Buffers lent to CUPTI, and the filled ones waiting to be decoded (shared by CUPTI's thread)."""

    size: int = BUFFER_BYTES
    lent: dict[int, np.ndarray] = field(default_factory=dict)
    spare: list[np.ndarray] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def lend(self) -> tuple[int, int]:
        """(address, size) of a buffer for CUPTI to fill."""
        with self.lock:
            buf = self.spare.pop() if self.spare else np.empty(self.size, dtype=np.uint8)
            address = buf.ctypes.data
            self.lent[address] = buf
        return address, buf.nbytes

    def take_back(self, address: int) -> np.ndarray | None:
        """The array behind a buffer CUPTI returned (None for a buffer this pool never lent)."""
        with self.lock:
            return self.lent.pop(address, None)

    def recycle(self, buf: np.ndarray) -> None:
        with self.lock:
            if len(self.spare) < 4:
                self.spare.append(buf)


def records_of(buffers: Iterable[tuple[np.ndarray, int]], walk: Callable[[int, int], Iterator[int]],
               dtypes: dict[int, np.dtype]) -> dict[int, np.ndarray]:
    """Decode filled buffers: kind -> structured array of its records, in buffer order.

    `walk(address, valid_bytes)` yields record offsets (CUPTI's iterator);
    records of kinds without a dtype are passed over. A record
    shorter than its dtype raises `ValueError` naming both sizes.
    """
    parts: dict[int, list[np.ndarray]] = {}
    for buf, valid in buffers:
        offsets = np.fromiter(walk(buf.ctypes.data, valid), dtype=np.int64)
        if not offsets.size:
            continue
        raw = buf[:valid]
        ends = np.append(offsets[1:], valid)
        kinds = raw[offsets[:, None] + np.arange(4)].copy().view("<u4").ravel()
        for kind in np.unique(kinds).tolist():
            dtype = dtypes.get(kind)
            if dtype is None:
                continue
            pick = kinds == kind
            at = offsets[pick]
            shortest = int((ends[pick] - at).min())
            if shortest < dtype.itemsize:
                raise ValueError(f"CUPTI wrote {shortest}-byte records of activity kind {kind}, shorter than "
                                 f"cupti-python's {dtype.itemsize}-byte layout (cupti-python and libcupti versions differ)")
            rows = raw[at[:, None] + np.arange(dtype.itemsize)]
            parts.setdefault(kind, []).append(rows.view(dtype).ravel())
    return {k: (v[0] if len(v) == 1 else np.concatenate(v)) for k, v in parts.items()}


class CStrings:
    """C strings CUPTI owns (kernel names), read once per pointer."""

    def __init__(self, read: Callable[[int], bytes] = ctypes.string_at) -> None:
        self._read = read
        self._seen: dict[int, str] = {}

    def __call__(self, pointer: int) -> str:
        text = self._seen.get(pointer)
        if text is None:
            text = self._read(pointer).decode("utf-8", errors="replace") if pointer else ""
            self._seen[pointer] = text
        return text


def decode(filled: list[tuple[Any, int]], cupti: ModuleType, records: Callable[..., Any], pool: Pool,
           error: Callable[[str, BaseException], None]
           ) -> tuple[list[act.Copy], list[act.Memset], list[act.Kernel], list[act.Sync]]:
    """The filled buffers' records, in the profiler's vocabulary (`activity`); the buffers go back to `pool`.

    `records` is the native walk of a buffer's records; a problem reading
    them is handed to `error` (the tracer keeps it for the report) and
    leaves the rest of the trace as it is.
    """
    copies: list[act.Copy] = []
    memsets: list[act.Memset] = []
    kernels: list[act.Kernel] = []
    syncs: list[act.Sync] = []
    if not filled:
        return copies, memsets, kernels, syncs
    k = cupti.ActivityKind
    names = CStrings()
    readers: dict[int, tuple[Callable[[Any], list[Any]], list[Any]]] = {
        int(k.MEMCPY): (act.copies_from, copies),
        int(k.MEMSET): (act.memsets_from, memsets),
        int(k.CONCURRENT_KERNEL): (lambda rows: act.kernels_from(rows, names), kernels),
    }
    if hasattr(k, "MEMCPY2"):
        readers[int(k.MEMCPY2)] = (act.peer_copies_from, copies)
    try:
        dtypes = {kind: dt for kind, dt in record_dtypes(cupti).items() if kind in readers}
        by_kind = records_of(filled, records, dtypes)
    except Exception as exc:
        hint = version_mismatch() if isinstance(exc, ValueError) else ""
        error("reading activity records", ValueError(f"{exc}; {hint}") if hint else exc)
        by_kind = {}
    finally:
        for buf, _ in filled:
            pool.recycle(buf)
    for kind, rows in by_kind.items():
        read, into = readers[kind]
        try:
            into.extend(read(rows))
        except Exception as exc:
            error("reading an activity record", exc)
    return copies, memsets, kernels, syncs
