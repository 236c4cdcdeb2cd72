"""A stand-in for cupti-python, libcupti and a CUDA runtime, for testing the tracer's logic without a GPU.

`FakeCupti` has the slice of `cupti.cupti` the tracer uses (enums, record
dtypes, activity_* and get_timestamp); `FakeNative` the libcupti calls the
tracer makes through ctypes (`profiler.sources.cupti.native.Native`): subscribe,
enable_callback, unsubscribe, the buffer callbacks and the record walk.
`FakeCuda` plays the CUDA runtime: each call builds the real
`CUpti_CallbackData` and `*_params` structs in memory, calls the
subscriber on entry and exit with the struct's address as CUPTI does,
moves the bytes (host memory stands in for device memory) and queues the
activity record CUPTI would deliver; a flush writes the queued records,
packed as the record dtypes say, into a buffer the tracer lent, and hands
it back. This file lives in its own folder so
that the tracer's frame filter can be told to treat it as a library, as it
treats CuPy: call sites then land in the test that called it.
"""

from __future__ import annotations

import ctypes
import enum
import itertools
import threading
from typing import Any, Callable, Iterator

import numpy as np

from profiler.sources.cupti.apis import APIS, DRIVER, RUNTIME, RUNTIME_MEMSETS


class CallbackData(ctypes.Structure):
    # CUpti_CallbackData's layout on 64-bit platforms
    _fields_ = [("callback_site", ctypes.c_int32), ("function_name", ctypes.c_char_p),
                ("function_params", ctypes.c_void_p), ("function_return_value", ctypes.c_void_p),
                ("symbol_name", ctypes.c_char_p), ("context", ctypes.c_void_p), ("context_uid", ctypes.c_uint32),
                ("correlation_data", ctypes.c_void_p), ("correlation_id", ctypes.c_uint32)]


class MemcpyParams(ctypes.Structure):
    # cudaMemcpyAsync_v3020_params and cudaMemcpy_v3020_params (without the stream)
    _fields_ = [("dst", ctypes.c_void_p), ("src", ctypes.c_void_p), ("count", ctypes.c_size_t),
                ("kind", ctypes.c_int), ("stream", ctypes.c_void_p)]


class DriverCopyParams(ctypes.Structure):
    # cuMemcpyHtoD_v2_params / cuMemcpyDtoH_v2_params
    _fields_ = [("dst", ctypes.c_uint64), ("src", ctypes.c_uint64), ("count", ctypes.c_size_t)]


ActivityKind = enum.IntEnum("ActivityKind", {"MEMCPY": 1, "MEMSET": 2, "CONCURRENT_KERNEL": 10,
                                             "SYNCHRONIZATION": 38, "MEMCPY2": 22})
CallbackDomain = enum.IntEnum("CallbackDomain", {"DRIVER_API": 1, "RUNTIME_API": 2})
ApiCallbackSite = enum.IntEnum("ApiCallbackSite", {"API_ENTER": 0, "API_EXIT": 1})
runtime_api_trace_cbid = enum.IntEnum(  # the real enum names calls the source does not listen to as well
    "runtime_api_trace_cbid", {name: 1000 + i for i, name in enumerate(
        [a.name for a in APIS if a.domain == RUNTIME] + list(RUNTIME_MEMSETS))})
driver_api_trace_cbid = enum.IntEnum(
    "driver_api_trace_cbid", {a.name: 5000 + i for i, a in enumerate(a for a in APIS if a.domain == DRIVER)})
callback_data_dtype = np.dtype({"names": [n for n, _ in CallbackData._fields_],
                                "formats": ["<i4", "<i8", "<i8", "<i8", "<i8", "<i8", "<u4", "<i8", "<u4"],
                                "offsets": [getattr(CallbackData, n).offset for n, _ in CallbackData._fields_],
                                "itemsize": ctypes.sizeof(CallbackData)})


def _record_dtype(fields: list[tuple[str, str]]) -> np.dtype:
    return np.dtype([("kind", "<u4"), ("_pad", "<u4"), *fields])


#: record layouts (the fields the tracer reads, not CUPTI's full structs): one size per kind, as in CUPTI
activity_memcpy6_dtype = _record_dtype([("copy_kind", "u1"), ("src_kind", "u1"), ("dst_kind", "u1"), ("flags", "u1"),
                                        ("_pad2", "<u4"), ("bytes", "<u8"), ("start", "<u8"), ("end", "<u8"),
                                        ("device_id", "<u4"), ("stream_id", "<u4"), ("correlation_id", "<u4"),
                                        ("runtime_correlation_id", "<u4")])
activity_kernel10_dtype = _record_dtype([("start", "<u8"), ("end", "<u8"), ("device_id", "<u4"), ("stream_id", "<u4"),
                                         ("correlation_id", "<u4"), ("_pad2", "<u4"), ("name", "<u8")])
activity_memset4_dtype = _record_dtype([("bytes", "<u8"), ("start", "<u8"), ("end", "<u8"), ("device_id", "<u4"),
                                        ("stream_id", "<u4"), ("correlation_id", "<u4"), ("memory_kind", "<u4")])


class FakeCupti:
    """The module surface of `cupti.cupti` that `profiler.sources.cupti.tracer` touches."""

    ActivityKind = ActivityKind
    CallbackDomain = CallbackDomain
    ApiCallbackSite = ApiCallbackSite
    runtime_api_trace_cbid = runtime_api_trace_cbid
    driver_api_trace_cbid = driver_api_trace_cbid
    callback_data_dtype = callback_data_dtype
    activity_memcpy6_dtype = activity_memcpy6_dtype
    activity_kernel10_dtype = activity_kernel10_dtype
    activity_memset4_dtype = activity_memset4_dtype

    def __init__(self) -> None:
        self.clock = itertools.count(1_000_000, 1000)
        self.kinds: set[int] = set()
        self.queued: list[tuple[np.dtype, dict[str, Any]]] = []
        self.native = FakeNative(self)
        self.truncate = 0  # bytes to cut off each record written (a libcupti older than the dtypes)

    def get_timestamp(self) -> int:
        return next(self.clock)

    def activity_enable(self, kind: int) -> None:
        self.kinds.add(int(kind))

    def activity_disable(self, kind: int) -> None:
        self.kinds.discard(int(kind))

    def activity_flush_all(self, flag: int) -> None:
        if self.queued:
            batch, self.queued = self.queued, []
            self.native.deliver(batch, self.truncate)

    def activity_get_num_dropped_records(self, context: int, stream: int, out: int) -> None:
        ctypes.c_size_t.from_address(out).value = 0

    def record(self, kind: int, **fields: Any) -> None:
        dtype = {ActivityKind.MEMCPY: activity_memcpy6_dtype, ActivityKind.CONCURRENT_KERNEL: activity_kernel10_dtype,
                 ActivityKind.MEMSET: activity_memset4_dtype}[kind]
        if int(kind) in self.kinds:
            self.queued.append((dtype, {"kind": int(kind), **fields}))


class FakeNative:
    """The libcupti entry points `profiler.sources.cupti.native.Native` offers, over the fake."""

    def __init__(self, cupti: FakeCupti) -> None:
        self.cupti = cupti
        self.subscribers: dict[int, Callable[..., None]] = {}
        self.enabled: set[tuple[int, int, int]] = set()
        #: thread -> how many CUDA calls it is inside (the fake's `_call` keeps it)
        self.calling: dict[int, int] = {}
        #: every `enable_callback`: (switching thread, whether that thread was inside a CUDA call)
        self.switches: list[tuple[int, bool]] = []
        #: threads that get no callback any more: they were inside a CUDA call while another thread switched
        #: callbacks, which made the real CUPTI deaf to them for the rest of the process (docs/cupti.md)
        self.deaf: set[int] = set()
        self.registrations = 0
        self.requested: Callable[..., None] | None = None
        self.completed: Callable[..., None] | None = None
        self.offsets: dict[int, list[int]] = {}  # buffer address -> record offsets written there
        self.names: list[ctypes.Array[ctypes.c_char]] = []  # kernel-name strings, alive as CUPTI's are

    def register_buffers(self, requested: Callable[..., None], completed: Callable[..., None]) -> None:
        self.registrations += 1
        self.requested, self.completed = requested, completed

    def subscribe(self, fn: Callable[..., None]) -> tuple[int, Any]:
        handle = len(self.subscribers) + 1
        self.subscribers[handle] = fn
        return handle, fn

    def enable_callback(self, handle: int, domain: int, cbid: int, enable: bool = True) -> None:
        me = threading.get_ident()
        self.switches.append((me, self.calling.get(me, 0) > 0))
        self.deaf.update(t for t, depth in self.calling.items() if depth and t != me)
        if enable:
            self.enabled.add((handle, int(domain), int(cbid)))
        else:
            self.enabled.discard((handle, int(domain), int(cbid)))

    def unsubscribe(self, handle: int) -> None:
        self.subscribers.pop(handle, None)
        self.enabled = {e for e in self.enabled if e[0] != handle}

    def name(self, text: str) -> int:
        buf = ctypes.create_string_buffer(text.encode())
        self.names.append(buf)
        return ctypes.addressof(buf)

    def deliver(self, batch: list[tuple[np.dtype, dict[str, Any]]], truncate: int) -> None:
        """Write records into a buffer the tracer lends, as CUPTI does, and complete it."""
        assert self.requested is not None and self.completed is not None
        pointer, size, most = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_size_t()
        self.requested(ctypes.pointer(pointer), ctypes.pointer(size), ctypes.pointer(most))
        address, offset, offsets = int(pointer.value or 0), 0, []
        for dtype, fields in batch:
            row = np.zeros(1, dtype=dtype)
            for k, v in fields.items():
                row[k] = self.name(v) if k == "name" else v
            data = row.tobytes()[: dtype.itemsize - truncate]
            assert offset + len(data) <= size.value
            ctypes.memmove(address + offset, data, len(data))
            offsets.append(offset)
            offset += len(data)
        self.offsets[address] = offsets
        self.completed(None, 0, address, size.value, offset)

    def records(self, address: int, valid: int) -> Iterator[int]:
        yield from (o for o in self.offsets[address] if o < valid)


class FakeCuda:
    """CUDA calls that drive the fake CUPTI like the real driver drives CUPTI."""

    H2D, D2H = 1, 2

    def __init__(self, cupti: FakeCupti) -> None:
        self.cupti = cupti
        self.corr = itertools.count(1)
        self.result = ctypes.c_int(0)
        self.fail_next = False
        self.shared_correlation = False  # nested driver calls reuse the runtime call's correlation id
        self.heard: list[int] = []  # the cbid of every callback a subscriber received, entry and exit
        self.driver_returned = 0  # `synchronize_nested`: the clock as its driver call returned

    def _call(self, domain: CallbackDomain, name: str, params: ctypes.Structure | None,
              body: Callable[[], None], corr: int | None = None) -> int:
        enum_ = runtime_api_trace_cbid if domain == CallbackDomain.RUNTIME_API else driver_api_trace_cbid
        cbid = int(getattr(enum_, name))
        corr = next(self.corr) if corr is None else corr
        data = CallbackData(callback_site=0, function_name=name.encode(),
                            function_params=ctypes.addressof(params) if params is not None else None,
                            function_return_value=ctypes.addressof(self.result), correlation_id=corr)
        native = self.cupti.native
        me = threading.get_ident()
        native.calling[me] = native.calling.get(me, 0) + 1
        try:
            for cb in self._subscribers(int(domain), cbid):
                self.heard.append(cbid)
                cb(None, int(domain), cbid, ctypes.addressof(data))
            self.result.value = 1 if self.fail_next else 0
            self.fail_next = False
            if not self.result.value:
                body()
            data.callback_site = 1
            for cb in self._subscribers(int(domain), cbid):  # asked again: a callback may have switched it
                self.heard.append(cbid)
                cb(None, int(domain), cbid, ctypes.addressof(data))
        finally:
            native.calling[me] -= 1
        return corr

    def _subscribers(self, domain: int, cbid: int) -> list[Callable[..., None]]:
        native = self.cupti.native
        if threading.get_ident() in native.deaf:
            return []
        return [cb for h, cb in native.subscribers.items() if (h, domain, cbid) in native.enabled]

    def memcpy(self, dst: int, src: int, count: int, kind: int, *, asynchronous: bool = False,
               src_kind: int = 1, dst_kind: int = 3) -> int:
        """A runtime copy; like the real runtime it makes its driver call inside, and CUPTI reports both."""
        name = "cudaMemcpyAsync_v3020" if asynchronous else "cudaMemcpy_v3020"
        params = MemcpyParams(dst=dst, src=src, count=count, kind=kind)
        inner = {1: "cuMemcpyHtoD", 2: "cuMemcpyDtoH"}[kind] + ("Async_v2" if asynchronous else "_v2")
        box: dict[str, int] = {}

        def driver() -> None:
            ctypes.memmove(dst, src, count)
            box["start"] = self.cupti.get_timestamp()

        def body() -> None:
            box["driver"] = self._call(CallbackDomain.DRIVER_API, inner, DriverCopyParams(dst=dst, src=src, count=count),
                                       driver, box["outer"] if self.shared_correlation else None)

        box["outer"] = next(self.corr)
        corr = self._call(CallbackDomain.RUNTIME_API, name, params, body, box["outer"])
        if "start" in box:
            self.cupti.record(ActivityKind.MEMCPY, correlation_id=box["driver"], runtime_correlation_id=corr,
                              copy_kind=kind, src_kind=src_kind, dst_kind=dst_kind, bytes=count, start=box["start"],
                              end=box["start"] + 500, stream_id=7, device_id=0)
        return corr

    def htod_driver(self, dst: int, src: int, count: int) -> int:
        params = DriverCopyParams(dst=dst, src=src, count=count)
        corr = self._call(CallbackDomain.DRIVER_API, "cuMemcpyHtoD_v2", params, lambda: ctypes.memmove(dst, src, count))
        self.cupti.record(ActivityKind.MEMCPY, correlation_id=corr, copy_kind=1, src_kind=1, dst_kind=3, bytes=count,
                          start=self.cupti.get_timestamp(), end=self.cupti.get_timestamp(), stream_id=7, device_id=0)
        return corr

    def launch(self, name: str = "k", *, runtime: bool = False) -> int:
        """A driver launch (CuPy's, Numba's); `runtime=True`: `cudaLaunchKernel` making it inside (PyTorch's)."""
        if runtime:
            box: dict[str, int] = {}

            def body() -> None:
                box["driver"] = self._call(CallbackDomain.DRIVER_API, "cuLaunchKernel", None, lambda: None,
                                           box["outer"] if self.shared_correlation else None)

            box["outer"] = next(self.corr)
            self._call(CallbackDomain.RUNTIME_API, "cudaLaunchKernel_v7000", None, body, box["outer"])
            corr = box["driver"]
        else:
            corr = self._call(CallbackDomain.DRIVER_API, "cuLaunchKernel", None, lambda: None)
        start = self.cupti.get_timestamp()
        self.cupti.record(ActivityKind.CONCURRENT_KERNEL, correlation_id=corr, name=name, start=start,
                          end=start + 2000, stream_id=7, device_id=0)
        return corr

    def memset(self, nbytes: int) -> int | None:
        """A runtime memset (`cudaMemsetAsync`; PyTorch's zeroed gradients) as the real runtime makes it.

        With bytes to set, it makes its driver call (`cuMemsetD8Async`)
        inside, and the activity record carries the driver call's
        correlation id, which is returned; an empty one makes no driver call
        and leaves no record (None).
        """
        box: dict[str, int] = {}

        def body() -> None:
            if nbytes:
                box["driver"] = self._call(CallbackDomain.DRIVER_API, "cuMemsetD8Async", None, lambda: None)

        self._call(CallbackDomain.RUNTIME_API, "cudaMemsetAsync_v3020", None, body)
        if "driver" not in box:
            return None
        start = self.cupti.get_timestamp()
        self.cupti.record(ActivityKind.MEMSET, correlation_id=box["driver"], bytes=nbytes, start=start,
                          end=start + 100, stream_id=7, device_id=0, memory_kind=3)
        return box["driver"]

    def synchronize(self) -> int:
        """`cudaStreamSynchronize`: its callbacks time it (no SYNCHRONIZATION records)."""
        return self._call(CallbackDomain.RUNTIME_API, "cudaStreamSynchronize_v3020", None, lambda: None)

    def synchronize_nested(self) -> int:
        """`cudaStreamSynchronize` making its driver call (`cuStreamSynchronize`) inside, as the real runtime does;
        its callbacks time it. `driver_returned`: the clock once the driver call's exit callbacks are done."""
        def body() -> None:
            self._call(CallbackDomain.DRIVER_API, "cuStreamSynchronize", None, lambda: None)
            self.driver_returned = self.cupti.get_timestamp()

        return self._call(CallbackDomain.RUNTIME_API, "cudaStreamSynchronize_v3020", None, body)

    def driver_synchronize(self) -> int:
        """`cuCtxSynchronize` called directly (Numba's way)."""
        return self._call(CallbackDomain.DRIVER_API, "cuCtxSynchronize_v2", None, lambda: None)

    def item(self, dst: int, src: int, count: int) -> None:
        """PyTorch's `.item()`: an async D2H into pageable memory, then a stream sync, in one call."""
        self.memcpy(dst, src, count, self.D2H, asynchronous=True, src_kind=3, dst_kind=1)
        self.synchronize()


_COMPARE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)


def through_c(fn: Callable[[], object]) -> None:
    """Call `fn` from C (libc's `qsort` calling back), as a CUDA call reaches CUPTI's callback from C code.

    Between the caller's line and `fn` there is then a C frame that swallows
    any exception `fn` raises, as ctypes does for CUPTI's callbacks.
    """
    called: list[int] = []

    def compare(a: int, b: int) -> int:
        if not called:
            called.append(1)
            fn()
        return 0

    pointer = _COMPARE(compare)
    items = (ctypes.c_int * 2)(1, 2)
    ctypes.CDLL(None).qsort(items, 2, ctypes.sizeof(ctypes.c_int), pointer)
    assert called, "qsort called back"
