"""Trace files on disk: the JSON document (schema 1 rows, schema 2 and 3 columns), its validation, atomic writes.

`profiler.trace.model.Run` is the data; this module owns how it is stored:
`save`/`load` and `to_document`/`from_document` (behind `Run.save`,
`Run.load`, `Run.to_json` and `Run.from_json`), turning bytes into JSON
with a one-line `TraceError` for every way a file can be broken
(truncated, not gzip, not UTF-8, not JSON, not a trace, a newer schema),
checking each field of a schema 1 row, handing schema 2 and 3 columns
to `profiler.trace.columns` (schema 3 adds the `process` column of runs
that span several processes), and writing so that an interrupted save leaves
the previous file or none, never half of one. It reads a run through the
`Stored` protocol and gives back its parts, so that it needs no import of
the model above it.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, Sequence

from ..errors import TraceError
from .records import KINDS, SCHEMA_VERSION, SINGLE_PROCESS_FIELDS, Link, Meta, Process, Record, Site

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
    payload = json.dumps(to_document(run), separators=(",", ":"), allow_nan=False).encode()
    if target.suffix == ".gz":
        payload = gzip.compress(payload, compresslevel=6)
    write_atomically(target, payload)
    return target


def load(path: str | os.PathLike[str]) -> tuple[Meta, Sequence[Record]]:
    """The meta and records of a trace written by `save`; `TraceError` with one line naming the file otherwise."""
    return from_document(read_json_document(path, "trace"), str(path))


def to_document(run: Stored, schema: int | None = None) -> dict[str, Any]:
    """A JSON-ready dict: meta, a site table, and the records as columns (schema 2 and 3) or rows (schema 1).

    Without `schema`, the oldest schema that holds the run: 3 when its
    records come from several processes (only schema 3 has the `process`
    column), else 2, so that a run of one process stays readable by
    versions that read schema 2. A run of one process holding an integer
    the columns cannot (beyond 64 bits) falls back to rows, so that
    nothing recorded is ever lost; several processes need columns.
    """
    if schema not in (None, 1, 2, 3):
        raise ValueError(f"cannot write trace schema {schema}; this version writes 1, 2 and 3")
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
    chosen = schema or (1 if columns is None else 3 if several else 2)
    meta = asdict_meta(run.meta)
    if columns is not None and chosen != 1:
        return {
            "format": FORMAT,
            "schema": chosen,
            "meta": meta,
            "sites": [[s.file, s.line, s.function, s.text, s.column] for s in columns.sites],
            "count": len(columns),
            "columns": columns.encode(with_process=chosen >= 3),
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
    name = output.name
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            stem, ext = name[: -len(suffix)], suffix
            break
    else:
        stem, ext = name, ".json"
    return output.with_name(f"{stem}.naive{ext}"), output.with_name(f"{stem}.batched{ext}")


def asdict_meta(meta: Meta) -> dict[str, Any]:
    """`meta` as the JSON object a trace stores (lists for its argument tuples)."""
    out = dataclasses.asdict(meta)
    out["command"] = list(meta.command)
    out["argv"] = list(meta.argv)
    out["processes"] = [{**dataclasses.asdict(p), "argv": list(p.argv)} for p in meta.processes]
    out["estimated"] = list(meta.estimated)
    return out


def from_document(data: Any, source: str = "trace") -> tuple[Meta, Sequence[Record]]:
    """The meta and records of `to_document()` output; `TraceError` naming `source` on any problem."""
    return Reader(source).run(data)


def read_json_document(path: str | os.PathLike[str], what: str) -> Any:
    """The parsed JSON of a (possibly gzipped) file, or a one-line `TraceError`."""
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except IsADirectoryError:
        raise TraceError(f"{name}: is a directory, not a {what} file") from None
    except OSError as exc:
        raise TraceError(f"{name}: cannot read {what} file ({exc.strerror or exc})") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (EOFError, OSError) as exc:
            raise TraceError(f"{name}: truncated or corrupt gzip data ({exc})") from None
    if not raw.strip():
        raise TraceError(f"{name}: empty file, not a {what}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceError(f"{name}: not a {what} (not UTF-8 text: byte {exc.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        # An unterminated string runs to the end of the input; any other error
        # at the very end means the document stopped before it was complete.
        if exc.msg.startswith("Unterminated string") or exc.pos >= len(text.rstrip()):
            raise TraceError(f"{name}: truncated: the JSON document ends before it is complete "
                             f"({len(raw)} bytes read)") from None
        raise TraceError(f"{name}: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None


class Reader:
    """Validating conversion from JSON data; every message starts with the source name."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, problem: str) -> TraceError:
        return TraceError(f"{self.source}: {problem}")

    def run(self, data: Any) -> tuple[Meta, Sequence[Record]]:
        if not isinstance(data, dict):
            raise self.fail(f"not an offload-prof trace (a JSON {type(data).__name__}, expected an object)")
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
            return meta, RecordTable(Columns.decode(data.get("columns"), count, sites, self.fail, processes))
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
            raise self.fail(f"'{where}{key}' must be {kind.__name__}, got {type(value).__name__}")
        return value

    def meta(self, m: dict[str, Any]) -> Meta:
        def opt(key: str, kind: type, default: Any) -> Any:
            return self.need(m, key, kind, "meta.") if key in m else default

        link = m.get("link")
        return Meta(
            backend=self.need(m, "backend", str, "meta."),
            device=self.need(m, "device", str, "meta."),
            mode=self.need(m, "mode", str, "meta."),
            started_at=self.need(m, "started_at", str, "meta."),
            wall_ns=self.need(m, "wall_ns", int, "meta."),
            schema=opt("schema", int, SCHEMA_VERSION),
            tool_version=opt("tool_version", str, ""),
            command=tuple(str(a) for a in opt("command", list, [])),
            argv=tuple(str(a) for a in opt("argv", list, [])),
            cwd=opt("cwd", str, ""),
            python=opt("python", str, ""),
            host=opt("host", str, ""),
            fingerprints=opt("fingerprints", bool, False),
            outcome=opt("outcome", str, "ok"),
            exit_code=opt("exit_code", int, 0),
            link=None if link is None else self.link(link),
            processes=tuple(self.process(n, p) for n, p in enumerate(opt("processes", list, []))),
            estimated=tuple(self.text_list(opt("estimated", list, []), "meta.estimated")),
        )

    def process(self, n: int, p: Any) -> Process:
        where = f"meta.processes[{n}]"
        if not isinstance(p, dict):
            raise self.fail(f"'{where}' must be an object")
        if "pid" not in p:
            raise self.fail(f"missing key '{where}.pid'")
        pid, parent = p["pid"], p.get("parent")
        for key, value in (("pid", pid), ("parent", parent)):
            if value is not None and not _is_int(value):
                raise self.fail(f"'{where}.{key}' must be int or null, got {type(value).__name__}")
        start = p.get("start", "main")
        if start not in ("main", "fork", "exec"):
            raise self.fail(f"'{where}.start' must be main, fork or exec, got {start!r}")
        argv = self.text_list(p.get("argv", []), f"{where}.argv")
        recorded = p.get("recorded", True)
        note, name = p.get("note", ""), p.get("name", "")
        if not isinstance(recorded, bool) or not isinstance(note, str) or not isinstance(name, str):
            raise self.fail(f"'{where}': recorded must be true/false, note and name strings")
        return Process(pid, parent, start, tuple(argv), recorded, note, name)

    def text_list(self, value: Any, where: str) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(f"'{where}' must be a list of strings")
        return value

    def link(self, data: Any) -> Link:
        if not isinstance(data, dict):
            raise self.fail("'meta.link' must be an object")
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
        if kind not in KINDS:
            raise self.fail(f"record {n}: kind {kind!r} is not one of {', '.join(KINDS)}")
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


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def write_atomically(target: Path, payload: bytes) -> None:
    """Write `payload` to `target` through a temporary file in the same folder and a rename."""
    # A trace is written after the program under test has run: an interrupted
    # write must leave the previous file (or none), never a truncated one.
    directory = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
