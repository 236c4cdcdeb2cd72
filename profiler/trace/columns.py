"""A run's records as columns: parallel NumPy arrays, the layout large traces are stored and summarised in.

A trace of 10^6 events as 10^6 `Record` objects costs seconds to build
and hundreds of megabytes to hold, and every summary is then a Python
loop over them. As columns (one array per `Record` field; strings as codes
into a table of distinct values, `None` as a sentinel), the same trace
loads in a fraction of a second, summaries are NumPy reductions, and
`Record`s are built only when someone asks for them (`RecordTable`).

The schema 2 file layout (`encode`/`decode`) stores each column as
little-endian bytes in base64 inside the JSON document, in the narrowest
integer type that holds its values, so the file stays one JSON object
(gzip-able, inspectable with any JSON tool) and loading is a base64
decode plus `numpy.frombuffer` per column, with no per-record parsing.
Every column is validated with vectorised checks, and a problem is a
one-line `TraceError` naming the column and the first bad record.

NumPy is imported by this module only; `profiler.trace.model` imports it lazily,
so code that never touches a trace's columns (the pytest plugin) does not
load NumPy.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence, overload

import numpy as np

from ..errors import TraceError
from ..units import shown
from .records import DEVICE_KINDS, KINDS, Kind, Record, Site

#: the stand-in for None in the integer columns that may be null
NULL = np.iinfo(np.int64).min
_INT_FIELDS = ("start_ns", "duration_ns", "nbytes")
_NULLABLE_FIELDS = ("launch", "array", "region")
#: the nullable columns schema 4 added; absent from older files, where every value is null
_DEVICE_FIELDS = ("device", "peer")
_CODED_FIELDS = ("kernel", "param", "mode", "fingerprint")
_KIND_CODES = {k: i for i, k in enumerate(KINDS)}
#: `Record`'s fields, in its order (`ColumnsBuilder.add`, `Columns.from_fields`)
_FIELDS = ("kind", "start_ns", "duration_ns", "nbytes", "pinned", "kernel", "launch", "param", "array", "site",
           "region", "mode", "fingerprint", "process", "device", "peer")
#: each field's slot setter (`Columns.records`), and the allocation that skips `Record.__init__`
_SETTERS = tuple(getattr(Record, name).__set__ for name in _FIELDS)
_new = object.__new__


@dataclass(frozen=True, eq=False)
class Columns:
    """The records of a run, one array per field.

    `kind` holds codes into `records.KINDS`; `site` codes into `sites`;
    `kernel`, `param`, `mode` and `fingerprint` codes into their own
    tables of distinct values; -1 is None for codes, `NULL` for `launch`,
    `array` and `region`. Tables hold each distinct value once, so equal
    codes mean equal values. `process` indexes the run's `Meta.processes`
    (all 0 in a run of one process).
    """

    kind: np.ndarray
    start_ns: np.ndarray
    duration_ns: np.ndarray
    nbytes: np.ndarray
    pinned: np.ndarray
    kernel: np.ndarray
    launch: np.ndarray
    param: np.ndarray
    array: np.ndarray
    site: np.ndarray
    region: np.ndarray
    mode: np.ndarray
    fingerprint: np.ndarray
    process: np.ndarray
    device: np.ndarray
    peer: np.ndarray
    kernels: tuple[str, ...]
    params: tuple[str, ...]
    modes: tuple[str, ...]
    fingerprints: tuple[str, ...]
    sites: tuple[Site, ...]

    def __len__(self) -> int:
        return int(self.kind.shape[0])

    def kind_mask(self, *kinds: Kind) -> np.ndarray:
        """Boolean mask of the records of the given kinds."""
        codes = [_KIND_CODES[k] for k in kinds]
        return np.isin(self.kind, codes) if len(codes) > 1 else self.kind == codes[0]

    def table(self, name: str) -> tuple[Any, ...]:
        """The value table behind a coded column (`kernel`, `param`, `mode`, `fingerprint`, `site`)."""
        return {"kernel": self.kernels, "param": self.params, "mode": self.modes,
                "fingerprint": self.fingerprints, "site": self.sites}[name]

    # ------------------------------------------------------------ records
    def record(self, i: int) -> Record:
        """Record `i`, built from the columns."""
        def coded(col: np.ndarray, values: Sequence[Any]) -> Any:
            c = int(col[i])
            return None if c < 0 else values[c]

        def nullable(col: np.ndarray) -> int | None:
            v = int(col[i])
            return None if v == NULL else v

        return Record(KINDS[int(self.kind[i])], int(self.start_ns[i]), int(self.duration_ns[i]), int(self.nbytes[i]),
                      bool(self.pinned[i]), coded(self.kernel, self.kernels), nullable(self.launch),
                      coded(self.param, self.params), nullable(self.array), coded(self.site, self.sites),
                      nullable(self.region), self.modes[int(self.mode[i])], coded(self.fingerprint, self.fingerprints),
                      int(self.process[i]), nullable(self.device), nullable(self.peer))

    def records(self) -> tuple[Record, ...]:
        """Every record, built in one pass (lists first: NumPy scalars are slow to convert one by one)."""
        def coded(col: np.ndarray, values: Sequence[Any]) -> list[Any]:
            table = [*values, None]  # code -1 indexes the trailing None
            return [table[c] for c in col.tolist()]

        def nullable(col: np.ndarray) -> list[int | None]:
            return [None if v == NULL else v for v in col.tolist()]

        kinds = [KINDS[c] for c in self.kind.tolist()]
        values = (kinds, self.start_ns.tolist(), self.duration_ns.tolist(), self.nbytes.tolist(), self.pinned.tolist(),
                  coded(self.kernel, self.kernels), nullable(self.launch), coded(self.param, self.params),
                  nullable(self.array), coded(self.site, self.sites), nullable(self.region),
                  coded(self.mode, self.modes), coded(self.fingerprint, self.fingerprints), self.process.tolist(),
                  nullable(self.device), nullable(self.peer))
        # Field by field over all records rather than `Record(...)` per record: the generated `__init__` of a
        # frozen dataclass sets its 16 fields through `object.__setattr__`, 5-6 µs per record; the slots' own
        # setters, mapped over a whole column, take half that (a 363,000-record trace loads ~1 s sooner).
        # Nothing is skipped: `Record` has no `__post_init__`, and the columns were validated when decoded.
        out = [_new(Record) for _ in range(len(kinds))]
        for setter, column in zip(_SETTERS, values):
            deque(map(setter, out, column), maxlen=0)
        return tuple(out)

    @classmethod
    def from_records(cls, records: Sequence[Record]) -> Columns:
        """Columns of records built in Python (by the recorder, or by hand).

        Raises `OverflowError` when an integer does not fit the columns (beyond
        64 bits, or equal to `NULL`); `tracefile.to_document` then writes rows instead.
        """
        return cls.from_fields({name: [getattr(r, name) for r in records] for name in _FIELDS})

    @classmethod
    def from_fields(cls, fields: dict[str, list[Any]]) -> Columns:
        """Columns of equally long lists of `Record` field values, one list per field (`ColumnsBuilder`).

        Raises `OverflowError` as `from_records` does.
        """
        tables: dict[str, dict[Any, int]] = {name: {} for name in (*_CODED_FIELDS, "site")}

        def code(name: str) -> np.ndarray:
            table = tables[name]
            out = [-1 if v is None else table.setdefault(v, len(table)) for v in fields[name]]
            return np.array(out, dtype=np.int32)

        def nullable(name: str) -> np.ndarray:
            values = fields[name]
            out = np.array([NULL if v is None else v for v in values], dtype=np.int64)
            # a value equal to the sentinel would read back as None
            if int((out == NULL).sum()) != values.count(None):
                raise OverflowError(f"a '{name}' value equals the null sentinel")
            return out

        columns = cls(
            kind=np.array([_KIND_CODES[k] for k in fields["kind"]], dtype=np.uint8),
            start_ns=np.array(fields["start_ns"], dtype=np.int64),
            duration_ns=np.array(fields["duration_ns"], dtype=np.int64),
            nbytes=np.array(fields["nbytes"], dtype=np.int64),
            pinned=np.array(fields["pinned"], dtype=bool),
            kernel=code("kernel"),
            launch=nullable("launch"),
            param=code("param"),
            array=nullable("array"),
            site=code("site"),
            region=nullable("region"),
            mode=code("mode"),
            fingerprint=code("fingerprint"),
            process=np.array(fields["process"], dtype=np.int32),
            device=nullable("device"), peer=nullable("peer"),
            kernels=tuple(tables["kernel"]), params=tuple(tables["param"]), modes=tuple(tables["mode"]),
            fingerprints=tuple(tables["fingerprint"]), sites=tuple(tables["site"]),
        )
        return columns

    @property
    def processes(self) -> int:
        """How many processes the records name (1 + the highest index; 1 for an empty run)."""
        return int(self.process.max()) + 1 if len(self) else 1

    # ------------------------------------------------------------ files
    @property
    def has_devices(self) -> bool:
        """Whether a record names a device or uses a kind of schema 4 (so only schema 4 holds the run)."""
        newer = [_KIND_CODES[k] for k in DEVICE_KINDS]
        return bool((self.device != NULL).any() or (self.peer != NULL).any() or np.isin(self.kind, newer).any())

    def encode(self, with_process: bool = False, with_devices: bool = False) -> dict[str, Any]:
        """The `columns` object: each field as base64 bytes, coded fields with their values.

        Schema 2 has no `process` column; `with_process` (schema 3) adds it.
        """
        out: dict[str, Any] = {"kind": _pack(self.kind), "pinned": _pack(self.pinned.astype(np.uint8))}
        for name in _INT_FIELDS + _NULLABLE_FIELDS:
            out[name] = _pack(getattr(self, name))
        for name in _CODED_FIELDS:
            out[name] = {**_pack(getattr(self, name)), "values": list(self.table(name))}
        out["site"] = _pack(self.site)
        if with_process:
            out["process"] = _pack(self.process)
        if with_devices:
            for name in _DEVICE_FIELDS:
                out[name] = _pack(getattr(self, name))
        return out

    @classmethod
    def decode(cls, data: Any, count: int, sites: Sequence[Site], fail: Callable[[str], TraceError],
               processes: int | None = None, devices: bool = False) -> Columns:
        """Columns from a schema 2 or 3 `columns` object; `fail(problem)` makes the error to raise.

        `processes` (schema 3) is how many processes the run's meta lists:
        the `process` column must be there and index them. Schema 2 has no
        such column; every record is then process 0.
        """
        if not isinstance(data, dict):
            raise fail("'columns' must be an object of encoded columns")
        missing = [n for n in ("kind", "pinned", *_INT_FIELDS, *_NULLABLE_FIELDS, *_CODED_FIELDS, "site") if n not in data]
        if missing:
            raise fail(f"missing record column(s) {', '.join(missing)}")

        def column(name: str) -> np.ndarray:
            return _unpack(data[name], name, count, fail)

        kind = column("kind")
        # the kinds schema 4 added are not codes of an older file
        _check_codes(kind, len(KINDS) if devices else len(KINDS) - len(DEVICE_KINDS), name="kind", nullable=False,
                     fail=fail)
        pinned = column("pinned")
        bad = np.flatnonzero((pinned != 0) & (pinned != 1))
        if bad.size:
            raise fail(f"record {bad[0]}: pinned must be true/false")
        ints = {name: column(name).astype(np.int64, copy=False) for name in _INT_FIELDS + _NULLABLE_FIELDS}
        for name in ("duration_ns", "nbytes"):
            bad = np.flatnonzero(ints[name] < 0)
            if bad.size:
                raise fail(f"record {bad[0]}: {name} must be a non-negative integer")
        coded: dict[str, tuple[np.ndarray, tuple[str, ...]]] = {}
        for name in _CODED_FIELDS:
            entry = data[name]
            values = entry.get("values") if isinstance(entry, dict) else None
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise fail(f"column '{name}' must list its values as strings")
            codes = column(name).astype(np.int32, copy=False)
            _check_codes(codes, len(values), name=name, nullable=name != "mode", fail=fail)
            coded[name] = _canonical(codes, values)
        site_codes = column("site").astype(np.int32, copy=False)
        _check_codes(site_codes, len(sites), name="site", nullable=True, fail=fail, what="sites")
        site_codes, site_table = _canonical(site_codes, sites)
        if processes is None:
            process = np.zeros(count, dtype=np.int32)
        else:
            if "process" not in data:
                raise fail("missing record column(s) process")
            process = column("process").astype(np.int32, copy=False)
            _check_codes(process, max(processes, 1), name="process", nullable=False, fail=fail, what="processes")
        if devices:
            absent = [n for n in _DEVICE_FIELDS if n not in data]
            if absent:
                raise fail(f"missing record column(s) {', '.join(absent)}")
            device, peer = (column(n).astype(np.int64, copy=False) for n in _DEVICE_FIELDS)
        else:
            device = peer = np.full(count, NULL, dtype=np.int64)
        return cls(
            kind=kind.astype(np.uint8, copy=False), pinned=pinned.astype(bool), **ints,
            kernel=coded["kernel"][0], param=coded["param"][0], mode=coded["mode"][0],
            fingerprint=coded["fingerprint"][0], site=site_codes, process=process, device=device, peer=peer,
            kernels=coded["kernel"][1], params=coded["param"][1], modes=coded["mode"][1],
            fingerprints=coded["fingerprint"][1], sites=site_table,
        )


def exact_sum(values: np.ndarray) -> int:
    """The sum of an integer column as a Python int, exact however large its values are.

    NumPy sums int64 in int64 and wraps silently: two records of 2^62
    bytes would total a negative number. Where the column's largest
    magnitude times its length fits in int64 the sum is NumPy's (the
    usual case, and fast); otherwise it is taken in Python integers.
    """
    if values.size == 0:
        return 0
    if _fits(values, values.size):
        return int(values.sum())
    return sum(values.tolist())


def exact_group_sums(values: np.ndarray, groups: np.ndarray, n: int) -> list[int]:
    """`values` summed per group (`groups[i]` in 0..n-1), as Python ints, exact as `exact_sum` is."""
    if values.size == 0 or _fits(values, values.size):
        out = np.zeros(n, dtype=np.int64)
        np.add.at(out, groups, values)
        return out.tolist()  # type: ignore[no-any-return]
    totals = [0] * n
    for g, v in zip(groups.tolist(), values.tolist()):
        totals[g] += v
    return totals


def saturating_add(a: np.ndarray | int, b: np.ndarray) -> np.ndarray:
    """`a + b` element by element for non-negative `b`, held at 2^63-1 where int64 would wrap (an end past every time)."""
    first = np.asarray(a, dtype=np.int64)
    return first + np.minimum(b, np.iinfo(np.int64).max - np.maximum(first, 0))


def _fits(values: np.ndarray, count: int) -> bool:
    """Whether `count` values of at most `values`' largest magnitude sum within int64."""
    largest = max(abs(int(values.max())), abs(int(values.min())))
    return largest * count <= np.iinfo(np.int64).max


class ColumnsBuilder:
    """Records appended one by one as field values, made into `Columns` at the end; no `Record` is built.

    A source that converts hundreds of thousands of events (the CUPTI
    source's conversion of one training epoch: 360,000) spends most of its
    time making frozen `Record`s that the trace file then takes apart into
    columns again; appending their fields costs a fraction of that, and a
    `Run` over `RecordTable(builder.columns())` builds records only for
    whoever asks for them. `add` takes `Record`'s arguments.
    """

    def __init__(self) -> None:
        self.fields: dict[str, list[Any]] = {name: [] for name in _FIELDS}
        self._appends = tuple(self.fields[name].append for name in _FIELDS)

    def __len__(self) -> int:
        return len(self.fields["kind"])

    def add(self, kind: Kind, start_ns: int, duration_ns: int, nbytes: int = 0, pinned: bool = False,
            kernel: str | None = None, launch: int | None = None, param: str | None = None, array: int | None = None,
            site: Site | None = None, region: int | None = None, mode: str = "batched",
            fingerprint: str | None = None, process: int = 0, device: int | None = None,
            peer: int | None = None) -> None:
        """Append one record's fields (the arguments of `Record`)."""
        a = self._appends
        a[0](kind), a[1](start_ns), a[2](duration_ns), a[3](nbytes), a[4](pinned), a[5](kernel), a[6](launch)
        a[7](param), a[8](array), a[9](site), a[10](region), a[11](mode), a[12](fingerprint), a[13](process)
        a[14](device), a[15](peer)

    def columns(self) -> Columns:
        """The records so far as `Columns` (`OverflowError` as `Columns.from_records`)."""
        return Columns.from_fields(self.fields)


class RecordTable(Sequence[Record]):
    """`Run.records` of a trace loaded from columns: a sequence of `Record`s built on demand.

    Indexing builds one record; iterating builds them all once and keeps
    them, since whoever iterates (a detector, a report) usually indexes
    afterwards too. Compares equal to any sequence of equal records, so a
    loaded run equals the run that was saved.
    """

    __slots__ = ("columns", "_built")

    def __init__(self, columns: Columns) -> None:
        self.columns = columns
        self._built: tuple[Record, ...] | None = None

    def __len__(self) -> int:
        return len(self.columns)

    @overload
    def __getitem__(self, i: int) -> Record: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[Record, ...]: ...

    def __getitem__(self, i: int | slice) -> Record | tuple[Record, ...]:
        if self._built is not None:
            return self._built[i]
        if isinstance(i, slice):
            return tuple(self.columns.record(j) for j in range(*i.indices(len(self))))
        n = len(self)
        if not -n <= i < n:
            raise IndexError("record index out of range")
        return self.columns.record(i % n)

    def __iter__(self) -> Iterator[Record]:
        return iter(self.built())

    def built(self) -> tuple[Record, ...]:
        """All records as a tuple (built on the first call)."""
        if self._built is None:
            self._built = self.columns.records()
        return self._built

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RecordTable) and other.columns is self.columns:
            return True
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(other) == len(self) and tuple(other) == self.built()

    def __hash__(self) -> int:
        return hash(self.built())

    def __repr__(self) -> str:
        return f"RecordTable({len(self)} records)"


# ------------------------------------------------------------- encoding
_DTYPE_CODE = re.compile(r"[<>|=]?[iu][1248]\Z")
_DTYPES = (np.uint8, np.int8, np.uint16, np.int16, np.int32, np.int64)


def _pack(values: np.ndarray) -> dict[str, Any]:
    """`{"dtype": "<i4", "data": base64}` in the narrowest type that holds every value."""
    dtype: Any = np.int64
    if values.size:
        lo, hi = int(values.min()), int(values.max())
        dtype = next(t for t in _DTYPES if np.iinfo(t).min <= lo and hi <= np.iinfo(t).max)
    le = np.dtype(dtype).newbyteorder("<")
    return {"dtype": le.str, "data": base64.b64encode(values.astype(le, copy=False).tobytes()).decode("ascii")}


def _unpack(entry: Any, name: str, count: int, fail: Callable[[str], TraceError]) -> np.ndarray:
    if not isinstance(entry, dict) or not isinstance(entry.get("dtype"), str) or not isinstance(entry.get("data"), str):
        raise fail(f"column '{name}' must be an object with 'dtype' and 'data'")
    # only the plain integer type codes `_pack` writes: numpy.dtype() parses far
    # more (structured types, subarrays) and raises more than one kind of error
    if not _DTYPE_CODE.match(entry["dtype"]):
        raise fail(f"column '{name}': dtype {shown(entry['dtype'])} is not an integer type")
    dtype = np.dtype(entry["dtype"])
    try:
        raw = base64.b64decode(entry["data"], validate=True)
    except (binascii.Error, ValueError):
        raise fail(f"column '{name}': data is not valid base64") from None
    if len(raw) != count * dtype.itemsize:
        raise fail(f"column '{name}' holds {len(raw) // dtype.itemsize} values, expected {count} (one per record)")
    return np.frombuffer(raw, dtype=dtype)


def _check_codes(codes: np.ndarray, n: int, *, name: str, nullable: bool, fail: Callable[[str], TraceError],
                 what: str = "values") -> None:
    low = -1 if nullable else 0
    bad = np.flatnonzero((codes < low) | (codes >= n))
    if bad.size:
        i = int(bad[0])
        if name == "kind":
            raise fail(f"record {i}: kind code {int(codes[i])} is not one of the {n} kinds {', '.join(KINDS[:n])}")
        raise fail(f"record {i}: {name} {int(codes[i])} is not an index into the {n} {what}")


def _canonical(codes: np.ndarray, values: Sequence[Any]) -> tuple[np.ndarray, tuple[Any, ...]]:
    """Merge duplicate values of a table (a file may repeat one), so equal codes mean equal values."""
    first: dict[Any, int] = {}
    remap = [first.setdefault(v, len(first)) for v in values]
    if len(first) == len(values):
        return codes, tuple(values)
    lookup = np.array([*remap, -1], dtype=np.int32)
    return lookup[codes], tuple(first)
