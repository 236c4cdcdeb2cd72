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
file (the checks live in `profiler.tracefile`). Record times are
nanoseconds relative to the start of the run.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
from dataclasses import asdict, dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

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
        from .tracefile import Reader

        return Reader(source).run(data)

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


# ----------------------------------------------------------------- files
def read_json_document(path: str | os.PathLike[str], what: str) -> Any:
    """The parsed JSON of a (possibly gzipped) file, or a one-line `TraceError` (see `profiler.tracefile`)."""
    from .tracefile import read_json_document as read

    return read(path, what)


def write_atomically(target: Path, payload: bytes) -> None:
    """Write `payload` to `target` through a temporary file and a rename (see `profiler.tracefile`)."""
    from .tracefile import write_atomically as write

    write(target, payload)


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
