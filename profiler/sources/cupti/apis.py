"""The CUDA API calls the CUPTI source listens to, and how to read their arguments.

CUPTI can call back into Python on every runtime and driver API call, but
a Python callback costs microseconds, and CuPy or PyTorch make several
cheap CUDA calls (`cudaGetDevice`, `cudaGetLastError`, ...) per array
operation. So the source enables callbacks for the calls in this table
only: the ones that copy, set memory, launch kernels or synchronise, the
calls whose activity records the trace is made of.

For copies the table also says where the call's parameter block keeps the
destination and source pointers, the byte count and the `cudaMemcpyKind`.
CUPTI hands the callback a pointer to that block (the `*_params` structs
of CUPTI's generated headers), whose fields are the function's arguments
in order, each in an 8-byte slot on the 64-bit platforms CUPTI supports.
The host pointer gives a copy its buffer identity (`Record.array`) and its
content fingerprint; calls whose host side is not one flat range (2-D and
3-D copies, batched copies) get neither, only their site.

Entries are names, resolved against the installed cupti-python's
`runtime_api_trace_cbid`/`driver_api_trace_cbid` enums; names a version
does not know are skipped, so one table serves CUDA 12 and 13.
"""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass
from typing import Any, Callable, Iterable

COPY, MEMSET, LAUNCH, SYNC = "copy", "memset", "launch", "sync"
RUNTIME, DRIVER = "runtime", "driver"

#: cudaMemcpyKind values (driver_types.h) and the direction they name
_KIND_DIRECTIONS = {0: "h2h", 1: "h2d", 2: "d2h", 3: "d2d"}  # 4, cudaMemcpyDefault: known only afterwards
_SLOT = 8


@dataclass(frozen=True, slots=True)
class Layout:
    """Slots (argument positions) of a copy's parameter block; None where the call has no such argument.

    `direction` is fixed by the call itself (driver `cuMemcpyHtoD`) or None
    when the `kind` slot says it. `flat` means the host side is the one
    range `[pointer, pointer + count)`, so it can be fingerprinted.
    """

    dst: int | None
    src: int | None
    count: int | None
    kind: int | None = None
    direction: str | None = None
    flat: bool = True


@dataclass(frozen=True, slots=True)
class Api:
    """One CUDA call the source subscribes to."""

    domain: str
    name: str
    role: str
    #: True for calls that return only when the copy is done (cudaMemcpy, cuMemcpyDtoH)
    synchronous: bool = False
    layout: Layout | None = None


def _copies() -> list[Api]:
    flat_rt = Layout(dst=0, src=1, count=2, kind=3)
    to_sym = Layout(dst=None, src=1, count=2, kind=4)
    from_sym = Layout(dst=0, src=None, count=2, kind=4)
    pitched = Layout(dst=0, src=2, count=None, kind=6, flat=False)
    out = []
    for suffix, sync in (("_v3020", True), ("_ptds_v7000", True)):
        out += [Api(RUNTIME, f"cudaMemcpy{suffix}", COPY, sync, flat_rt),
                Api(RUNTIME, f"cudaMemcpyToSymbol{suffix}", COPY, sync, to_sym),
                Api(RUNTIME, f"cudaMemcpyFromSymbol{suffix}", COPY, sync, from_sym),
                Api(RUNTIME, f"cudaMemcpy2D{suffix}", COPY, sync, pitched),
                Api(RUNTIME, f"cudaMemcpy3D{suffix}", COPY, sync, None)]
    for suffix in ("_v3020", "_ptsz_v7000"):
        out += [Api(RUNTIME, f"cudaMemcpyAsync{suffix}", COPY, False, flat_rt),
                Api(RUNTIME, f"cudaMemcpyToSymbolAsync{suffix}", COPY, False, to_sym),
                Api(RUNTIME, f"cudaMemcpyFromSymbolAsync{suffix}", COPY, False, from_sym),
                Api(RUNTIME, f"cudaMemcpy2DAsync{suffix}", COPY, False, pitched),
                Api(RUNTIME, f"cudaMemcpy3DAsync{suffix}", COPY, False, None)]
    out += [Api(RUNTIME, "cudaMemcpyPeer_v4000", COPY, True), Api(RUNTIME, "cudaMemcpyPeerAsync_v4000", COPY)]
    out += [Api(RUNTIME, f"cudaMemcpy{d}BatchAsync{s}", COPY) for d in ("", "3D")
            for s in ("_v12080", "_ptsz_v12080", "_v13000", "_ptsz_v13000")]

    htod = Layout(dst=0, src=1, count=2, direction="h2d")
    dtoh = Layout(dst=0, src=1, count=2, direction="d2h")
    unified = Layout(dst=0, src=1, count=2)
    for suffix in ("_v2", "_v2_ptds"):
        out += [Api(DRIVER, f"cuMemcpyHtoD{suffix}", COPY, True, htod),
                Api(DRIVER, f"cuMemcpyDtoH{suffix}", COPY, True, dtoh),
                Api(DRIVER, f"cuMemcpyDtoD{suffix}", COPY)]
    for suffix in ("_v2", "_v2_ptsz"):
        out += [Api(DRIVER, f"cuMemcpyHtoDAsync{suffix}", COPY, False, htod),
                Api(DRIVER, f"cuMemcpyDtoHAsync{suffix}", COPY, False, dtoh),
                Api(DRIVER, f"cuMemcpyDtoDAsync{suffix}", COPY)]
    out += [Api(DRIVER, name, COPY, True, unified) for name in ("cuMemcpy", "cuMemcpy_ptds")]
    out += [Api(DRIVER, name, COPY, False, unified) for name in ("cuMemcpyAsync", "cuMemcpyAsync_ptsz")]
    out += [Api(DRIVER, f"cuMemcpy{d}{s}", COPY, sync) for d, sync in (("2D_v2", True), ("2DUnaligned_v2", True),
                                                                      ("3D_v2", True), ("2DAsync_v2", False),
                                                                      ("3DAsync_v2", False))
            for s in ("", "_ptds" if sync else "_ptsz")]
    out += [Api(DRIVER, name, COPY) for name in ("cuMemcpyPeer", "cuMemcpyPeerAsync", "cuMemcpyPeer_ptds",
                                                 "cuMemcpyPeerAsync_ptsz", "cuMemcpyBatchAsync",
                                                 "cuMemcpyBatchAsync_ptsz", "cuMemcpyBatchAsync_v2",
                                                 "cuMemcpyBatchAsync_v2_ptsz")]
    return out


#: the runtime's memset calls, which the source does not listen to (`_others`)
RUNTIME_MEMSETS: tuple[str, ...] = tuple(f"cudaMemset{d}{s}" for d in ("", "2D", "3D")
                                         for s in ("_v3020", "_ptds_v7000", "Async_v3020", "Async_ptsz_v7000"))


def _others() -> list[Api]:
    # Memsets are heard in the driver only. The runtime's `cudaMemsetAsync` makes its driver call
    # (`cuMemsetD8Async`) inside it, on the same thread and Python stack, and only when there are bytes to set:
    # in one epoch of PyTorch's word_language_model 74,000 runtime memsets made 24,500 driver calls, the rest
    # were empty. A memset's activity record carries its driver call's correlation id, so the driver callback
    # is the one that gives it its site; listening to the runtime call too cost four callbacks per memset
    # instead of two, most of them for memsets that set nothing (docs/profiler.md: the recorder's added time
    # per epoch fell from 1.31x to 1.23x).
    out = [Api(DRIVER, f"cuMemsetD{w}{s}", MEMSET) for w in ("8", "16", "32", "2D8", "2D16", "2D32")
           for s in ("_v2", "_v2_ptds", "Async", "Async_ptsz")]
    out += [Api(RUNTIME, name, LAUNCH) for name in (
        "cudaLaunchKernel_v7000", "cudaLaunchKernel_ptsz_v7000", "cudaLaunchKernelExC_v11060",
        "cudaLaunchKernelExC_ptsz_v11060", "cudaLaunchCooperativeKernel_v9000",
        "cudaLaunchCooperativeKernel_ptsz_v9000", "cudaGraphLaunch_v10000", "cudaGraphLaunch_ptsz_v10000")]
    out += [Api(DRIVER, name, LAUNCH) for name in (
        "cuLaunchKernel", "cuLaunchKernel_ptsz", "cuLaunchKernelEx", "cuLaunchKernelEx_ptsz",
        "cuLaunchCooperativeKernel", "cuLaunchCooperativeKernel_ptsz", "cuGraphLaunch", "cuGraphLaunch_ptsz")]
    out += [Api(RUNTIME, name, SYNC) for name in (
        "cudaDeviceSynchronize_v3020", "cudaThreadSynchronize_v3020", "cudaStreamSynchronize_v3020",
        "cudaStreamSynchronize_ptsz_v7000", "cudaEventSynchronize_v3020")]
    out += [Api(DRIVER, name, SYNC) for name in (
        "cuCtxSynchronize", "cuCtxSynchronize_v2", "cuStreamSynchronize", "cuStreamSynchronize_ptsz",
        "cuEventSynchronize")]
    return out


APIS: tuple[Api, ...] = tuple(_copies() + _others())


def resolve(apis: Iterable[Api], runtime_ids: Any, driver_ids: Any) -> dict[tuple[str, int], Api]:
    """`(domain, cbid) -> Api` for the calls the installed CUPTI knows (by enum member name)."""
    out: dict[tuple[str, int], Api] = {}
    for api in apis:
        enum = runtime_ids if api.domain == RUNTIME else driver_ids
        member = getattr(enum, api.name, None)
        if member is not None:
            out[(api.domain, int(member))] = api
    return out


#: a copy's parameter block address -> (dst, src, count, direction), each None where the layout lacks it
CopyReader = Callable[[int], tuple[int | None, int | None, int | None, str | None]]

_READERS: dict[Layout, CopyReader] = {}


def copy_reader(layout: Layout) -> CopyReader:
    """A function params address -> (dst, src, count, direction) for `layout`, reading the block in one unpack.

    It runs in the API callback for every copy, so the slots are read by a
    `struct.Struct` built once per layout rather than by a ctypes read
    each; slots the layout lacks read as None. The `kind` slot holds an
    enum: 4 bytes in its 8-byte slot (little-endian on every CUPTI platform).
    """
    reader = _READERS.get(layout)
    if reader is not None:
        return reader
    slots = [layout.dst, layout.src, layout.count, layout.kind]
    used = [s for s in slots if s is not None]
    span = (max(used) + 1) * _SLOT if used else _SLOT
    fmt = "<" + "".join("I4x" if i == layout.kind else "Q" for i in range(span // _SLOT))
    unpack = struct.Struct(fmt).unpack_from
    from_address = (ctypes.c_char * span).from_address
    dst, src, count, kind = slots
    fixed = layout.direction
    directions = _KIND_DIRECTIONS

    def read(params: int) -> tuple[int | None, int | None, int | None, str | None]:
        v = unpack(from_address(params))
        direction = fixed if fixed is not None or kind is None else directions.get(v[kind])
        return (None if dst is None else v[dst], None if src is None else v[src],
                None if count is None else v[count], direction)

    _READERS[layout] = read
    return read
