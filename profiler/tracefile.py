"""Trace files on disk: reading the JSON document, validating it (schema 1 rows, schema 2 columns), atomic writes.

`profiler.model` holds the data model and its `save`/`load`; the parts
that only matter at the file boundary live here: turning bytes into JSON
with a one-line `TraceError` for every way a file can be broken
(truncated, not gzip, not UTF-8, not JSON, not a trace, a newer schema),
checking each field of a schema 1 row, handing schema 2 columns to
`profiler.columns`, and writing so that an interrupted save leaves the
previous file or none, never half of one.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .errors import TraceError
from .model import _COLUMNS, FORMAT, KINDS, SCHEMA_VERSION, Link, Meta, Record, Run, Site, link_from_dict


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
