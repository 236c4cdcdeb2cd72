"""The table of intercepted CUDA calls, and reading a copy's arguments from its parameter block."""

from __future__ import annotations

import ctypes
import enum

from profiler.sources.cupti.apis import APIS, COPY, LAUNCH, MEMSET, RUNTIME, SYNC, Api, Layout, copy_reader, resolve

from .fakelib.fakecupti import DriverCopyParams, MemcpyParams


def test_the_table_covers_each_role_once_per_name() -> None:
    names = [(a.domain, a.name) for a in APIS]
    assert len(names) == len(set(names))
    roles = {a.role for a in APIS}
    assert roles == {COPY, MEMSET, LAUNCH, SYNC}
    by_name = {a.name: a for a in APIS}
    # the calls CuPy, PyTorch and Numba copy and launch with
    for name in ("cudaMemcpyAsync_v3020", "cudaMemcpy_v3020", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2",
                 "cuMemcpyHtoDAsync_v2", "cudaLaunchKernel_v7000", "cuLaunchKernel", "cudaStreamSynchronize_v3020",
                 "cudaDeviceSynchronize_v3020", "cuCtxSynchronize", "cuMemsetD8Async"):
        assert name in by_name, name
    assert not any(a.role == MEMSET and a.domain == RUNTIME for a in APIS), "memsets are heard in the driver only"
    assert by_name["cudaMemcpy_v3020"].synchronous and not by_name["cudaMemcpyAsync_v3020"].synchronous
    assert by_name["cuMemcpyDtoH_v2"].layout.direction == "d2h"  # type: ignore[union-attr]
    assert not by_name["cudaMemcpy2D_v3020"].layout.flat  # type: ignore[union-attr]


def test_resolve_skips_names_the_installed_cupti_does_not_know() -> None:
    runtime = enum.IntEnum("R", {"cudaMemcpy_v3020": 31, "cudaSomethingNew_v99": 5})
    driver = enum.IntEnum("D", {"cuLaunchKernel": 307})
    table = resolve(APIS, runtime, driver)
    assert {k: v.name for k, v in table.items()} == {("runtime", 31): "cudaMemcpy_v3020",
                                                     ("driver", 307): "cuLaunchKernel"}


def test_runtime_copy_arguments_and_kind() -> None:
    layout = next(a for a in APIS if a.name == "cudaMemcpyAsync_v3020").layout
    assert layout is not None
    read = copy_reader(layout)
    for kind, direction in ((1, "h2d"), (2, "d2h"), (3, "d2d"), (4, None)):
        p = MemcpyParams(dst=0x1000, src=0x2000, count=4096, kind=kind, stream=0x77)
        assert read(ctypes.addressof(p)) == (0x1000, 0x2000, 4096, direction)
    assert copy_reader(layout) is read, "one reader per layout"


def test_driver_copy_direction_comes_from_the_call() -> None:
    p = DriverCopyParams(dst=0x5000, src=0x6000, count=64)
    api = next(a for a in APIS if a.name == "cuMemcpyDtoH_v2")
    assert copy_reader(api.layout)(ctypes.addressof(p)) == (0x5000, 0x6000, 64, "d2h")  # type: ignore[arg-type]


def test_symbol_copies_read_the_host_pointer_from_its_slot() -> None:
    class ToSymbol(ctypes.Structure):
        _fields_ = [("symbol", ctypes.c_void_p), ("src", ctypes.c_void_p), ("count", ctypes.c_size_t),
                    ("offset", ctypes.c_size_t), ("kind", ctypes.c_int)]

    api = Api("runtime", "x", COPY, False, Layout(dst=None, src=1, count=2, kind=4))
    block = ToSymbol(0x10, 0x20, 12, 0, 1)
    assert copy_reader(api.layout)(ctypes.addressof(block)) == (None, 0x20, 12, "h2d")  # type: ignore[arg-type]
