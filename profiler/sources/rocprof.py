"""rocprofv3's JSON output -> `profiler.trace.model.Run`: the AMD counterpart of the CUPTI source.

On ROCm the tracing tool is rocprofv3 (rocprofiler-sdk); it runs the
program itself, so the profiler imports its output instead of recording:

    rocprofv3 --kernel-trace --memory-copy-trace --hip-runtime-trace \\
              --output-format json -d out -- python app.py
    offload-prof import-rocprof out/<host>/<pid>_results.json -o trace.json

Only the JSON format carries what the trace needs: `buffer_records`
holds `memory_copy` records with `bytes`, `kernel_dispatch` records and
(with `--hip-runtime-trace`) `hip_api` records; `strings.buffer_records`
names each record's `kind` and `operation` by index, `kernel_symbols`
names kernels, `agents` names the GPU. The CSV files have no byte counts
and the default rocpd database needs rocprofv3's own converter, so both
are refused with a message that says what to run instead.

What rocprofv3 cannot say is left unsaid: there are no Python call sites
(a record's site is its HIP call, `<rocprofv3>:0 in hipMemcpy`, when the
HIP trace is there), no host buffer identity or fingerprints, and no
pageable/pinned distinction, so the trace's backend is `rocprof`, which
the large-pageable-copy rule skips. Host waits come from the HIP
`*Synchronize` calls, and from synchronous (non-`Async`) D2H copies, as in
the CUPTI conversion.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Sequence

from ..version import __version__
from ..errors import TraceError
from ..trace.model import Run
from ..trace.records import Direction, Meta, Record, Site
from ..files import decode_json, read_input
from ..units import INT64_MAX

TOOL_KEY = "rocprofiler-sdk-tool"
DIRECTIONS: dict[str, Direction] = {"HOST_TO_DEVICE": "h2d", "DEVICE_TO_HOST": "d2h"}
#: rocprofiler_memory_copy_operation_t, for files without a strings table
COPY_OPERATIONS = {1: "HOST_TO_HOST", 2: "HOST_TO_DEVICE", 3: "DEVICE_TO_HOST", 4: "DEVICE_TO_DEVICE"}
SYNC_CALLS = ("hipDeviceSynchronize", "hipStreamSynchronize", "hipEventSynchronize", "hipCtxSynchronize")
JSON_HINT = "record with `rocprofv3 --kernel-trace --memory-copy-trace --hip-runtime-trace --output-format json`"


@dataclass(frozen=True)
class _Event:
    correlation: int
    start: int
    order: int
    record: Record
    api: str | None


def load_rocprof(path: str | os.PathLike[str], *, pid: int | None = None, command: Sequence[str] = ()) -> Run:
    """The Run in a rocprofv3 `results.json`; a one-line `TraceError` for anything else."""
    name = str(path)
    if Path(path).suffix.lower() == ".csv":
        raise TraceError(f"{name}: rocprofv3's CSV files carry no byte counts for copies; {JSON_HINT} "
                         "and import results.json")
    raw = read_input(path, "rocprofv3 JSON")
    if raw.startswith(b"SQLite format 3"):
        raise TraceError(f"{name}: a rocpd database (rocprofv3's default output), not JSON; {JSON_HINT}")
    data = decode_json(raw, name, "rocprofv3 JSON")
    processes = data.get(TOOL_KEY) if isinstance(data, dict) else None
    if not isinstance(processes, list) or not processes:
        raise TraceError(f"{name}: not rocprofv3 JSON output (no '{TOOL_KEY}' list); {JSON_HINT}")
    try:
        run = _convert(name, _choose(name, processes, pid), command)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError, IndexError) as exc:
        raise TraceError(f"{name}: unexpected rocprofv3 JSON layout ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else '?'})") from None
    return _checked(name, run)


def _checked(name: str, run: Run) -> Run:
    """`run`, if every figure fits a trace (64-bit, bytes and durations not negative); a `TraceError` else."""
    for n, r in enumerate(run.records):
        if r.nbytes < 0:
            raise TraceError(f"{name}: record {n} ({r.kind}) has a negative byte count {r.nbytes}")
        if not (-INT64_MAX <= r.start_ns <= INT64_MAX and 0 <= r.duration_ns <= INT64_MAX and r.nbytes <= INT64_MAX):
            raise TraceError(f"{name}: record {n} ({r.kind}) has a time or byte count beyond 64 bits")
    if run.meta.wall_ns > INT64_MAX:
        raise TraceError(f"{name}: the run's wall time is beyond 64 bits")
    return run


def _choose(name: str, processes: list[Any], pid: int | None) -> dict[str, Any]:
    pids = [(p.get("metadata") or {}).get("pid") if isinstance(p, dict) else None for p in processes]
    if pid is not None:
        for p, found in zip(processes, pids):
            if found == pid:
                return p
        raise TraceError(f"{name}: no process {pid} in this file (processes: {', '.join(map(str, pids))})")
    if len(processes) > 1:
        raise TraceError(f"{name}: holds {len(processes)} processes ({', '.join(map(str, pids))}); pick one with --pid")
    if not isinstance(processes[0], dict):
        raise TraceError(f"{name}: not rocprofv3 JSON output (a process entry is not an object)")
    return processes[0]


def _names(process: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """strings.buffer_records: per kind index, (kind name, operation names by index)."""
    table = (process.get("strings") or {}).get("buffer_records") or []
    return [(str(e.get("kind", "")), [str(o) for o in e.get("operations", [])]) for e in table if isinstance(e, dict)]


def _operation(names: list[tuple[str, list[str]]], kind: Any, operation: Any) -> str:
    if isinstance(kind, int) and 0 <= kind < len(names):
        ops = names[kind][1]
        if isinstance(operation, int) and 0 <= operation < len(ops):
            return ops[operation]
    return ""


def _kernel_names(process: dict[str, Any]) -> dict[int, str]:
    symbols = process.get("kernel_symbols") or []
    if isinstance(symbols, dict):
        symbols = list(symbols.values())
    out = {}
    for s in symbols:
        if isinstance(s, dict) and "kernel_id" in s:
            label = next((s[k] for k in ("truncated_kernel_name", "formatted_kernel_name", "demangled_kernel_name",
                                         "kernel_name") if s.get(k)), "")
            out[int(s["kernel_id"])] = str(label)
    return out


def _convert(name: str, process: dict[str, Any], command: Sequence[str]) -> Run:
    records_in = process.get("buffer_records") or {}
    if not isinstance(records_in, dict):
        raise TypeError("'buffer_records' is not an object")
    copies = records_in.get("memory_copy") or []
    kernels = records_in.get("kernel_dispatch") or []
    if not copies and not kernels:
        raise TraceError(f"{name}: no memory_copy or kernel_dispatch records; {JSON_HINT}")
    names = _names(process)
    kernel_names = _kernel_names(process)
    calls: dict[int, tuple[str, int, int]] = {}  # correlation -> (HIP call, start, end)
    for r in records_in.get("hip_api") or []:
        calls[_corr(r)] = (_operation(names, r.get("kind"), r.get("operation")), int(r["start_timestamp"]),
                           int(r["end_timestamp"]))
    sites: dict[str, Site] = {}

    def site(api: str | None) -> Site | None:
        if not api:
            return None
        return sites.setdefault(api, Site("<rocprofv3>", 0, api))

    events: list[_Event] = []
    t0 = min([int(r["start_timestamp"]) for r in [*copies, *kernels]] + [c[1] for c in calls.values()])
    for r in copies:
        op = _operation(names, r.get("kind"), r.get("operation")) or COPY_OPERATIONS.get(r.get("operation"), "")
        direction = DIRECTIONS.get(op.removeprefix("MEMORY_COPY_"))
        if direction is None:
            continue
        corr = _corr(r)
        api = calls.get(corr, ("", 0, 0))[0] or None
        start, end = int(r["start_timestamp"]), int(r["end_timestamp"])
        rec = Record(direction, start - t0, max(end - start, 0), int(r.get("bytes", 0)), False, site=site(api))
        events.append(_Event(corr, start, len(events), rec, api))
        if direction == "d2h" and api and "Async" not in api:  # hipMemcpy, hipMemcpyDtoH: the host waited
            enter = min(calls[corr][1], start)
            events.append(_Event(corr, start, len(events), Record("sync", enter - t0, start - enter, site=site(api)), api))
    for r in kernels:
        info = r.get("dispatch_info") or {}
        corr = _corr(r)
        api = calls.get(corr, ("", 0, 0))[0] or None
        start, end = int(r["start_timestamp"]), int(r["end_timestamp"])
        label = kernel_names.get(int(info.get("kernel_id", -1)), "") or f"kernel {info.get('kernel_id', '?')}"
        events.append(_Event(corr, start, len(events), Record("launch", start - t0, max(end - start, 0), kernel=label,
                                                            site=site(api)), api))
    for corr, (api, start, end) in calls.items():
        if api in SYNC_CALLS:
            events.append(_Event(corr, start, len(events), Record("sync", start - t0, max(end - start, 0),
                                                                site=site(api)), api))
    events.sort(key=lambda e: (e.correlation, e.start, e.order))
    launch = 0
    records = []
    for e in events:
        rec = e.record
        if rec.kind == "launch":
            rec = Record("launch", rec.start_ns, rec.duration_ns, kernel=rec.kernel, launch=launch, site=rec.site)
            launch += 1
        records.append(rec)
    meta = _meta(name, process, records, command)
    return Run(meta, tuple(records))


def _corr(r: dict[str, Any]) -> int:
    c = r.get("correlation_id", 0)
    return int(c.get("internal", 0)) if isinstance(c, dict) else int(c)


def _meta(name: str, process: dict[str, Any], records: list[Record], command: Sequence[str]) -> Meta:
    md = process.get("metadata") or {}
    gpus = [a for a in process.get("agents") or [] if isinstance(a, dict) and a.get("type") in (2, "GPU")]
    device = ""
    if gpus:
        first = gpus[0]
        device = str(first.get("product_name") or first.get("marketing_name") or first.get("name") or "AMD GPU")
        if len(gpus) > 1:
            device += f" (+{len(gpus) - 1} more)"
    init, fini = md.get("init_time"), md.get("fini_time")
    wall = int(fini) - int(init) if isinstance(init, int) and isinstance(fini, int) and fini >= init else max(
        (r.end_ns for r in records), default=0)
    argv = md.get("command")
    argv = tuple(str(a) for a in argv) if isinstance(argv, list) else ((str(argv),) if argv else ())
    try:
        started = datetime.fromtimestamp(os.path.getmtime(name), timezone.utc).isoformat(timespec="milliseconds")
    except OSError:
        started = ""
    return Meta(backend="rocprof", device=f"{device or 'AMD GPU'} (rocprofv3, pid {md.get('pid', '?')})",
                mode="batched", started_at=started, wall_ns=max(wall, 0), tool_version=__version__,
                command=tuple(command), argv=argv, cwd=os.getcwd())
