"""The trace model: one recorded run, as plain frozen records with their own persistence.

Everything downstream (summaries, detectors, reports, the Chrome export,
the gate, the TUI) reads a `Run` and nothing else, so the model is the
contract between the recorder and its consumers, and it imports nothing
from offload_core: a trace recorded on a GPU machine loads anywhere.

A `Run` is `meta` (what ran, where, on which backend and link, how it
ended) plus `records`, one `Record` per event in issue order. Call sites
are interned: records that share a source line share one `Site`.

Files (schema 2) store each site once and the records as columns
(`profiler.columns`: one base64 array per field), so a trace of 10^6
events loads without parsing 10^6 JSON rows; a loaded run's `records` is
a `RecordTable` that builds `Record`s only when they are asked for, and
`run.columns` gives summaries the arrays directly. Schema 1 files (one
JSON row per record) still load, and `to_json(schema=1)` still writes
them.

The file format carries a format tag and a schema version. `load` refuses,
with a one-line `TraceError` naming the file, anything truncated, malformed
or written by a newer schema; it never lets a traceback through for a bad
file. Record times are nanoseconds relative to the start of the run.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import tempfile
from dataclasses import asdict, dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from .errors import TraceError

if TYPE_CHECKING:
    from .columns import Columns

FORMAT = "offload-prof-trace"
#: the schema this version writes; it reads every schema from 1 up to this one
SCHEMA_VERSION = 2
KINDS = ("h2d", "d2h", "alloc", "free", "launch", "sync", "region_enter", "region_exit")
COPY_KINDS = ("h2d", "d2h")
DIRECTION_NAMES = {"h2d": "H2D", "d2h": "D2H"}


@dataclass(frozen=True, slots=True)
class Site:
    """A line of user code that issued operations.

    `text` is the stripped source line ("" when the source is not
    available), `column` the 1-based column where the statement starts.
    The gate matches sites by file, function and text, so that code moving
    up or down a file keeps its baseline.
    """

    file: str
    line: int
    function: str
    text: str = ""
    column: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line} in {self.function}"


@dataclass(frozen=True, slots=True)
class Record:
    """One event of the run, as offload_core (or a later event source) reported it.

    `kind` is one of `KINDS`. `launch` is the index of the `offload()` call
    the event belongs to (None for a region's own copies, which carry
    `region`). `array` identifies the host buffer (its address), so the
    same number in two records means the same memory. `fingerprint` is a
    digest of the copied host bytes, present only when the run was
    recorded with fingerprints.
    """

    kind: str
    start_ns: int
    duration_ns: int
    nbytes: int = 0
    pinned: bool = False
    kernel: str | None = None
    launch: int | None = None
    param: str | None = None
    array: int | None = None
    site: Site | None = None
    region: int | None = None
    mode: str = "batched"
    fingerprint: str | None = None

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.duration_ns

    @property
    def is_copy(self) -> bool:
        return self.kind == "h2d" or self.kind == "d2h"


@dataclass(frozen=True)
class Link:
    """Figures of a host<->device link, measured (`calibrate`) or shipped, for modelled costs.

    Bandwidths are in GB/s (10^9 bytes per second); a pinned figure is
    None where the backend could not pin (the NumPy backend). `latency_us`
    is the fixed cost of one small copy; `launch_us` and `sync_us` are the
    per-launch and per-sync overheads where known.
    """

    name: str
    h2d_pageable_gbps: float
    d2h_pageable_gbps: float
    h2d_pinned_gbps: float | None = None
    d2h_pinned_gbps: float | None = None
    latency_us: float = 0.0
    launch_us: float | None = None
    sync_us: float | None = None
    source: str = ""

    def bandwidth_gbps(self, kind: str, pinned: bool) -> float:
        """The bandwidth a copy would see; pageable where no pinned figure is known."""
        if kind == "h2d":
            return (self.h2d_pinned_gbps if pinned and self.h2d_pinned_gbps else None) or self.h2d_pageable_gbps
        return (self.d2h_pinned_gbps if pinned and self.d2h_pinned_gbps else None) or self.d2h_pageable_gbps

    def copy_ns(self, kind: str, nbytes: int, pinned: bool) -> int:
        """Modelled duration of one copy: the fixed latency plus bytes over bandwidth."""
        return int(self.latency_us * 1e3 + nbytes / self.bandwidth_gbps(kind, pinned))


@dataclass(frozen=True)
class Meta:
    """What ran, where, and how it ended.

    `command` is the profiler's own command line, `argv` the target's.
    `mode` is the offload_core mode the run started in (records carry the
    mode of each event, since a program may switch). `outcome` is `ok`,
    `exit` (SystemExit), `exception` or `interrupted`; `exit_code` is what
    the run passed on. `link` holds the figures the run was recorded with
    (a calibration of this machine), if any. `fingerprints` says whether
    copy records carry content digests.
    """

    backend: str
    device: str
    mode: str
    started_at: str
    wall_ns: int
    schema: int = SCHEMA_VERSION
    tool_version: str = ""
    command: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()
    cwd: str = ""
    python: str = ""
    host: str = ""
    fingerprints: bool = False
    outcome: str = "ok"
    exit_code: int = 0
    link: Link | None = None


_COLUMNS = tuple(f.name for f in fields(Record))
_OPTIONAL_INT = ("launch", "array", "region")
_OPTIONAL_STR = ("kernel", "param", "fingerprint")


@dataclass(frozen=True)
class Run:
    """A recorded run: `meta` and its `records` in issue order.

    `records` is a tuple when the run was recorded or built by hand, and a
    `profiler.columns.RecordTable` (a sequence of the same records, built
    on demand) when it was loaded from a file.
    """

    meta: Meta
    records: Sequence[Record] = field(default=())

    # ------------------------------------------------------------- queries
    def of_kind(self, *kinds: str) -> Iterator[Record]:
        """The records of the given kinds, in order."""
        return (r for r in self.records if r.kind in kinds)

    def copies(self) -> Iterator[Record]:
        """H2D and D2H records, in order."""
        return (r for r in self.records if r.kind == "h2d" or r.kind == "d2h")

    @property
    def sites(self) -> tuple[Site, ...]:
        """Distinct call sites, in the order they first appear."""
        if _is_table(self.records):
            import numpy as np

            c = self.columns
            codes, first = np.unique(c.site, return_index=True)
            return tuple(c.sites[int(code)] for _, code in sorted(zip(first.tolist(), codes.tolist())) if code >= 0)
        seen: dict[Site, None] = {}
        for r in self.records:
            if r.site is not None and r.site not in seen:
                seen[r.site] = None
        return tuple(seen)

    @property
    def label(self) -> str:
        """A short name for headings: the target command, or the mode."""
        return " ".join(self.meta.argv) or self.meta.mode

    @cached_property
    def columns(self) -> Columns:
        """The records as NumPy columns (`profiler.columns.Columns`), built once per run."""
        if _is_table(self.records):
            return self.records.columns  # type: ignore[attr-defined, no-any-return]
        from .columns import Columns

        return Columns.from_records(self.records)

    # --------------------------------------------------------- persistence
    def to_json(self, schema: int = SCHEMA_VERSION) -> dict[str, Any]:
        """A JSON-ready dict: meta, a site table, and the records as columns (schema 2) or rows (schema 1).

        Falls back to rows when a record holds an integer the columns cannot
        (beyond 64 bits), so that nothing recorded is ever lost.
        """
        if schema not in (1, 2):
            raise ValueError(f"cannot write trace schema {schema}; this version writes 1 and 2")
        meta = asdict(self.meta)
        meta["command"] = list(self.meta.command)
        meta["argv"] = list(self.meta.argv)
        if schema == 2:
            try:
                columns = self.columns
            except OverflowError:
                pass
            else:
                return {
                    "format": FORMAT,
                    "schema": 2,
                    "meta": meta,
                    "sites": [[s.file, s.line, s.function, s.text, s.column] for s in columns.sites],
                    "count": len(columns),
                    "columns": columns.encode(),
                }
        index: dict[Site, int] = {}
        rows = []
        for r in self.records:
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
            "columns": list(_COLUMNS),
            "records": rows,
        }

    @classmethod
    def from_json(cls, data: Any, source: str = "trace") -> Run:
        """Rebuild a run from `to_json()` output; `TraceError` naming `source` on any problem."""
        return _Reader(source).run(data)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the trace (gzip-compressed when the name ends in .gz), atomically."""
        target = Path(path)
        payload = json.dumps(self.to_json(), separators=(",", ":"), allow_nan=False).encode()
        if target.suffix == ".gz":
            payload = gzip.compress(payload, compresslevel=6)
        write_atomically(target, payload)
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Run:
        """Read a trace written by `save`; `TraceError` with one line naming the file otherwise."""
        return cls.from_json(read_json_document(path, "trace"), str(path))


def _is_table(records: Sequence[Record]) -> bool:
    # Only a loaded trace holds a RecordTable, and loading imports the module:
    # when it is not imported, nothing can be one (and NumPy stays unloaded).
    module = sys.modules.get(f"{__package__}.columns")
    return module is not None and isinstance(records, module.RecordTable)


# ----------------------------------------------------------------- reading
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


class _Reader:
    """Validating conversion from JSON data; every message starts with the source name."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, problem: str) -> TraceError:
        return TraceError(f"{self.source}: {problem}")

    def run(self, data: Any) -> Run:
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
            return Run(meta, RecordTable(Columns.decode(data.get("columns"), count, sites, self.fail)))
        columns = self.need(data, "columns", list)
        if tuple(columns) != _COLUMNS:
            missing = [c for c in _COLUMNS if c not in columns]
            raise self.fail(f"record columns {columns!r} do not match schema {schema}"
                            + (f" (missing {', '.join(missing)})" if missing else ""))
        rows = self.need(data, "records", list)
        return Run(meta, tuple(self.record(n, row, sites) for n, row in enumerate(rows)))

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
        )

    def link(self, data: Any) -> Link:
        if not isinstance(data, dict):
            raise self.fail("'meta.link' must be an object")
        try:
            return link_from_dict(data)
        except (TypeError, ValueError) as exc:
            raise self.fail(f"meta.link: {exc}") from None

    def site(self, n: int, s: Any) -> Site:
        if not (isinstance(s, list) and len(s) == 5 and isinstance(s[0], str) and _is_int(s[1])
                and isinstance(s[2], str) and isinstance(s[3], str) and _is_int(s[4])):
            raise self.fail(f"site {n} must be [file, line, function, text, column]")
        return Site(s[0], s[1], s[2], s[3], s[4])

    def record(self, n: int, row: Any, sites: list[Site]) -> Record:
        if not isinstance(row, list) or len(row) != len(_COLUMNS):
            raise self.fail(f"record {n} must be a list of {len(_COLUMNS)} values")
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


def link_from_dict(data: dict[str, Any]) -> Link:
    """A `Link` from its dict form; `ValueError`/`TypeError` with the problem otherwise."""
    known = {f.name for f in fields(Link)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(unknown)}")
    for key in ("name", "h2d_pageable_gbps", "d2h_pageable_gbps"):
        if key not in data:
            raise ValueError(f"missing key '{key}'")
    if not isinstance(data["name"], str):
        raise TypeError("'name' must be a string")
    for key in known - {"name", "source"}:
        value = data.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"'{key}' must be a non-negative number, got {value!r}")
    for key in ("h2d_pageable_gbps", "d2h_pageable_gbps", "h2d_pinned_gbps", "d2h_pinned_gbps"):
        if data.get(key) is not None and data[key] == 0:
            raise ValueError(f"'{key}' must be positive")
    values = {k: (float(v) if isinstance(v, (int, float)) and k not in ("name", "source") else v) for k, v in data.items()}
    return Link(**values)


def write_atomically(target: Path, payload: bytes) -> None:
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


def relative_file(file: str, cwd: str) -> str:
    """`file` relative to `cwd` with `/` separators when it lies inside it, else unchanged.

    Reports print sites this way, and the gate keys them this way, so that
    a baseline recorded in one checkout matches a run in another.
    """
    if not cwd or not os.path.isabs(file):
        return file.replace(os.sep, "/")
    try:
        rel = os.path.relpath(file, cwd)
    except ValueError:  # another drive on Windows
        return file
    if rel.startswith(".."):
        return file.replace(os.sep, "/")
    return rel.replace(os.sep, "/")
