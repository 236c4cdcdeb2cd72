"""`CuptiRecorder`: the offload_core `Recorder`'s interface over a CUPTI `Tracer`.

`offload-prof run --source cupti` swaps this in for `profiler.sources.recorder.Recorder`
and changes nothing else: `start()`, `stop()`, `run(...) -> Run`. The run's
`meta.backend` is `"cupti"` (the events came from CUPTI, whatever library
made them), `meta.device` names the GPU, the driver and cupti-python, and
the records are the capture converted by `convert`. Launch call sites are
sampled unless `launch_sites="all"` (`sampling`). `notes()` are the lines
the CLI prints after the summary: what the trace model leaves out, and any
error a callback swallowed (a callback may not raise into CUPTI). The
calls of torch.distributed (`profiler.sources.collectives`), which CUPTI
cannot see as such, come from offload_core's event bus as they do for
the offload_core recorder, and join the capture's records by time. JAX's
copy calls (`jaxcalls`) give the copies JAX makes from its own threads
the line of the call that asked for them (`runtimecopies`).
"""

from __future__ import annotations

import heapq
import linecache
import statistics
import time
from dataclasses import replace
from importlib import metadata
from types import TracebackType
from typing import Any, Callable, Sequence

from ...trace.model import Run
from ...trace.records import Link, Outcome, Record, Site
from ..meta import recorded_meta, started_now
from . import jaxcalls
from .activity import Capture
from .convert import Converted, convert, cxx_demangler
from .probe import Driver, require
from .runtimecopies import attribute
from .sampling import LaunchSites
from .tracer import Tracer


class CuptiRecorder:
    """Record every CUDA copy, memset, kernel and sync of the process between `start()` and `stop()`."""

    def __init__(self, *, fingerprints: bool = True, launch_sites: LaunchSites = "sampled",
                 collectives: bool = True) -> None:
        """`collectives=False` leaves offload_core's event bus alone (no torch.distributed calls are joined):
        `calibrate` measures CUPTI's own cost so, not that of the bus, whose subscriber makes every
        offload_core launch build its event."""
        self.fingerprints = fingerprints
        self.collectives = collectives
        self.launch_sites: LaunchSites = launch_sites
        self._tracer: Tracer | None = None
        self._driver = Driver()
        self._capture: Capture | None = None
        self._stopped = False
        self._collectives: list[tuple[object, ...]] = []
        self._unsubscribe: Callable[[], None] | None = None
        self._converted: Converted | None = None
        self._started_at = ""
        self._mode = "batched"
        self._origin = 0
        self._entries: list[jaxcalls.EntryCall] = []  # JAX's copy calls as the program made them (`jaxcalls`)
        self._clocks: list[tuple[int, int]] = []  # (perf_counter_ns, CUPTI's clock) read together
        self._unlisten: Callable[[], None] | None = None

    @property
    def active(self) -> bool:
        return self._tracer is not None and not self._stopped

    def start(self) -> CuptiRecorder:
        """Check cupti-python and the GPU (one-line `ProfilerError` if either is missing), then listen."""
        if self.active:
            raise RuntimeError("this recorder is already recording")
        cupti, self._driver = require()
        from offload_core import get_mode

        self._mode = get_mode()
        self._capture = self._converted = None
        self._started_at = started_now()
        self._tracer = tracer = Tracer(cupti, fingerprints=self.fingerprints, launch_sites=self.launch_sites).start()
        self._stopped = False
        self._collectives: list[tuple[object, ...]] = []
        self._unsubscribe: Callable[[], None] | None = None
        # CUPTI's clock against the host's perf_counter: the run's start on the clock other processes share
        clock = getattr(tracer.native, "timestamp", None) or cupti.get_timestamp
        cupti_now, host_now = int(clock()), time.perf_counter_ns()
        self._origin = tracer.t0 - (cupti_now - host_now)
        self._clocks = [(host_now, cupti_now)]  # and again at the end: `to_cupti`
        self._collectives = []
        from offload_core import events

        self._unsubscribe = events.subscribe(self._on_row, rows=True) if self.collectives else None
        self._entries = []
        jaxcalls.install()
        self._unlisten = jaxcalls.listen(self._entries.append)
        return self

    def _on_row(self, row: tuple[object, ...]) -> None:
        if row[0] == "collective":  # every other event of offload_core is a CUDA call CUPTI sees itself
            self._collectives.append(row)

    def origin_ns(self) -> int:
        """The `perf_counter_ns` value the run's times count from (CUPTI's start of the recording)."""
        return self._origin

    def to_cupti(self, host_ns: int) -> int:
        """A `perf_counter_ns` time on CUPTI's clock: the two read together at the start and at the end, the
        difference between them taken as drifting evenly in between (the clocks may be slewed apart)."""
        (h0, c0), (h1, c1) = self._clocks[0], self._clocks[-1]
        drift = (c1 - h1) - (c0 - h0)
        return host_ns + (c0 - h0) + (drift * (host_ns - h0) // (h1 - h0) if h1 > h0 else 0)

    def detach(self) -> None:
        """In a forked child: nothing to drop (CUPTI does not follow a fork)."""

    def stop(self) -> None:
        """End the recording; its records are decoded when first asked for (`capture`, `run`)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._unlisten is not None:
            self._unlisten()
            self._unlisten = None
            if self._tracer is not None and len(self._clocks) == 1:
                clock = getattr(self._tracer.native, "timestamp", None) or self._tracer.cupti.get_timestamp
                self._clocks.append((time.perf_counter_ns(), int(clock())))
        if self._tracer is not None and not self._stopped:
            self._tracer.halt()
            self._stopped = True

    def __enter__(self) -> CuptiRecorder:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    @property
    def capture(self) -> Capture:
        """The raw capture (stops the recording if it still runs)."""
        if self._tracer is None:
            raise RuntimeError("this recorder was never started")
        if self._capture is None:
            self._capture = self._tracer.stop()
            self._stopped = True
        return self._capture

    def converted(self) -> Converted:
        if self._converted is None:
            capture = self.capture
            if self._entries:  # JAX's copies, made from its own threads, at the lines of the calls that asked for them
                tracer = self._tracer
                assert tracer is not None  # `capture` raised otherwise
                capture = attribute(capture, self._entries, tracer.copy_threads, self.to_cupti)
            self._converted = convert(capture, self._mode, cxx_demangler(),
                                      infer_launch_sites=self.launch_sites == "sampled")
        return self._converted

    def run(
        self,
        *,
        command: Sequence[str] = (),
        argv: Sequence[str] = (),
        outcome: Outcome = "ok",
        exit_code: int = 0,
        link: Link | None = None,
    ) -> Run:
        capture = self.capture
        converted = self.converted()
        meta = recorded_meta(backend="cupti", device=self.device_label(), mode=self._mode,
                             started_at=self._started_at, wall_ns=capture.t1 - capture.t0,
                             fingerprints=self.fingerprints, command=command, argv=argv, outcome=outcome,
                             exit_code=exit_code, link=link,
                             estimated=("launch.site",) if converted.inferred_sites else (),
                             exits_ns=(_median(capture.sync_exits), _median(capture.copy_exits)))
        return Run(meta, self._with_collectives(converted.records))

    def _with_collectives(self, records: Sequence[Record]) -> Sequence[Record]:
        """The capture's records and torch.distributed's calls, on the run's clock, in order of start.

        Without calls, the capture's records as they are: built on demand from their columns (`convert`).
        """
        if not self._collectives:
            return records
        origin = self._origin
        calls = [Record("collective", int(start) - origin, int(duration), int(nbytes), kernel=kernel,  # type: ignore[arg-type]
                        array=array, site=_sited(site), mode=str(mode))  # type: ignore[arg-type]
                 for _, nbytes, _, start, duration, kernel, _, _, array, site, mode, _, _ in self._collectives]
        return tuple(heapq.merge(records, calls, key=lambda r: r.start_ns))

    def device_label(self) -> str:
        parts = [f"driver {self._driver.version}" if self._driver.version else "",
                 f"cupti-python {_version('cupti-python')}"]
        return f"{self._driver.device or 'NVIDIA GPU'} ({', '.join(p for p in parts if p)})"

    def notes(self) -> list[str]:
        """Lines worth telling the user after the run (nothing when all went to the trace)."""
        out = []
        left = self.converted().leftovers.describe()
        if left:
            out.append(f"not in the trace model: {left}")
        capture = self.capture
        if capture.dropped:
            out.append(f"warning: CUPTI dropped {capture.dropped} activity records (buffers full)")
        out += [f"warning: {e}" for e in capture.errors]
        unheard = self.converted().unheard_text()
        if unheard:
            out.append(f"warning: {unheard}")
        return out


def _median(values: Sequence[int]) -> int:
    """The median of `values` (ns), 0 for none."""
    return int(statistics.median_low(values)) if values else 0


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "?"


def _sited(site: Any) -> Site | None:
    """A call site of offload_core's bus with its source line and column, as the capture's sites have them."""
    if not isinstance(site, Site):
        return None
    raw = linecache.getline(site.file, site.line).rstrip("\r\n")
    text = raw.strip()
    return replace(site, text=text, column=len(raw) - len(raw.lstrip()) + 1 if text else 1)
