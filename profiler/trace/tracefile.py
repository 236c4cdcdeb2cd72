"""Trace files on disk: the JSON document (schema 1 rows, schema 2 and 3 columns), its validation, atomic writes.

`profiler.trace.model.Run` is the data; this module owns how it is stored:
`save`/`load` and `to_document`/`from_document` (behind `Run.save`,
`Run.load`, `Run.to_json` and `Run.from_json`): reading the bytes through
`profiler.files` (regular files only, bounded, a one-line `TraceError` for
every way a file can be broken: truncated, not gzip, not UTF-8, not JSON,
nested too deeply), refusing what is not a trace (another format, a newer
schema, a meta field of the wrong type or out of range), checking each
field of a schema 1 row, handing schema 2 and 3 columns to
`profiler.trace.columns` (schema 3 adds the `process` column of runs that
span several processes), and writing so that an interrupted save leaves
the previous file or none, never half of one. It reads a run through the
`Stored` protocol and gives back its parts, so that it needs no import of
the model above it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Iterator, Protocol, Sequence

from offload_core.outfiles import write_atomically

from ..errors import TraceError
from ..files import decode_json, json_type, read_input
from ..units import INT64_MAX, shown
from .records import (DEVICE_KINDS, KINDS, MODES, OUTCOMES, SCHEMA_VERSION, SINGLE_PROCESS_FIELDS, Link, Meta, Process,
                      Rank, Record, Site)

if TYPE_CHECKING:
    from .columns import Columns

FORMAT: Final = "offload-prof-trace"


class Stored(Protocol):
    """What a trace file holds of a run (`profiler.trace.model.Run`)."""

    @property
    def meta(self) -> Meta: ...

    @property
    def records(self) -> Sequence[Record]: ...

    @property
    def columns(self) -> Columns: ...


def save(run: Stored, path: str | os.PathLike[str]) -> Path:
    """Write the trace (gzip-compressed when the name ends in .gz), atomically."""
    target = Path(path)
    # written piece by piece as the encoder makes them: a trace of 10^6 records is never in memory as one string
    # and again as its bytes
    pieces = (s.encode() for s in _encoder().iterencode(to_document(run)))
    write_atomically(target, _gzipped(pieces) if target.suffix == ".gz" else _joined(pieces))
    return target


def _encoder() -> json.JSONEncoder:
    return json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def _joined(pieces: Iterator[bytes], size: int = 1 << 20) -> Iterator[bytes]:
    """The encoder's many small pieces gathered into writes of about `size` bytes (a large piece passes as it is)."""
    held: list[bytes] = []
    n = 0
    for piece in pieces:
        held.append(piece)
        n += len(piece)
        if n >= size:
            yield b"".join(held)
            held, n = [], 0
    if held:
        yield b"".join(held)


def _gzipped(pieces: Iterator[bytes]) -> Iterator[bytes]:
    """The pieces compressed as one gzip member (level 6), as `gzip.compress` would."""
    import zlib

    packer = zlib.compressobj(6, zlib.DEFLATED, 31)
    for piece in _joined(pieces):
        out = packer.compress(piece)
        if out:
            yield out
    yield packer.flush()


def load(path: str | os.PathLike[str]) -> tuple[Meta, Sequence[Record]]:
    """The meta and records of a trace written by `save`; `TraceError` with one line naming the file otherwise."""
    return from_document(read_json_document(path, "trace"), str(path))


def to_document(run: Stored, schema: int | None = None) -> dict[str, Any]:
    """A JSON-ready dict: meta, a site table, and the records as columns (schema 2 and 3) or rows (schema 1).

    Without `schema`, the oldest schema that holds the run: 3 when its
    records come from several processes (only schema 3 has the `process`
    column), else 2, so that a run of one process stays readable by
    versions that read schema 2. A run whose records name devices or are
    device-to-device copies, memsets or collectives is schema 4 (the
    `device` and `peer` columns, and kind codes older versions do not
    know). A run of one process holding an integer
    the columns cannot (beyond 64 bits) falls back to rows, so that
    nothing recorded is ever lost; several processes need columns.
    """
    if schema not in (None, 1, 2, 3, 4):
        raise ValueError(f"cannot write trace schema {schema}; this version writes 1 to 4")
    columns: Columns | None = None
    if schema != 1:
        try:
            columns = run.columns
        except OverflowError:
            if schema is not None:
                raise ValueError(f"trace schema {schema} cannot hold an integer beyond 64 bits; write schema 1") from None
    several = columns.processes > 1 if columns is not None else any(r.process for r in run.records)
    if several and schema in (1, 2):
        raise ValueError(f"trace schema {schema} holds the records of one process; this run has several (schema 3)")
    if columns is None and several:
        raise ValueError("a run of several processes is written as columns, which cannot hold an integer beyond 64 bits")
    devices = columns.has_devices if columns is not None else any(
        r.device is not None or r.peer is not None or r.kind in DEVICE_KINDS for r in run.records)
    if devices and schema in (1, 2, 3):
        raise ValueError(f"trace schema {schema} holds no devices, device-to-device copies, memsets or collectives; "
                         "this run has some (schema 4)")
    if columns is None and devices:
        raise ValueError("a run with devices is written as columns, which cannot hold an integer beyond 64 bits")
    chosen = schema or (1 if columns is None else 4 if devices else 3 if several else 2)
    meta = asdict_meta(run.meta)
    if columns is not None and chosen != 1:
        return {
            "format": FORMAT,
            "schema": chosen,
            "meta": meta,
            "sites": [[s.file, s.line, s.function, s.text, s.column] for s in columns.sites],
            "count": len(columns),
            "columns": columns.encode(with_process=chosen >= 3, with_devices=chosen >= 4),
        }
    index: dict[Site, int] = {}
    rows = []
    for r in run.records:
        site = r.site
        si = None
        if site is not None:
            si = index.get(site)
            if si is None:
                si = index[site] = len(index)
        rows.append([r.kind, r.start_ns, r.duration_ns, r.nbytes, r.pinned, r.kernel, r.launch, r.param,
                     r.array, si, r.region, r.mode, r.fingerprint])
    return {
        "format": FORMAT,
        "schema": 1,
        "meta": meta,
        "sites": [[s.file, s.line, s.function, s.text, s.column] for s in index],
        "columns": list(SINGLE_PROCESS_FIELDS),
        "records": rows,
    }


def both_paths(output: Path) -> tuple[Path, Path]:
    """The two traces of one `--mode both` recording: `run.json` -> (`run.naive.json`, `run.batched.json`).

    A `.json.gz` name keeps its `.json.gz`; a name without `.json` gets one.
    """
    stem, ext = _stem(output)
    return output.with_name(f"{stem}.naive{ext}"), output.with_name(f"{stem}.batched{ext}")


def rank_path(output: Path, rank: int) -> Path:
    """The trace of one rank of a job recorded to `output`: `job.json` -> `job.rank3.json` (as `both_paths` names)."""
    stem, ext = _stem(output)
    return output.with_name(f"{stem}.rank{rank}{ext}")


def recovered_path(output: Path) -> Path:
    """Where `offload-prof recover` writes the trace of a killed run that was writing `output`: `t.json` ->
    `t.recovered.json`, beside it, so that a trace written since (by the next run) is not replaced."""
    stem, ext = _stem(output)
    return output.with_name(f"{stem}.recovered{ext}")


def _stem(output: Path) -> tuple[str, str]:
    name = output.name
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)], suffix
    return name, ".json"


def asdict_meta(meta: Meta) -> dict[str, Any]:
    """`meta` as the JSON object a trace stores (lists for its argument tuples)."""
    out = dataclasses.asdict(meta)
    out["command"] = list(meta.command)
    out["argv"] = list(meta.argv)
    if meta.wall_samples_ns:
        out["wall_samples_ns"] = list(meta.wall_samples_ns)
    else:  # a run recorded once: its files stay as they were
        del out["wall_samples_ns"]
    out["processes"] = [_process_dict(p) for p in meta.processes]
    out["estimated"] = list(meta.estimated)
    if not meta.dropped:  # a run that kept all it recorded: its files stay as they were
        del out["dropped"]
    if any(meta.exits_ns):
        out["exits_ns"] = list(meta.exits_ns)
    else:  # likewise, a run whose tracer timed no wait's exit (offload_core's recorder, older traces)
        del out["exits_ns"]
    if out.get("link") is not None and out["link"].get("digest_small_gbps") is None:  # likewise, uncalibrated
        del out["link"]["digest_small_gbps"]
    return out


def _process_dict(p: Process) -> dict[str, Any]:
    """A process as the trace stores it; `rank` only for a process of a distributed job, `complete` only when false
    (older files stay as they were)."""
    out = {**dataclasses.asdict(p), "argv": list(p.argv)}
    if p.rank is None:
        del out["rank"]
    if p.complete:
        del out["complete"]
    return out


def from_document(data: Any, source: str = "trace") -> tuple[Meta, Sequence[Record]]:
    """The meta and records of `to_document()` output; `TraceError` naming `source` on any problem."""
    return Reader(source).run(data)


def read_json_document(path: str | os.PathLike[str], what: str) -> Any:
    """The parsed JSON of a (possibly gzipped) file, or a one-line `TraceError` (`profiler.files`)."""
    return decode_json(read_input(path, what), str(path), what)


class Reader:
    """Validating conversion from JSON data; every message starts with the source name."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, problem: str) -> TraceError:
        return TraceError(f"{self.source}: {problem}")

    def run(self, data: Any) -> tuple[Meta, Sequence[Record]]:
        if not isinstance(data, dict):
            raise self.fail(f"not an offload-prof trace (the JSON is {json_type(data)}, not an object)")
        if data.get("format") != FORMAT:
            found = data.get("format")
            hint = "an offload-prof baseline; pass it as --baseline" if found == "offload-prof-baseline" else (
                f"format {found!r}" if found is not None else "no 'format' key")
            raise self.fail(f"not an offload-prof trace ({hint})")
        schema = data.get("schema")
        if not isinstance(schema, int) or isinstance(schema, bool) or schema < 1:
            raise self.fail(f"bad schema version {schema!r}")
        if schema > SCHEMA_VERSION:
            raise self.fail(f"written with trace schema {schema}, newer than this offload-prof reads "
                            f"({SCHEMA_VERSION}); upgrade offload-guard")
        meta = self.meta(self.need(data, "meta", dict))
        sites = [self.site(n, s) for n, s in enumerate(self.need(data, "sites", list))]
        if schema >= 2:
            from .columns import Columns, RecordTable

            count = self.need(data, "count", int)
            if count < 0:
                raise self.fail(f"bad record count {count}")
            processes = max(len(meta.processes), 1) if schema >= 3 else None
            return meta, RecordTable(Columns.decode(data.get("columns"), count, sites, self.fail, processes,
                                                    devices=schema >= 4))
        columns = self.need(data, "columns", list)
        if tuple(columns) != SINGLE_PROCESS_FIELDS:
            missing = [c for c in SINGLE_PROCESS_FIELDS if c not in columns]
            raise self.fail(f"record columns {columns!r} do not match schema {schema}"
                            + (f" (missing {', '.join(missing)})" if missing else ""))
        rows = self.need(data, "records", list)
        return meta, tuple(self.record(n, row, sites) for n, row in enumerate(rows))

    def need(self, data: dict[str, Any], key: str, kind: type, where: str = "") -> Any:
        if key not in data:
            raise self.fail(f"missing key '{where}{key}'")
        value = data[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.fail(f"'{where}{key}' must be {_JSON_NAMES[kind]}, got {json_type(value)}")
        return value

    def meta(self, m: dict[str, Any]) -> Meta:
        def opt(key: str, kind: type, default: Any) -> Any:
            return self.need(m, key, kind, "meta.") if key in m else default

        def strings(key: str) -> tuple[str, ...]:
            values = opt(key, list, [])
            if not all(isinstance(v, str) for v in values):
                raise self.fail(f"'meta.{key}' must be an array of strings")
            return tuple(values)

        mode = self.need(m, "mode", str, "meta.")
        if mode not in MODES:
            raise self.fail(f"'meta.mode' is {shown(mode)}, not one of {', '.join(MODES)}")
        wall_ns = self.need(m, "wall_ns", int, "meta.")
        if not 0 <= wall_ns <= INT64_MAX:
            raise self.fail(f"'meta.wall_ns' is {wall_ns}, outside 0 to 2^63-1 nanoseconds")
        outcome = opt("outcome", str, "ok")
        if outcome not in OUTCOMES:
            raise self.fail(f"'meta.outcome' is {shown(outcome)}, not one of {', '.join(OUTCOMES)}")
        exit_code = opt("exit_code", int, 0)
        if not -INT64_MAX <= exit_code <= INT64_MAX:
            raise self.fail(f"'meta.exit_code' is {shown(exit_code)}, out of range")
        samples = opt("wall_samples_ns", list, [])
        if not all(_is_int(v) and 0 <= v <= INT64_MAX for v in samples):
            raise self.fail("'meta.wall_samples_ns' must be an array of integers from 0 to 2^63-1")
        dropped = opt("dropped", int, 0)
        if not 0 <= dropped <= INT64_MAX:
            raise self.fail(f"'meta.dropped' is {shown(dropped)}, outside 0 to 2^63-1 records")
        exits = opt("exits_ns", list, [0, 0])
        if len(exits) != 2 or not all(_is_int(v) and 0 <= v <= INT64_MAX for v in exits):
            raise self.fail("'meta.exits_ns' must be an array of two integers from 0 to 2^63-1 (ns)")
        link = m.get("link")
        return Meta(
            backend=self.need(m, "backend", str, "meta."),
            device=self.need(m, "device", str, "meta."),
            mode=mode,
            started_at=self.need(m, "started_at", str, "meta."),
            wall_ns=wall_ns,
            schema=opt("schema", int, SCHEMA_VERSION),
            tool_version=opt("tool_version", str, ""),
            command=strings("command"),
            argv=strings("argv"),
            cwd=opt("cwd", str, ""),
            python=opt("python", str, ""),
            host=opt("host", str, ""),
            fingerprints=opt("fingerprints", bool, False),
            outcome=outcome,
            exit_code=exit_code,
            link=None if link is None else self.link(link),
            wall_samples_ns=tuple(samples),
            processes=tuple(self.process(n, p) for n, p in enumerate(opt("processes", list, []))),
            estimated=strings("estimated"),
            dropped=dropped,
            exits_ns=(exits[0], exits[1]),
        )

    def process(self, n: int, p: Any) -> Process:
        where = f"meta.processes[{n}]"
        if not isinstance(p, dict):
            raise self.fail(f"'{where}' must be an object, got {json_type(p)}")
        if "pid" not in p:
            raise self.fail(f"missing key '{where}.pid'")
        pid, parent = p["pid"], p.get("parent")
        for key, value in (("pid", pid), ("parent", parent)):
            if value is not None and not (_is_int(value) and 0 <= value <= INT64_MAX):
                raise self.fail(f"'{where}.{key}' must be a process id or null, got {shown(value)}")
        start = p.get("start", "main")
        if start not in ("main", "fork", "exec"):
            raise self.fail(f"'{where}.start' must be main, fork or exec, got {start!r}")
        argv = self.text_list(p.get("argv", []), f"{where}.argv")
        recorded, complete = p.get("recorded", True), p.get("complete", True)
        note, name = p.get("note", ""), p.get("name", "")
        if not isinstance(recorded, bool) or not isinstance(note, str) or not isinstance(name, str):
            raise self.fail(f"'{where}': recorded must be true/false, note and name strings")
        if not isinstance(complete, bool):
            raise self.fail(f"'{where}.complete' must be true or false, got {json_type(complete)}")
        rank = None if p.get("rank") is None else self.rank(p["rank"], f"{where}.rank")
        return Process(pid, parent, start, tuple(argv), recorded, note, name, rank, complete)

    def rank(self, r: Any, where: str) -> Rank:
        if not isinstance(r, dict):
            raise self.fail(f"'{where}' must be an object, got {json_type(r)}")
        numbers = [r.get(k) for k in ("rank", "local_rank", "world_size")]
        if not all(_is_int(v) and 0 <= v <= INT64_MAX for v in numbers) or not numbers[0] < numbers[2]:
            raise self.fail(f"'{where}': rank, local_rank and world_size must be non-negative integers, "
                            "rank below world_size")
        device, job = r.get("device", ""), r.get("job", "")
        if not isinstance(device, str) or not isinstance(job, str):
            raise self.fail(f"'{where}': device and job must be strings")
        return Rank(numbers[0], numbers[1], numbers[2], device, job)

    def text_list(self, value: Any, where: str) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(f"'{where}' must be an array of strings")
        return value

    def link(self, data: Any) -> Link:
        if not isinstance(data, dict):
            raise self.fail(f"'meta.link' must be an object, got {json_type(data)}")
        try:
            return Link.from_dict(data)
        except (TypeError, ValueError) as exc:
            raise self.fail(f"meta.link: {exc}") from None

    def site(self, n: int, s: Any) -> Site:
        if not (isinstance(s, list) and len(s) == 5 and isinstance(s[0], str) and _is_int(s[1])
                and isinstance(s[2], str) and isinstance(s[3], str) and _is_int(s[4])):
            raise self.fail(f"site {n} must be [file, line, function, text, column]")
        return Site(s[0], s[1], s[2], s[3], s[4])

    def record(self, n: int, row: Any, sites: list[Site]) -> Record:
        if not isinstance(row, list) or len(row) != len(SINGLE_PROCESS_FIELDS):
            raise self.fail(f"record {n} must be a list of {len(SINGLE_PROCESS_FIELDS)} values")
        kind, start, duration, nbytes, pinned, kernel, launch, param, array, si, region, mode, fp = row
        if kind not in KINDS or kind in DEVICE_KINDS:  # schema 1 rows hold the first kinds only
            older = [k for k in KINDS if k not in DEVICE_KINDS]
            raise self.fail(f"record {n}: kind {kind!r} is not one of {', '.join(older)}")
        if not (_is_int(start) and _is_int(duration) and _is_int(nbytes)) or nbytes < 0 or duration < 0:
            raise self.fail(f"record {n}: start_ns, duration_ns and nbytes must be integers (non-negative duration and bytes)")
        if not isinstance(pinned, bool) or not isinstance(mode, str):
            raise self.fail(f"record {n}: pinned must be true/false and mode a string")
        for name, value in (("kernel", kernel), ("param", param), ("fingerprint", fp)):
            if value is not None and not isinstance(value, str):
                raise self.fail(f"record {n}: {name} must be a string or null")
        for name, value in (("launch", launch), ("array", array), ("region", region)):
            if value is not None and not _is_int(value):
                raise self.fail(f"record {n}: {name} must be an integer or null")
        site = None
        if si is not None:
            if not _is_int(si) or not 0 <= si < len(sites):
                raise self.fail(f"record {n}: site {si!r} is not an index into the {len(sites)} sites")
            site = sites[si]
        return Record(kind, start, duration, nbytes, pinned, kernel, launch, param, array, site, region, mode, fp)


#: how messages name the Python types JSON values load as
_JSON_NAMES: Final[dict[type, str]] = {dict: "an object", list: "an array", str: "a string", int: "an integer",
                                       bool: "true or false", float: "a number"}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


