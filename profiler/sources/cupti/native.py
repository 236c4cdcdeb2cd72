"""libcupti's hot paths through ctypes: API callbacks and activity buffers.

cupti-python wraps every CUPTI callback in Python objects: each API
callback builds a `CallbackData` whose fields are read through properties,
and each completed activity buffer becomes a list of record objects. On
the H200 machine that cost about 10 µs per callback before the callback
did anything, 25 µs more to read four fields, and about 145 µs per memcpy
record to hand the records over (benchmarks/cupti_breakdown.py), so a
traced `cp.asarray` of 1 KiB took ten times as long as an untraced one.

This module registers the two kinds of callback with libcupti directly,
as ctypes function pointers: an API callback receives the raw
`CUpti_CallbackData *` (read with one `struct` unpack) and a completed
activity buffer is only kept, to be decoded in bulk with NumPy after the
recording (`buffers`). cupti-python is still what loads libcupti, names
the callback ids and record layouts, and makes the calls that are not hot
(enabling activity kinds, flushing, timestamps).

The library handle is the one cupti-python loaded (found in the process's
memory map), never a second copy: two copies of libcupti in one process
would be two CUPTI clients, and CUPTI accepts one.
"""

from __future__ import annotations

import ctypes
import os
import struct
from types import ModuleType
from typing import Any, Callable, Iterator

from ...errors import ProfilerError

#: void (*)(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *cbdata)
API_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p)
#: void (*)(uint8_t **buffer, size_t *size, size_t *maxNumRecords)
BUFFER_REQUESTED = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                                    ctypes.POINTER(ctypes.c_size_t))
#: void (*)(CUcontext ctx, uint32_t streamId, uint8_t *buffer, size_t size, size_t validSize)
BUFFER_COMPLETED = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t,
                                    ctypes.c_size_t)
CUPTI_SUCCESS = 0
CUPTI_ERROR_MAX_LIMIT_REACHED = 12


class CallbackLayout:
    """Where `CUpti_CallbackData`'s fields lie: from cupti-python's dtype, else the 64-bit header layout.

    `reader()` returns a function address -> (callbackSite, functionParams,
    functionReturnValue, correlationId): the callback needs all four, and
    one `struct` unpack costs less than four ctypes reads.
    """

    FIELDS = (("callback_site", 0, "i"), ("function_params", 16, "Q"), ("function_return_value", 24, "Q"),
              ("correlation_id", 64, "I"))

    def __init__(self, dtype: Any = None) -> None:
        offsets = {}
        for name, default, _ in self.FIELDS:
            try:
                offsets[name] = int(dtype.fields[name][1])
            except (AttributeError, KeyError, TypeError, IndexError):
                offsets[name] = default
        order = sorted(self.FIELDS, key=lambda f: offsets[f[0]])
        fmt, pos = "<", 0
        for name, _, code in order:
            gap = offsets[name] - pos
            if gap < 0:  # overlapping fields: not a layout this module understands
                raise ValueError(f"unexpected CUpti_CallbackData layout: {offsets}")
            fmt += f"{gap}x{code}" if gap else code
            pos = offsets[name] + struct.calcsize("<" + code)
        self.size = pos
        self._struct = struct.Struct(fmt)
        self._perm = tuple(order.index(f) for f in self.FIELDS)

    def reader(self) -> Callable[[int], tuple[int, int, int, int]]:
        unpack = self._struct.unpack_from
        from_address = (ctypes.c_char * self.size).from_address
        if self._perm == (0, 1, 2, 3):
            return lambda address: unpack(from_address(address))  # type: ignore[return-value]
        a, b, c, d = self._perm

        def read(address: int) -> tuple[int, int, int, int]:
            v = unpack(from_address(address))
            return v[a], v[b], v[c], v[d]

        return read


def library_path(cupti: ModuleType, maps: str = "/proc/self/maps") -> str | None:
    """The file of the libcupti that `cupti` (cupti-python) has loaded, from the process's memory map."""
    try:
        cupti.get_timestamp()  # cupti-python loads libcupti on its first call
    except Exception:
        pass
    try:
        with open(maps, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                path = line.rstrip("\n").split(None, 5)[-1] if line.count(" ") >= 5 else ""
                if "libcupti.so" in os.path.basename(path) and os.path.isabs(path):
                    return path
    except OSError:
        return None
    return None


_LOADED: dict[str, Native] = {}


class Native:
    """The libcupti entry points the recording calls on its hot paths, with ctypes prototypes."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib
        lib.cuptiSubscribe.argtypes = [ctypes.POINTER(ctypes.c_void_p), API_CALLBACK, ctypes.c_void_p]
        lib.cuptiEnableCallback.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
        lib.cuptiUnsubscribe.argtypes = [ctypes.c_void_p]
        lib.cuptiActivityRegisterCallbacks.argtypes = [BUFFER_REQUESTED, BUFFER_COMPLETED]
        lib.cuptiActivityGetNextRecord.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
        lib.cuptiGetResultString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        lib.cuptiGetTimestamp.argtypes = [ctypes.POINTER(ctypes.c_uint64)]
        for name in ("cuptiGetTimestamp", "cuptiSubscribe", "cuptiEnableCallback", "cuptiUnsubscribe",
                     "cuptiActivityRegisterCallbacks", "cuptiActivityGetNextRecord", "cuptiGetResultString"):
            getattr(lib, name).restype = ctypes.c_int
        self._keep: list[Any] = []  # function pointers CUPTI holds must outlive every call into them
        self._stamp = ctypes.c_uint64(0)
        self._stamp_ref = ctypes.byref(self._stamp)
        self._get_timestamp = lib.cuptiGetTimestamp

    @classmethod
    def load(cls, cupti: ModuleType) -> Native:
        """The libcupti cupti-python uses (one `Native` per library and process), or a one-line `ProfilerError`."""
        path = library_path(cupti)
        if path is None:
            raise ProfilerError("CUPTI could not start: cupti-python loaded no libcupti.so that this process can find "
                                "(reinstall the cupti extra)")
        native = _LOADED.get(path)
        if native is None:
            try:
                native = _LOADED[path] = cls(ctypes.CDLL(path))
            except (OSError, AttributeError) as exc:
                raise ProfilerError(f"CUPTI could not start: {path}: {exc}") from None
        return native

    def timestamp(self) -> int:
        """CUPTI's clock in ns (the activity records' clock), read without cupti-python's wrapper."""
        self._get_timestamp(self._stamp_ref)
        return self._stamp.value

    def check(self, rc: int, what: str) -> None:
        if rc != CUPTI_SUCCESS:
            text = ctypes.c_char_p()
            name = ""
            if self.lib.cuptiGetResultString(rc, ctypes.byref(text)) == CUPTI_SUCCESS and text.value:
                name = text.value.decode(errors="replace")
            raise CuptiCallError(rc, f"{what} failed: {name or f'CUPTI error {rc}'}")

    # ------------------------------------------------------------- callbacks
    def subscribe(self, fn: Callable[[Any, int, int, int], None]) -> tuple[int, Any]:
        """Subscribe `fn(userdata, domain, cbid, cbdata_address)`; (handle, the function pointer to keep)."""
        pointer = API_CALLBACK(fn)
        handle = ctypes.c_void_p()
        self.check(self.lib.cuptiSubscribe(ctypes.byref(handle), pointer, None), "cuptiSubscribe")
        return int(handle.value or 0), pointer

    def enable_callback(self, handle: int, domain: int, cbid: int, enable: bool = True) -> None:
        self.check(self.lib.cuptiEnableCallback(1 if enable else 0, handle, domain, cbid), "cuptiEnableCallback")

    def unsubscribe(self, handle: int) -> None:
        self.check(self.lib.cuptiUnsubscribe(handle), "cuptiUnsubscribe")

    # -------------------------------------------------------------- buffers
    def register_buffers(self, requested: Callable[[Any, Any, Any], None],
                         completed: Callable[[Any, int, int, int, int], None]) -> None:
        """Register the activity-buffer callbacks (once per process; the pointers live as long as it)."""
        pointers = (BUFFER_REQUESTED(requested), BUFFER_COMPLETED(completed))
        self.check(self.lib.cuptiActivityRegisterCallbacks(*pointers), "cuptiActivityRegisterCallbacks")
        self._keep.append(pointers)

    def records(self, address: int, valid: int) -> Iterator[int]:
        """Byte offsets of the records in a completed buffer, as CUPTI walks it."""
        record = ctypes.c_void_p(None)
        step = self.lib.cuptiActivityGetNextRecord
        ref = ctypes.byref(record)
        while True:
            rc = step(address, valid, ref)
            if rc == CUPTI_ERROR_MAX_LIMIT_REACHED:
                return
            self.check(rc, "cuptiActivityGetNextRecord")
            yield int(record.value or 0) - address


class CuptiCallError(ProfilerError):
    """A libcupti call that returned an error; `status` is its CUptiResult."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def unsubscribe_reporting(native: Any, handle: int, report: Callable[[str, BaseException], None]) -> None:
    """Unsubscribe `handle` at the end of a session (`native`: a `Native`, or the tests' stand-in for one).

    A failure is reported, not raised: the session ends either way.
    """
    try:
        native.unsubscribe(handle)
    except Exception as exc:
        report("unsubscribing", exc)
