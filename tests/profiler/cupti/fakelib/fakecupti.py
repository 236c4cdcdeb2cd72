"""A stand-in for cupti-python and a CUDA runtime, for testing the tracer's logic without a GPU.

`FakeCupti` has the slice of `cupti.cupti` the tracer uses (enums, subscribe,
enable_callback, activity_* and get_timestamp). `FakeCuda` plays the CUDA
runtime: each call builds the real `CUpti_CallbackData` and `*_params`
structs in memory, calls the subscriber on entry and exit as CUPTI does,
moves the bytes (host memory stands in for device memory) and queues the
activity record CUPTI would deliver. This file lives in its own folder so
that the tracer's frame filter can be told to treat it as a library, as it
treats CuPy: call sites then land in the test that called it.
"""

from __future__ import annotations

import ctypes
import enum
import itertools
from types import SimpleNamespace
from typing import Any, Callable

import numpy as np

from profiler.cupti.apis import APIS, DRIVER, RUNTIME


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
runtime_api_trace_cbid = enum.IntEnum(
    "runtime_api_trace_cbid", {a.name: 1000 + i for i, a in enumerate(a for a in APIS if a.domain == RUNTIME)})
driver_api_trace_cbid = enum.IntEnum(
    "driver_api_trace_cbid", {a.name: 5000 + i for i, a in enumerate(a for a in APIS if a.domain == DRIVER)})
callback_data_dtype = np.dtype({"names": [n for n, _ in CallbackData._fields_],
                                "formats": ["<i4", "<i8", "<i8", "<i8", "<i8", "<i8", "<u4", "<i8", "<u4"],
                                "offsets": [getattr(CallbackData, n).offset for n, _ in CallbackData._fields_],
                                "itemsize": ctypes.sizeof(CallbackData)})


class FakeCupti:
    """The module surface of `cupti.cupti` that `profiler.cupti.tracer` touches."""

    ActivityKind = ActivityKind
    CallbackDomain = CallbackDomain
    ApiCallbackSite = ApiCallbackSite
    runtime_api_trace_cbid = runtime_api_trace_cbid
    driver_api_trace_cbid = driver_api_trace_cbid
    callback_data_dtype = callback_data_dtype

    def __init__(self) -> None:
        self.clock = itertools.count(1_000_000, 1000)
        self.subscribers: dict[int, Callable[..., None]] = {}
        self.enabled: set[tuple[int, int, int]] = set()
        self.kinds: set[int] = set()
        self.registrations = 0
        self.completed: Callable[[list[Any]], None] | None = None
        self.queued: list[Any] = []

    def get_timestamp(self) -> int:
        return next(self.clock)

    def activity_register_callbacks(self, requested: Callable[[], Any], completed: Callable[[list[Any]], None]) -> None:
        self.registrations += 1
        assert requested()[0] > 0
        self.completed = completed

    def activity_enable(self, kind: int) -> None:
        self.kinds.add(int(kind))

    def activity_disable(self, kind: int) -> None:
        self.kinds.discard(int(kind))

    def activity_flush_all(self, flag: int) -> None:
        if self.completed is not None and self.queued:
            batch, self.queued = self.queued, []
            self.completed(batch)

    def activity_get_num_dropped_records(self, context: int, stream: int, out: int) -> None:
        ctypes.c_size_t.from_address(out).value = 0

    def subscribe(self, callback: Callable[..., None], userdata: Any) -> int:
        handle = len(self.subscribers) + 1
        self.subscribers[handle] = callback
        return handle

    def enable_callback(self, enable: int, handle: int, domain: int, cbid: int) -> None:
        self.enabled.add((handle, int(domain), int(cbid)))

    def unsubscribe(self, handle: int) -> None:
        self.subscribers.pop(handle, None)
        self.enabled = {e for e in self.enabled if e[0] != handle}

    def record(self, kind: int, **fields: Any) -> None:
        if int(kind) in self.kinds:
            self.queued.append(SimpleNamespace(kind=int(kind), **fields))


class FakeCuda:
    """CUDA calls that drive the fake CUPTI like the real driver drives CUPTI."""

    H2D, D2H = 1, 2

    def __init__(self, cupti: FakeCupti) -> None:
        self.cupti = cupti
        self.corr = itertools.count(1)
        self.result = ctypes.c_int(0)
        self.fail_next = False

    def _call(self, domain: CallbackDomain, name: str, params: ctypes.Structure | None,
              body: Callable[[], None]) -> int:
        enum_ = runtime_api_trace_cbid if domain == CallbackDomain.RUNTIME_API else driver_api_trace_cbid
        cbid = int(getattr(enum_, name))
        corr = next(self.corr)
        data = CallbackData(callback_site=0, function_name=name.encode(),
                            function_params=ctypes.addressof(params) if params is not None else None,
                            function_return_value=ctypes.addressof(self.result), correlation_id=corr)
        view = SimpleNamespace(ptr=ctypes.addressof(data), correlation_id=corr, function_name=name)
        subscribers = [cb for h, cb in self.cupti.subscribers.items() if (h, int(domain), cbid) in self.cupti.enabled]
        view.callback_site = 0
        for cb in subscribers:
            cb(None, int(domain), cbid, view)
        self.result.value = 1 if self.fail_next else 0
        self.fail_next = False
        if not self.result.value:
            body()
        data.callback_site = view.callback_site = 1
        for cb in subscribers:
            cb(None, int(domain), cbid, view)
        return corr

    def memcpy(self, dst: int, src: int, count: int, kind: int, *, asynchronous: bool = False,
               src_kind: int = 1, dst_kind: int = 3) -> int:
        name = "cudaMemcpyAsync_v3020" if asynchronous else "cudaMemcpy_v3020"
        params = MemcpyParams(dst=dst, src=src, count=count, kind=kind)
        box: dict[str, int] = {}

        def body() -> None:
            ctypes.memmove(dst, src, count)
            box["start"] = self.cupti.get_timestamp()

        corr = self._call(CallbackDomain.RUNTIME_API, name, params, body)
        if "start" in box:
            self.cupti.record(ActivityKind.MEMCPY, correlation_id=corr, runtime_correlation_id=0, copy_kind=kind,
                              src_kind=src_kind, dst_kind=dst_kind, bytes=count, start=box["start"],
                              end=box["start"] + 500, stream_id=7, device_id=0)
        return corr

    def htod_driver(self, dst: int, src: int, count: int) -> int:
        params = DriverCopyParams(dst=dst, src=src, count=count)
        corr = self._call(CallbackDomain.DRIVER_API, "cuMemcpyHtoD_v2", params, lambda: ctypes.memmove(dst, src, count))
        self.cupti.record(ActivityKind.MEMCPY, correlation_id=corr, copy_kind=1, src_kind=1, dst_kind=3, bytes=count,
                          start=self.cupti.get_timestamp(), end=self.cupti.get_timestamp(), stream_id=7, device_id=0)
        return corr

    def launch(self, name: str = "k") -> int:
        corr = self._call(CallbackDomain.DRIVER_API, "cuLaunchKernel", None, lambda: None)
        start = self.cupti.get_timestamp()
        self.cupti.record(ActivityKind.CONCURRENT_KERNEL, correlation_id=corr, name=name, start=start,
                          end=start + 2000, stream_id=7, device_id=0)
        return corr

    def synchronize(self) -> int:
        corr = self._call(CallbackDomain.RUNTIME_API, "cudaStreamSynchronize_v3020", None, lambda: None)
        start = self.cupti.get_timestamp()
        self.cupti.record(ActivityKind.SYNCHRONIZATION, correlation_id=corr, type=3, start=start, end=start + 300,
                          stream_id=7)
        return corr

    def item(self, dst: int, src: int, count: int) -> None:
        """PyTorch's `.item()`: an async D2H into pageable memory, then a stream sync, in one call."""
        self.memcpy(dst, src, count, self.D2H, asynchronous=True, src_kind=3, dst_kind=1)
        self.synchronize()
