"""torch.distributed's calls as `collective` records: the operation, its payload in bytes, its time and Python line.

A collective is where the ranks of a job meet, so its host time is the
wait for the slowest rank plus the transfer; that makes it the evidence
for the distributed rules (a per-step collective of a scalar, a rank whose
sync makes the others wait). NCCL's kernels show the device side through
CUPTI (`cupti.convert`); this module records the calls themselves, on
any backend (gloo on the CPU included), by wrapping the functions of
`torch.distributed` once PyTorch has been imported (a post-import hook, so
a program that never imports PyTorch pays nothing and nothing imports it).

A call made inside another wrapped call (`all_gather_object` pickles its
object into tensors and all-gathers them; `batch_isend_irecv` calls
`isend` and `irecv`) is part of that call's record, whose bytes are the
outer call's tensors or, for the object collectives, the inner calls'.

Each call is emitted on offload_core's event bus as a row (the recorder
of this process, and of each child, already listens there), with
`kernel` the function's name, `nbytes` the bytes of its input tensor(s),
`array` the address of the first one (a CPU tensor made from a NumPy
array shares its memory, so the address matches offload_core's copies of
that array) and the call site the first frame outside PyTorch and the
profiler. With nothing subscribed a wrapped call costs one attribute test.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from time import perf_counter_ns
from typing import Any, Callable, Final

from .postimport import PostImport

#: the wrapped functions of torch.distributed, with where each takes its input: (position, keyword)
OPERATIONS: Final[dict[str, tuple[int, str]]] = {
    "all_reduce": (0, "tensor"), "broadcast": (0, "tensor"), "reduce": (0, "tensor"),
    "all_gather": (1, "tensor"), "all_gather_into_tensor": (1, "input_tensor"),
    "all_gather_single": (1, "input_tensor"),  # the newer name of all_gather_into_tensor (PyTorch 2.13 has both)
    "reduce_scatter": (1, "input_list"), "reduce_scatter_tensor": (1, "input"),
    "reduce_scatter_single": (1, "input"),  # ... and for reduce_scatter_tensor
    "all_to_all": (1, "input_tensor_list"), "all_to_all_single": (1, "input"),
    "gather": (0, "tensor"), "scatter": (0, "tensor"),
    "send": (0, "tensor"), "recv": (0, "tensor"), "isend": (0, "tensor"), "irecv": (0, "tensor"),
    "barrier": (-1, ""),
    # the object collectives pickle into tensors and pass them to the collectives above: their bytes are those
    "all_gather_object": (-1, ""), "gather_object": (-1, ""), "broadcast_object_list": (-1, ""),
    "scatter_object_list": (-1, ""),
    "batch_isend_irecv": (0, "p2p_op_list"),  # a list of P2POp, each with its tensor
}
#: marks a wrapper, so that wrapping twice (a second recording in one process) wraps nothing
WRAPPED: Final = "__offload_prof_wrapped__"

_HOOK: PostImport | None = None
_SKIPPED: dict[str, bool] = {}
_PROFILER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def install() -> None:
    """Wrap torch.distributed's collectives now if PyTorch is loaded, else right after it is imported."""
    global _HOOK
    if "torch" in sys.modules:
        wrap_torch()
    elif _HOOK is None:
        _HOOK = PostImport(("torch",), lambda _name: wrap_torch()).install()


def wrap_torch() -> int:
    """Wrap the functions of `torch.distributed` (where this PyTorch build has it); how many were wrapped."""
    try:
        import torch.distributed as dist
    except Exception:  # a PyTorch build without distributed support, or one that fails to import it
        return 0
    if not getattr(dist, "is_available", lambda: False)():
        return 0
    torch_dir = os.path.dirname(os.path.abspath(sys.modules["torch"].__file__ or ""))
    # torch.distributed re-exports the functions of distributed_c10d, whose own calls (all_gather_object's
    # all_gather, P2POp's check that its op *is* isend or irecv) read that module's names: both get the wrapper
    c10d = getattr(dist, "distributed_c10d", None)
    count = 0
    for name, where in OPERATIONS.items():
        fn = getattr(dist, name, None)
        if fn is None or getattr(fn, WRAPPED, None) is not None:
            continue
        wrapped = _wrapper(name, fn, where, torch_dir)
        setattr(dist, name, wrapped)
        if c10d is not None and getattr(c10d, name, None) is fn:
            setattr(c10d, name, wrapped)
        count += 1
    return count


class _Nesting(threading.local):
    """The wrapped call this thread is inside, if any: calls made inside it add their bytes to it instead."""

    depth = 0
    inner_bytes = 0
    inner_address: int | None = None


_NESTING = _Nesting()


def _wrapper(name: str, fn: Callable[..., Any], where: tuple[int, str], torch_dir: str) -> Callable[..., Any]:
    from offload_core import events, get_mode

    bus = events.BUS

    nesting = _NESTING

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if not bus.subscribers:  # nobody records: the call as it was
            return fn(*args, **kwargs)
        nbytes, address = _size(_payload(args, kwargs, where))
        if nesting.depth:  # inside another wrapped call (all_gather_object's all_gathers): one record, the outer
            nesting.inner_bytes += nbytes
            if nesting.inner_address is None:
                nesting.inner_address = address
            return fn(*args, **kwargs)
        nesting.depth, nesting.inner_bytes, nesting.inner_address = 1, 0, None
        start = perf_counter_ns()
        try:
            return fn(*args, **kwargs)
        finally:
            end = perf_counter_ns()
            nesting.depth = 0
            if not nbytes:  # the object collectives: the bytes of the tensors they pickled into
                nbytes, address = nesting.inner_bytes, nesting.inner_address
            bus.emit_row(("collective", nbytes, False, start, end - start, name, None, None, address,
                          _site(torch_dir), get_mode(), None, None))

    setattr(call, WRAPPED, fn)
    return call


def _payload(args: tuple[Any, ...], kwargs: dict[str, Any], where: tuple[int, str]) -> Any:
    position, keyword = where
    if position < 0:
        return None
    if len(args) > position:
        return args[position]
    return kwargs.get(keyword)


def _size(payload: Any) -> tuple[int, int | None]:
    """Bytes of a tensor or a list of tensors, and the address of the first (None: no tensor)."""
    tensors = payload if isinstance(payload, (list, tuple)) else [payload]
    nbytes, address = 0, None
    for t in tensors:
        t = getattr(t, "tensor", t)  # a P2POp of batch_isend_irecv carries its tensor
        try:
            nbytes += int(t.numel()) * int(t.element_size())
            if address is None:
                address = int(t.data_ptr()) or None
        except Exception:  # not a tensor
            continue
    return nbytes, address


def _site(torch_dir: str) -> Any:
    """The user's line: the first frame outside PyTorch and the profiler (None: there is none)."""
    from offload_core.sites import Site

    frame = sys._getframe(2)
    while frame is not None:
        file = frame.f_code.co_filename
        skip = _SKIPPED.get(file)
        if skip is None:
            path = os.path.abspath(file)
            skip = _SKIPPED[file] = path.startswith((torch_dir + os.sep, _PROFILER_DIR + os.sep)) or \
                file.startswith("<frozen")
        if not skip:
            break
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return None
    return Site(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
