"""Gate baselines: what a run copied, per call site, kernel and direction, in a small stable file.

A baseline is derived from a `Run` and keeps only what the gate compares:
for each `FlowKey` (the site's file relative to the run's folder, its
function, the text of its line, the kernel, the direction, and in a
distributed job the rank) the count,
bytes and measured time of the copies, plus the run's totals for the
optional time checks. Keys hold no line numbers, so that moving code up or
down a file keeps the baseline; the last line seen is kept beside the key
only to place annotations. The file is sorted JSON, so a change to a
committed baseline reads as a plain diff. A job's baseline keeps every
rank's flows apart (schema 2, whose flows name their rank), so the gate
checks each rank exactly, one rank (`select("3")`) or the job's sums
(`select("job")`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from offload_core.outfiles import write_atomically

from ..analysis.summary import Flow, totals
from ..errors import TraceError
from ..files import json_type
from ..trace.model import Run, require_columns
from ..trace.records import DIRECTION_NAMES, Direction, Meta, relative_file
from ..trace.tracefile import read_json_document
from ..units import INT64_MAX

FORMAT = "offload-prof-baseline"
SCHEMA_VERSION = 2
REGION = "(region)"
TIME_FIELDS = ("wall", "copy", "h2d", "d2h", "kernel", "sync")


@dataclass(frozen=True, order=True)
class FlowKey:
    """One stream of copies: where (file, function, line text), for which kernel, which way."""

    file: str
    function: str
    text: str
    kernel: str
    direction: Direction
    #: the rank of a distributed job whose copies these are; -1 outside a job (or for the job's sums)
    rank: int = -1

    def label(self) -> str:
        code = f" `{self.text}`" if self.text else ""
        where = f"rank {self.rank}: " if self.rank >= 0 else ""
        return f"{where}{self.file} in {self.function}{code} [{self.kernel}] {DIRECTION_NAMES[self.direction]}"


@dataclass(frozen=True)
class Baseline:
    """Copies per `FlowKey`, the run's times in ns (`TIME_FIELDS`), and where it came from."""

    flows: Mapping[FlowKey, Flow]
    times: Mapping[str, int]
    lines: Mapping[FlowKey, int] = field(default_factory=dict)
    command: str = ""
    mode: str = ""
    backend: str = ""

    @classmethod
    def from_run(cls, run: Run) -> Baseline:
        flows: dict[FlowKey, Flow] = {}
        lines: dict[FlowKey, int] = {}
        cwd = run.meta.cwd
        ranks = [-1 if p.rank is None else p.rank.rank for p in run.meta.processes] or [-1]
        for r in run.records:
            kind = r.kind
            if kind != "h2d" and kind != "d2h":
                continue
            s = r.site
            key = FlowKey(relative_file(s.file, cwd) if s else "", s.function if s else "", s.text if s else "",
                          r.kernel or REGION, kind, ranks[r.process] if r.process < len(ranks) else -1)
            flows[key] = flows.get(key, Flow()) + Flow(1, r.nbytes, r.duration_ns)
            if s is not None:
                lines[key] = s.line
        t = totals(run)
        times = {"wall": t.wall_ns, "copy": t.copies.ns, "h2d": t.h2d.ns, "d2h": t.d2h.ns,
                 "kernel": t.launches.ns, "sync": t.syncs.ns}
        return cls(flows, times, lines, command_of(run.meta), run.meta.mode, run.meta.backend)

    @property
    def ranks(self) -> tuple[int, ...]:
        """The ranks whose flows the baseline holds (empty outside a job)."""
        return tuple(sorted({k.rank for k in self.flows if k.rank >= 0}))

    def select(self, which: str) -> Baseline:
        """The flows the gate compares for `--rank`: `all` (every rank apart), `job` (summed over ranks), or one rank."""
        if which == "all":
            return self
        flows: dict[FlowKey, Flow] = {}
        lines: dict[FlowKey, int] = {}
        for key, f in self.flows.items():
            if which == "job":
                kept = replace(key, rank=-1)
            elif key.rank == int(which):
                kept = key
            else:
                continue
            flows[kept] = flows.get(kept, Flow()) + f
            if key in self.lines:
                lines[kept] = self.lines[key]
        return replace(self, flows=flows, lines=lines)

    def totals(self, direction: Direction) -> Flow:
        out = Flow()
        for key, f in self.flows.items():
            if key.direction == direction:
                out = out + f
        return out

    # --------------------------------------------------------- persistence
    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "schema": SCHEMA_VERSION if self.ranks else 1,
            "command": self.command,
            "mode": self.mode,
            "backend": self.backend,
            "times_ns": dict(sorted(self.times.items())),
            "flows": [
                {"file": k.file, "function": k.function, "text": k.text, "kernel": k.kernel, "direction": k.direction,
                 **({"rank": k.rank} if k.rank >= 0 else {}),
                 "count": f.count, "bytes": f.nbytes, "ns": f.ns, "line": self.lines.get(k, 0)}
                for k, f in sorted(self.flows.items())
            ],
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the baseline atomically, creating missing folders; `OSError` when it cannot be written."""
        target = Path(path)
        write_atomically(target, (json.dumps(self.to_json(), indent=1, sort_keys=False) + "\n").encode())
        return target

    @classmethod
    def from_json(cls, data: Any, source: str = "baseline") -> Baseline:
        def fail(problem: str) -> TraceError:
            return TraceError(f"{source}: {problem}")

        if not isinstance(data, dict):
            raise fail(f"not an offload-prof baseline (the JSON is {json_type(data)}, not an object)")
        if data.get("format") == "offload-prof-trace":
            return cls.from_run(require_columns(Run.from_json(data, source), source))
        if data.get("format") != FORMAT:
            raise fail(f"not an offload-prof baseline or trace (format {data.get('format')!r})")
        schema = data.get("schema")
        if not isinstance(schema, int) or isinstance(schema, bool) or schema < 1:
            raise fail(f"bad schema version {schema!r}")
        if schema > SCHEMA_VERSION:
            raise fail(f"written with baseline schema {schema}, newer than this offload-prof reads "
                       f"({SCHEMA_VERSION}); upgrade offload-guard")
        times = data.get("times_ns", {})
        if not isinstance(times, dict) or not all(k in TIME_FIELDS and _nat(v) for k, v in times.items()):
            raise fail(f"'times_ns' must map {', '.join(TIME_FIELDS)} to integers from 0 to 2^63-1")
        for key in ("command", "mode", "backend"):
            if not isinstance(data.get(key, ""), str):
                raise fail(f"'{key}' must be a string, got {json_type(data[key])}")
        raw = data.get("flows")
        if not isinstance(raw, list):
            raise fail("missing list 'flows'")
        flows: dict[FlowKey, Flow] = {}
        lines: dict[FlowKey, int] = {}
        for n, item in enumerate(raw):
            strs = ("file", "function", "text", "kernel", "direction")
            if not (isinstance(item, dict) and all(isinstance(item.get(k), str) for k in strs)
                    and all(_nat(item.get(k)) for k in ("count", "bytes", "ns"))):
                raise fail(f"flow {n} needs strings {', '.join(strs)} and integers count, bytes, ns from 0 to 2^63-1")
            if item["direction"] not in DIRECTION_NAMES:
                raise fail(f"flow {n}: direction {item['direction']!r} is not h2d or d2h")
            rank = item.get("rank", -1)
            if rank != -1 and not _nat(rank):
                raise fail(f"flow {n}: rank must be an integer from 0 to 2^63-1, got {rank!r}")
            key = FlowKey(*(item[k] for k in strs), rank)
            if key in flows:
                raise fail(f"flow {n} repeats {key.label()}")
            flows[key] = Flow(item["count"], item["bytes"], item["ns"])
            if _nat(item.get("line")):
                lines[key] = item["line"]
        return cls(flows, {k: int(v) for k, v in times.items()}, lines, data.get("command", ""),
                   data.get("mode", ""), data.get("backend", ""))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Baseline:
        """A baseline file, or a trace file (whose baseline is derived)."""
        return cls.from_json(read_json_document(path, "baseline"), str(path))


def command_of(meta: Meta) -> str:
    """The target's command line as baselines keep it: the script relative to the run's folder, then its arguments.

    `./app.py`, `app.py` and `/checkout/app.py` run in `/checkout` are one
    command, so that the gate's check that a run and its baseline come from
    the same command does not depend on how the script was named.
    """
    argv = list(meta.argv)
    if argv:
        first = argv[0] if os.path.isabs(argv[0]) else os.path.normpath(argv[0])
        argv[0] = relative_file(first, meta.cwd)
    return " ".join(argv)


def _nat(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= INT64_MAX
