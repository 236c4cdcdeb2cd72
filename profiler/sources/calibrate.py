"""`offload-prof calibrate`: measure this machine's link through offload_core's backend.

Measurements go through the active backend's own `upload`/`download` and
its timer (`mark`/`since`, device events on a GPU), so they describe the
path offload_core's copies really take, and the profiler never imports
CuPy. Pageable figures use an ordinary NumPy array (with the CuPy
backend's own page-locking of hot buffers off while they are measured);
pinned figures need a backend that can allocate page-locked host memory
(a `pinned_empty(shape, dtype)` method, as the CuPy backend has) and are
left out where it cannot, as on the NumPy backend.
Each figure is the median of several repeats; progress goes to stderr.

It also measures what recording costs the host (`recording_costs`):
the same empty launches timed unrecorded and recorded, in alternating
blocks, by offload_core's recorder (per launch in a region, and per event
of a naive launch, which allocates, copies and frees) and, where CuPy and
cupti-python are there, by a CUPTI recording. The replay sets those
figures aside, so that a predicted saving is the unrecorded program's.
"""

from __future__ import annotations

import platform
import statistics
import time
from datetime import datetime, timezone
from typing import Any, Callable

import numpy as np

from offload_core import In, get_backend, kernel, offload, region
from offload_core.backends.base import Backend, device_layout

from ..version import __version__
from ..trace.records import DIGEST_LARGE_BYTES, DIGEST_SMALL_BYTES, Link


@kernel
def _noop(x: In) -> None:
    """A launch that does no work: what remains is the cost of launching."""


def _copy_ns(be: Backend, host: np.ndarray[Any, Any], dev: Any, kind: str) -> int:
    mark = be.mark()
    if kind == "h2d":
        be.upload(host, dev)
    else:
        be.download(dev, host)
    timing = be.since(mark)
    be.synchronize()
    return max(timing.resolve()[1], 1)


def _median_copy_ns(be: Backend, host: np.ndarray[Any, Any], kind: str, repeats: int) -> int:
    dev = be.empty(host.shape, host.dtype, device_layout(host))
    try:
        _copy_ns(be, host, dev, kind)  # warm-up: first-touch page faults, lazy driver setup
        return int(statistics.median(_copy_ns(be, host, dev, kind) for _ in range(repeats)))
    finally:
        be.free(dev)


def measure(
    size: int = 64 * 2**20, repeats: int = 5, small_repeats: int = 200, launches: int = 2000,
    name: str | None = None, progress: Callable[[str], None] = lambda _: None,
) -> Link:
    """Measure the active backend's link and return it as a `Link`."""
    be = get_backend()
    n = max(size // 8, 1)
    figures: dict[str, float | None] = {}
    host = np.ones(n)
    pinned_empty = getattr(be, "pinned_empty", None)
    pinned = pinned_empty((n,), np.dtype(np.float64)) if callable(pinned_empty) else None
    pinning = getattr(be, "pinning", None)  # the CuPy backend page-locks hot buffers: not while measuring pageable
    for kind in ("h2d", "d2h"):
        progress(f"measuring pageable {kind.upper()}: {host.nbytes / 1e6:.0f} MB x {repeats}")
        was = getattr(pinning, "enabled", False)
        if pinning is not None:
            pinning.enabled = False
        try:
            figures[f"{kind}_pageable_gbps"] = host.nbytes / _median_copy_ns(be, host, kind, repeats)
        finally:
            if pinning is not None:
                pinning.enabled = was
        if pinned is not None:
            pinned[...] = 1.0
            progress(f"measuring pinned {kind.upper()}: {pinned.nbytes / 1e6:.0f} MB x {repeats}")
            figures[f"{kind}_pinned_gbps"] = pinned.nbytes / _median_copy_ns(be, pinned, kind, repeats)
    progress(f"measuring small-copy latency: 8 B x {small_repeats} each way")
    tiny = np.ones(1)
    latency = statistics.median([_median_copy_ns(be, tiny, "h2d", small_repeats) / 1e3,
                                 _median_copy_ns(be, tiny, "d2h", small_repeats) / 1e3])
    progress(f"measuring launch overhead: {launches} launches of an empty kernel")
    x = np.ones(8)
    with region(In(x)):
        offload(_noop, x)
        launch_us = _per_launch_us(lambda: offload(_noop, x), launches, be)
    progress(f"measuring what recording costs: {launches} launches, unrecorded and recorded")
    costs = recording_costs(launches, progress=progress)
    progress(f"measuring the fingerprint digest: {host.nbytes / 1e6:.0f} MB x {repeats}, "
             f"{min(host.nbytes, DIGEST_SMALL_BYTES) / 1e6:.0f} MB x {4 * repeats}")
    costs["digest_gbps"] = digest_gbps(host, repeats)
    costs["digest_small_gbps"] = digest_gbps(host[: max(DIGEST_SMALL_BYTES // 8, 1)], 4 * repeats)
    progress("measuring sync overhead")
    samples = []
    for _ in range(small_repeats):
        t0 = time.perf_counter_ns()
        be.synchronize()
        samples.append(time.perf_counter_ns() - t0)
    sync_us = statistics.median(samples) / 1e3
    when = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return Link(
        name=name or f"local-{be.name}",
        h2d_pageable_gbps=round(float(figures["h2d_pageable_gbps"] or 0.0), 3),
        d2h_pageable_gbps=round(float(figures["d2h_pageable_gbps"] or 0.0), 3),
        h2d_pinned_gbps=None if pinned is None else round(float(figures["h2d_pinned_gbps"] or 0.0), 3),
        d2h_pinned_gbps=None if pinned is None else round(float(figures["d2h_pinned_gbps"] or 0.0), 3),
        latency_us=round(latency, 3),
        launch_us=round(launch_us, 3),
        sync_us=round(sync_us, 3),
        **{k: (None if v is None else round(v, 3)) for k, v in costs.items()},
        source=f"calibrated {when} on {platform.node() or 'this machine'}, backend {be.name} ({be.device}), "
               f"offload-prof {__version__}",
    )


def digest_gbps(host: np.ndarray, repeats: int) -> float:
    """How fast a recording digests copied bytes (`fingerprint_bytes`, what both recorders call): GB/s, median."""
    from offload_core.borrows import fingerprint_bytes

    flat = host.reshape(-1).view(np.uint8)
    samples = []
    for _ in range(max(repeats, 1)):
        start = time.perf_counter_ns()
        fingerprint_bytes(flat)
        samples.append(time.perf_counter_ns() - start)
    return flat.nbytes / max(statistics.median(samples), 1)


#: blocks of launches per variant, alternated so that drift of the machine falls on both
_BLOCKS = 5


def _per_launch_us(launch: Callable[[], None], launches: int, be: Backend) -> float:
    start = time.perf_counter_ns()
    for _ in range(launches):
        launch()
    be.synchronize()
    return (time.perf_counter_ns() - start) / launches / 1e3


def _recorded_extra_us(launch: Callable[[], None], launches: int, be: Backend,
                       recorder: Callable[[], Any]) -> tuple[float, int]:
    """(µs the recording adds per launch, events recorded per launch): medians over alternating blocks."""
    block = max(launches // _BLOCKS, 1)
    plain, recorded, events = [], [], 0
    for _ in range(_BLOCKS):
        plain.append(_per_launch_us(launch, block, be))
        with recorder() as rec:
            recorded.append(_per_launch_us(launch, block, be))
        events = len(rec.raw) // block
        rec.raw.clear()
    return max(statistics.median(recorded) - statistics.median(plain), 0.0), events


def recording_costs(launches: int = 2000, progress: Callable[[str], None] = lambda _: None) -> dict[str, float | None]:
    """What recording adds to the host's time per launch and per other event, for offload_core and CUPTI.

    offload_core's recorder: empty launches in a region (one event each),
    then naive launches of the same kernel (an allocation, an upload, the
    launch and a free each): what the naive launch adds beyond the batched
    one, per extra event. CUPTI: the batched launches and scalar reads
    under a `CuptiRecorder` against unrecorded blocks before and after it
    (one CUPTI session: CUPTI allows one subscriber per process); None where
    the backend is not CuPy or cupti-python or the GPU cannot be used.
    """
    from offload_core import get_mode, set_mode

    from .recorder import Recorder

    be = get_backend()
    x = np.ones(8)
    costs: dict[str, float | None] = {"recorded_launch_us": None, "recorded_event_us": None, "cupti_launch_us": None,
                                      "cupti_event_us": None}
    with region(In(x)):
        batched = lambda: offload(_noop, x)  # noqa: E731
        batched()
        costs["recorded_launch_us"], _ = _recorded_extra_us(batched, launches, be, Recorder)
    mode = get_mode()
    set_mode("naive")
    try:
        naive = lambda: offload(_noop, x)  # noqa: E731
        naive()
        extra, events = _recorded_extra_us(naive, max(launches // 4, 1), be, Recorder)
    finally:
        set_mode(mode)
    if events > 1:
        costs["recorded_event_us"] = max(extra - (costs["recorded_launch_us"] or 0.0), 0.0) / (events - 1)
    if be.name == "cupy":
        costs["cupti_launch_us"], costs["cupti_event_us"] = _cupti_extra_us(launches, be, progress)
    return costs


def _cupti_extra_us(launches: int, be: Backend, progress: Callable[[str], None]) -> tuple[float | None, float | None]:
    """(µs CUPTI adds per launch, µs per other recorded call): blocks under a `CuptiRecorder` against plain ones.

    The recorder leaves offload_core's event bus alone: listening to it
    makes each of these offload_core launches build its event (the cost
    `recorded_launch_us` measures), which a CuPy or PyTorch program's
    launches never do. Measured with it (H100, 2026-12-07), the figure was
    1.7-4.9 µs per launch while CuPy's own launch-only loop ran no slower
    recorded than plain in the same process (-4.4 to +1.4 µs, median 0).

    The other calls are scalar reads (an 8-byte download and a sync, as
    `.item()` or `float()` make one, through the backend): their copy and
    sync callbacks, with fingerprints as `offload-prof run` takes them,
    divided among the records each read leaves.
    """
    from ..errors import ProfilerError
    from .cupti import CuptiRecorder

    x = np.ones(8)
    block = max(launches // _BLOCKS, 1)
    reads = max(block // 4, 1)
    value = np.zeros(1)
    scalar = be.empty(value.shape, value.dtype, device_layout(value))

    def read() -> None:
        be.download(scalar, value)
        be.synchronize()

    def per_read_us() -> float:
        start = time.perf_counter_ns()
        for _ in range(reads):
            read()
        return (time.perf_counter_ns() - start) / reads / 1e3

    try:
        with region(In(x)):
            launch = lambda: offload(_noop, x)  # noqa: E731
            launch()
            read()
            plain = [_per_launch_us(launch, block, be) for _ in range(_BLOCKS)]
            plain_reads = [per_read_us() for _ in range(_BLOCKS)]
            try:
                recorder = CuptiRecorder(fingerprints=True, collectives=False).start()
            except ProfilerError as exc:
                progress(f"not measuring CUPTI's cost: {exc}")
                return None, None
            try:
                recorded = [_per_launch_us(launch, block, be) for _ in range(_BLOCKS)]
                recorded_reads = [per_read_us() for _ in range(_BLOCKS)]
            finally:
                recorder.stop()
            plain += [_per_launch_us(launch, block, be) for _ in range(_BLOCKS)]
            plain_reads += [per_read_us() for _ in range(_BLOCKS)]
    finally:
        be.free(scalar)
    per_launch = max(statistics.median(recorded) - statistics.median(plain), 0.0)
    records = sum(1 for r in recorder.run().records if r.kind != "launch") / (reads * _BLOCKS)
    if records < 1:
        return per_launch, None
    return per_launch, max(statistics.median(recorded_reads) - statistics.median(plain_reads), 0.0) / records


def describe(link: Link) -> str:
    """The figures as a small table."""
    def gbps(v: float | None) -> str:
        return "not available on this backend" if v is None else f"{v:.2f} GB/s"

    rows = [
        ("H2D pageable", gbps(link.h2d_pageable_gbps)), ("D2H pageable", gbps(link.d2h_pageable_gbps)),
        ("H2D pinned", gbps(link.h2d_pinned_gbps)), ("D2H pinned", gbps(link.d2h_pinned_gbps)),
        ("small-copy latency", f"{link.latency_us:.2f} us"),
        ("launch overhead", "-" if link.launch_us is None else f"{link.launch_us:.2f} us (offload() of an empty kernel)"),
        ("sync overhead", "-" if link.sync_us is None else f"{link.sync_us:.2f} us"),
        ("recording, per launch", "-" if link.recorded_launch_us is None else f"{link.recorded_launch_us:.2f} us"
         " (offload_core's recorder)"),
        ("recording, per event", "-" if link.recorded_event_us is None else f"{link.recorded_event_us:.2f} us"
         " (other events of offload_core's recorder)"),
        ("CUPTI, per launch", "-" if link.cupti_launch_us is None else f"{link.cupti_launch_us:.2f} us"),
        ("CUPTI, per other call", "-" if link.cupti_event_us is None else f"{link.cupti_event_us:.2f} us"
         " (a copy's or a sync's callbacks)"),
        ("fingerprint digest", "-" if link.digest_gbps is None else f"{link.digest_gbps:.2f} GB/s"
         f" (copied bytes, both recorders; {DIGEST_LARGE_BYTES >> 20} MiB)"),
        ("  of a cached buffer", "-" if link.digest_small_gbps is None else f"{link.digest_small_gbps:.2f} GB/s"
         f" ({DIGEST_SMALL_BYTES >> 20} MiB, digested again)"),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join([f"link profile {link.name}: {link.source}"] + [f"  {k:<{width}}  {v}" for k, v in rows]) + "\n"
