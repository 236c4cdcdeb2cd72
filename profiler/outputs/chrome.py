"""Chrome Trace Event export (`offload-prof export`, its default format), for Perfetto and chrome://tracing.

Each run becomes one process (a distributed job: one per rank, labelled
with the rank and its device, findings on the ranks that made them); its records become complete ("X") slices on
one track per kind of work: H2D copies, D2H copies, kernel launches,
syncs, and regions (entry to exit, so nested regions nest), plus a
counter track of device memory held. When findings are given, each is an
instant ("i") event on a findings track at its first blamed record, named
by its rule and expected saving, with its message; the run's verdict is
the process's label. Timestamps are microseconds from the
start of the run, as the format wants; several runs (naive and batched)
exported together start at the same origin and line up one above the
other. Slices on a track never overlap because offload_core issues one
operation at a time; region slices nest because regions do.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

from offload_core.outfiles import write_atomically

from ..analysis.detectors import Finding
from ..analysis.verdict import Verdict
from ..phrases import saving_text
from ..trace.job import job_of
from ..trace.model import Run
from ..trace.records import DIRECTION_NAMES, relative_file

TRACKS = {"h2d": (1, "H2D copies"), "d2h": (2, "D2H copies"), "launch": (3, "kernels"), "sync": (4, "syncs"),
          "region": (5, "regions"), "memory": (6, "device memory"), "findings": (7, "findings"),
          "d2d": (8, "device-to-device copies"), "memset": (9, "memsets"), "collective": (10, "collectives")}


_DEVICE_TRACKS = ("d2d", "memset", "collective")


def _us(ns: int) -> float:
    return ns / 1000.0


def _process_events(run: Run, pid: int, name: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}},
        {"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}},
    ]
    present = {r.kind for r in run.records} if any(r.kind in _DEVICE_TRACKS for r in run.records) else set()
    for kind, (tid, label) in TRACKS.items():
        if kind in _DEVICE_TRACKS and kind not in present:
            continue  # the tracks of device-side work appear only in runs that have some
        out.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": label}})
        out.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}})
    cwd = run.meta.cwd
    open_regions: dict[int, tuple[int, str]] = {}
    in_use = 0
    for r in run.records:
        args: dict[str, Any] = {}
        if r.site is not None:
            args["site"] = f"{relative_file(r.site.file, cwd)}:{r.site.line} in {r.site.function}"
            if r.site.text:
                args["code"] = r.site.text
        if r.launch is not None:
            args["launch"] = r.launch
        if r.kind in ("h2d", "d2h"):
            args.update(bytes=r.nbytes, pinned=r.pinned, param=r.param, mode=r.mode)
            out.append({"ph": "X", "cat": "copy", "name": f"{DIRECTION_NAMES[r.kind]} {r.param or ''}".strip(),
                        "pid": pid, "tid": TRACKS[r.kind][0], "ts": _us(r.start_ns), "dur": _us(r.duration_ns),
                        "args": args})
        elif r.kind == "launch":
            out.append({"ph": "X", "cat": "launch", "name": r.kernel or "kernel", "pid": pid,
                        "tid": TRACKS["launch"][0], "ts": _us(r.start_ns), "dur": _us(r.duration_ns), "args": args})
        elif r.kind in ("d2d", "memset", "collective"):
            args.update(bytes=r.nbytes, device=r.device, peer=r.peer)
            name = r.kernel or ("memset" if r.kind == "memset" else f"D2D {r.device}->{r.peer}")
            out.append({"ph": "X", "cat": r.kind, "name": name, "pid": pid, "tid": TRACKS[r.kind][0],
                        "ts": _us(r.start_ns), "dur": _us(r.duration_ns), "args": args})
        elif r.kind == "sync":
            out.append({"ph": "X", "cat": "sync", "name": "sync", "pid": pid, "tid": TRACKS["sync"][0],
                        "ts": _us(r.start_ns), "dur": _us(r.duration_ns), "args": args})
        elif r.kind == "region_enter" and r.region is not None:
            open_regions[r.region] = (r.start_ns, args.get("site", ""))
        elif r.kind == "region_exit" and r.region is not None and r.region in open_regions:
            start, site = open_regions.pop(r.region)
            out.append({"ph": "X", "cat": "region", "name": f"region {r.region}", "pid": pid,
                        "tid": TRACKS["region"][0], "ts": _us(start), "dur": _us(r.end_ns - start),
                        "args": {"site": site, "copied_back": r.nbytes, "mode": r.mode}})
        elif r.kind in ("alloc", "free"):
            in_use += r.nbytes if r.kind == "alloc" else -r.nbytes
            out.append({"ph": "C", "name": "device memory", "pid": pid, "tid": TRACKS["memory"][0],
                        "ts": _us(r.end_ns), "args": {"bytes": in_use}})
    for region, (start, site) in open_regions.items():  # a run that ended inside a region
        out.append({"ph": "X", "cat": "region", "name": f"region {region} (not exited)", "pid": pid,
                    "tid": TRACKS["region"][0], "ts": _us(start), "dur": _us(max(run.meta.wall_ns - start, 0)),
                    "args": {"site": site}})
    return out


def _finding_events(run: Run, pid: int, findings: Sequence[Finding], rank: int | None = None) -> list[dict[str, Any]]:
    """An instant per finding at its first blamed record (of `rank`, in a job: `run` is then the job's trace)."""
    out = []
    ranks = None if rank is None else job_of(run)
    of_records = None if ranks is None else ranks.rank_of_records()
    for f in findings:
        mine = [i for i in f.records if of_records is None or of_records[i] == rank]
        at = run.records[mine[0]].start_ns if mine else 0
        out.append({"ph": "i", "s": "t", "cat": "finding", "name": f"{f.code} {saving_text(f)}", "pid": pid,
                    "tid": TRACKS["findings"][0], "ts": _us(at),
                    "args": {"code": f.code, "severity": f.severity, "fix": f.fix,
                             "expected_saving_ns": f.expected_saving_ns, "message": f.message,
                             "site": None if f.site is None else
                             f"{relative_file(f.site.file, run.meta.cwd)}:{f.site.line}:{f.site.column}"}})
    return out


def to_chrome(runs: Sequence[Run], names: Sequence[str] | None = None,
              findings: Sequence[Sequence[Finding]] | None = None,
              verdicts: Sequence[Verdict | None] | None = None) -> dict[str, Any]:
    """The Trace Event JSON object for one or more runs, with each run's findings and verdict when given."""
    events: list[dict[str, Any]] = []
    pid = 0
    for n, run in enumerate(runs, 1):
        label = names[n - 1] if names else f"{run.label} ({run.meta.mode}, {run.meta.backend})"
        judged = verdicts[n - 1] if verdicts is not None else None
        job = job_of(run)
        if job is None:
            pid += 1
            events += _process_events(run, pid, label)
            if findings is not None:
                events += _finding_events(run, pid, findings[n - 1])
            if judged is not None:
                events.append({"ph": "M", "name": "process_labels", "pid": pid, "tid": 0,
                               "args": {"labels": judged.summary(run.meta.cwd)}})
            continue
        # a distributed job: one process per rank, on the job's clock, each with its rank's findings
        for rank, part in job.rank_runs().items():
            pid += 1
            events += _process_events(part, pid, f"{label}: {job.rank_info(rank).label()}")
            if findings is not None:
                events += _finding_events(run, pid, [f for f in findings[n - 1] if rank in f.ranks], rank)
        if judged is not None:
            events.append({"ph": "M", "name": "process_labels", "pid": pid - len(job.ranks) + 1, "tid": 0,
                           "args": {"labels": judged.summary(run.meta.cwd)}})
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"generator": "offload-prof", "runs": [" ".join(r.meta.argv) for r in runs]},
    }


def export(runs: Sequence[Run], path: str | os.PathLike[str], names: Sequence[str] | None = None,
           findings: Sequence[Sequence[Finding]] | None = None,
           verdicts: Sequence[Verdict | None] | None = None) -> Path:
    target = Path(path)
    doc = to_chrome(runs, names, findings, verdicts)
    write_atomically(target, json.dumps(doc, separators=(",", ":")).encode())
    return target
