"""JAX's copy calls as the user made them: `jax.device_put`, `jnp.asarray`, `jnp.array`, `jax.device_get`.

JAX copies asynchronously, from threads of its own runtime: `d =
jax.device_put(x)` returns before the upload is issued, and the CUDA call
that makes it has no Python frame on its stack. The tracer then lends it
the main thread's line (`frames`), which is wherever the program has got
to by then, typically the `float(...)` that waits for the step: on the
H200 a loop's 204 uploads were all charged to that line, and the report
advised hoisting a scalar read. So, while a CUPTI recording runs, these
entry points are wrapped (as `profiler.sources.collectives` wraps
torch.distributed's): each call made by the program is kept as an
`EntryCall`, with the user's line, its thread, its host times and the
copies it must make (`expected`); `runtimecopies` then gives the copies
CUPTI recorded from other threads the line of the call that asked for
them, by order, direction and bytes.

The wrappers are put in place once per process, when JAX is imported (a
post-import hook: a program that never imports JAX pays nothing, and
nothing here imports it), and stay; with no recording listening, a call
costs one test. A wrapped call made inside another one (`jnp.array` of
`jnp.asarray`, should JAX call its own public names) is part of the outer
call. Calls traced inside `jax.jit` (their arguments are tracers) make no
copy and are not kept.
"""

from __future__ import annotations

import functools
import math
import sys
import threading
from dataclasses import dataclass
from time import perf_counter_ns
from typing import Any, Callable, Final, Iterable

from ..postimport import PostImport
from .frames import FrameFilter, Instr, SiteKey

#: module attribute -> (the name a site shows, the direction of the copies it makes)
ENTRIES: Final[dict[tuple[str, str], str]] = {
    ("jax", "device_put"): "h2d", ("jax.numpy", "asarray"): "h2d", ("jax.numpy", "array"): "h2d",
    ("jax", "device_get"): "d2h",
}
#: marks a wrapper, so that a second recording in one process wraps nothing again
WRAPPED: Final = "__offload_prof_wrapped__"
#: platforms of devices that CUDA copies reach (a CPU device's arrays are host memory: no copy)
DEVICE_PLATFORMS: frozenset[str] = frozenset({"gpu", "cuda", "rocm"})


@dataclass(frozen=True, slots=True)
class EntryCall:
    """One call of a wrapped entry point, as the program made it.

    `site` and `instr` are the user's frame, as `frames.FrameFilter` gives
    them for a CUDA call made on the user's own thread; `thread` the
    caller's thread; `start_ns`/`end_ns` `perf_counter_ns` as the call
    began and returned; `copies` the (direction, bytes) of the copies it
    must make, one per shard, in the order of its arguments.
    """

    function: str
    site: SiteKey | None
    instr: Instr | None
    thread: int
    start_ns: int
    end_ns: int
    copies: tuple[tuple[str, int], ...]


_SINKS: list[Callable[[EntryCall], None]] = []
_HOOK: PostImport | None = None
_FRAMES: FrameFilter | None = None


class _Nesting(threading.local):
    depth = 0


_NESTING = _Nesting()


def listen(sink: Callable[[EntryCall], None]) -> Callable[[], None]:
    """Hand every call made from now on to `sink`; returns the function that stops it."""
    _SINKS.append(sink)

    def stop() -> None:
        try:
            _SINKS.remove(sink)
        except ValueError:
            pass
    return stop


def install() -> None:
    """Wrap JAX's entry points now if JAX is loaded, else right after it is imported."""
    global _HOOK
    if "jax" in sys.modules:
        wrap_jax()
    elif _HOOK is None:
        _HOOK = PostImport(("jax",), lambda _name: wrap_jax()).install()


def wrap_jax() -> int:
    """Wrap the entry points of the loaded JAX; how many were wrapped (0: already, or a JAX without them)."""
    try:
        import jax
        import jax.numpy as jnp
    except Exception:  # a broken install: its calls are recorded as before
        return 0
    modules = {"jax": jax, "jax.numpy": jnp}
    count = 0
    for (module, name), direction in ENTRIES.items():
        fn = getattr(modules[module], name, None)
        if fn is None or getattr(fn, WRAPPED, None) is not None:
            continue
        setattr(modules[module], name, _wrapper(f"{module}.{name}", fn, direction))
        count += 1
    return count


def _wrapper(label: str, fn: Callable[..., Any], direction: str,
             copies_of: Callable[[str, Any, Any], tuple[tuple[str, int], ...]] | None = None) -> Callable[..., Any]:
    """`fn` wrapped: each call, while a recording listens, is kept with the copies `copies_of` (`expected`) reads."""
    reading = copies_of or expected
    sinks = _SINKS
    nesting = _NESTING

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        if not sinks or nesting.depth:  # nobody records, or inside another wrapped call: the call as it was
            return fn(*args, **kwargs)
        site, instr = _frames().site(sys._getframe(1))
        nesting.depth = 1
        start = perf_counter_ns()
        try:
            result = fn(*args, **kwargs)
        finally:
            nesting.depth = 0
        end = perf_counter_ns()
        try:
            source = args[0] if args else next((kwargs[k] for k in ("x", "a", "object") if k in kwargs), None)
            copies = reading(direction, source, result)
        except Exception:  # an argument this version of JAX takes that the reading does not know: no promise
            copies = ()
        if copies:
            entry = EntryCall(label, site, instr, threading.get_ident(), start, end, copies)
            for sink in list(sinks):
                sink(entry)
        return result

    setattr(call, WRAPPED, fn)
    return call


def _frames() -> FrameFilter:
    global _FRAMES
    if _FRAMES is None:
        _FRAMES = FrameFilter()
    return _FRAMES


def expected(direction: str, source: Any, result: Any) -> tuple[tuple[str, int], ...]:
    """The copies a call must make: (direction, bytes), one per shard of each array it moved.

    An upload (`device_put`, `asarray`, `array`): each leaf of the result
    on a GPU whose leaf of the source was host data (a NumPy array, a
    scalar, a list) took one copy per shard; a source already on a device
    took none (JAX moves it on the device, or not at all), and neither
    does a source that mixes device arrays into a list (`jnp.array([a,
    b])` stacks on the device). A download (`device_get`): each leaf of
    the source on a GPU, one copy per shard (one in all when it is
    replicated), unless JAX has its host value already.
    """
    import jax

    leaves = jax.tree_util.tree_leaves
    if direction == "d2h":
        out: list[tuple[str, int]] = []
        for leaf in leaves(source):
            if _traced(leaf) or getattr(leaf, "_npy_value", None) is not None:
                continue
            sizes = _shard_bytes(leaf)
            if sizes and leaf.is_fully_replicated:
                sizes = [int(leaf.nbytes)]
            out += [("d2h", n) for n in sizes if n]
        return tuple(out)
    sources, results = leaves(source), leaves(result)
    if any(_traced(leaf) for leaf in results):
        return ()
    if len(sources) != len(results):  # one array made of many leaves (`jnp.asarray([1.0, 2.0])`)
        if len(results) != 1 or any(isinstance(leaf, jax.Array) for leaf in sources):
            return ()
        sources = [None]
    return tuple(("h2d", n) for s, r in zip(sources, results) if not isinstance(s, jax.Array)
                 for n in _shard_bytes(r) if n)


def _traced(leaf: Any) -> bool:
    import jax

    return isinstance(leaf, jax.core.Tracer)


def _shard_bytes(leaf: Any) -> list[int]:
    """Bytes of each addressable shard of a concrete JAX array on devices that CUDA copies reach; [] otherwise.

    Read off its sharding (the shards' own arrays are not made: this runs on every call while recording).
    """
    sharding = getattr(leaf, "sharding", None)
    if sharding is None:
        return []
    devices = sharding.addressable_devices
    if not devices or any(d.platform not in DEVICE_PLATFORMS for d in devices):
        return []
    return [math.prod(sharding.shard_shape(leaf.shape)) * leaf.dtype.itemsize] * len(devices)


def entries_of(calls: Iterable[EntryCall]) -> list[EntryCall]:
    """The calls in the order they began (calls of several threads arrive in the order they ended)."""
    return sorted(calls, key=lambda e: e.start_ns)
