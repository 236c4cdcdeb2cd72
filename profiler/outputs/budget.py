"""Budget files for the gate: absolute limits on copies, and tolerances for time checks.

    # budget.yaml
    h2d: {count: 4, bytes: 16 MiB}     # totals over the whole run
    d2h: {count: 2}
    syncs: 10
    launches: 200
    sites:                             # per call site: file suffix, optionally :function
      - match: examples/heat.py:heat
        h2d: {count: 2}
    time:                              # tolerances against the baseline (need --baseline)
      copy: 20%
      wall: 2ms

Counts and bytes are hard limits; times only ever gate with an explicit
tolerance, because they vary from run to run. Every problem is a one-line
`ProfilerError` naming the file and the key.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Any

from ..errors import ProfilerError
from ..files import read_yaml
from ..trace.records import COPY_KINDS, Direction
from ..units import INT64_MAX, parse_duration, parse_size, shown
from .baseline import TIME_FIELDS, FlowKey

_TOL = re.compile(r"^\s*(?P<field>[a-z0-9]+)\s*[:=]\s*(?P<tol>.+?)\s*$")


@dataclass(frozen=True)
class Limit:
    """At most `count` copies and `nbytes` bytes (None: no limit)."""

    count: int | None = None
    nbytes: int | None = None


@dataclass(frozen=True)
class Tolerance:
    """How much a time may exceed the baseline: a percentage, or an absolute ns amount."""

    field: str
    percent: float | None = None
    extra_ns: int | None = None

    def allowed(self, base_ns: int) -> int:
        if self.percent is not None:
            return int(base_ns * (1 + self.percent / 100.0))
        return base_ns + (self.extra_ns or 0)

    def describe(self) -> str:
        if self.percent is not None:
            return f"{self.percent:g}%"
        from ..units import fmt_ns

        return fmt_ns(self.extra_ns or 0)


def parse_tolerance(text: str, source: str = "--time") -> Tolerance:
    """`copy:20%`, `wall=5ms` (as pytest-benchmark's `--benchmark-compare-fail` reads `min:5%`)."""
    m = _TOL.match(text)
    if not m:
        raise ProfilerError(f"{source}: {shown(text)} is not FIELD:TOLERANCE (e.g. copy:20% or wall:5ms)")
    return tolerance(m.group("field"), m.group("tol"), source)


def tolerance(field: str, value: Any, source: str) -> Tolerance:
    if field not in TIME_FIELDS:
        raise ProfilerError(f"{source}: time field {field!r} is not one of {', '.join(TIME_FIELDS)}")
    text = str(value).strip()
    if text.endswith("%"):
        try:
            pct = float(text[:-1])
        except ValueError:
            raise ProfilerError(f"{source}: {field} tolerance {shown(text)} is not a percentage") from None
        if not math.isfinite(pct):
            raise ProfilerError(f"{source}: {field} tolerance {shown(text)} is not a finite percentage")
        if pct < 0:
            raise ProfilerError(f"{source}: {field} tolerance must not be negative")
        return Tolerance(field, percent=pct)
    try:
        return Tolerance(field, extra_ns=parse_duration(value, f"{field} tolerance"))
    except ValueError as exc:
        raise ProfilerError(f"{source}: {exc} (or a percentage such as 20%)") from None


@dataclass(frozen=True)
class SiteBudget:
    """Limits for the call sites whose file ends with `file` (and whose function is `function`)."""

    match: str
    file: str
    function: str | None
    limits: dict[Direction, Limit]

    def matches(self, key: FlowKey) -> bool:
        f = key.file
        if not (f == self.file or f.endswith("/" + self.file)):
            return False
        return self.function is None or key.function == self.function


@dataclass(frozen=True)
class Budget:
    path: str
    totals: dict[Direction, Limit]
    launches: int | None
    syncs: int | None
    sites: tuple[SiteBudget, ...]
    times: tuple[Tolerance, ...]


def load_budget(path: str | os.PathLike[str]) -> Budget:
    name = str(path)
    data = read_yaml(path, "budget")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ProfilerError(f"{name}: a budget is a mapping (h2d, d2h, syncs, launches, sites, time)")
    unknown = sorted(set(data) - {"h2d", "d2h", "syncs", "launches", "sites", "time"})
    if unknown:
        raise ProfilerError(f"{name}: unknown key(s) {', '.join(map(str, unknown))}; "
                            "use h2d, d2h, syncs, launches, sites, time")
    totals = {d: _limit(data[d], f"{name}: {d}") for d in COPY_KINDS if d in data}
    sites = []
    raw_sites = data.get("sites", []) or []
    if not isinstance(raw_sites, list):
        raise ProfilerError(f"{name}: 'sites' must be a list of {{match: FILE[:FUNCTION], h2d: ..., d2h: ...}}")
    for n, item in enumerate(raw_sites, 1):
        where = f"{name}: sites[{n}]"
        if not isinstance(item, dict) or not isinstance(item.get("match"), str) or not item["match"].strip():
            raise ProfilerError(f"{where} needs a 'match' string (FILE or FILE:FUNCTION)")
        extra = sorted(set(item) - {"match", "h2d", "d2h"})
        if extra:
            raise ProfilerError(f"{where}: unknown key(s) {', '.join(map(str, extra))}")
        match = item["match"].strip()
        file, _, function = match.partition(":")
        limits = {d: _limit(item[d], f"{where}.{d}") for d in COPY_KINDS if d in item}
        if not limits:
            raise ProfilerError(f"{where} ({match}) sets no limit; give it h2d and/or d2h")
        sites.append(SiteBudget(match, file, function or None, limits))
    times = data.get("time", {}) or {}
    if not isinstance(times, dict):
        raise ProfilerError(f"{name}: 'time' maps fields ({', '.join(TIME_FIELDS)}) to tolerances")
    budget = Budget(
        path=name, totals=totals,
        launches=_count(data.get("launches"), f"{name}: launches"),
        syncs=_count(data.get("syncs"), f"{name}: syncs"),
        sites=tuple(sites),
        times=tuple(tolerance(str(k), v, f"{name}: time") for k, v in times.items()),
    )
    if not (budget.totals or budget.launches is not None or budget.syncs is not None or budget.sites or budget.times):
        # a gate that checks nothing passes everything: say so instead of "gate passed (0 checks)"
        raise ProfilerError(f"{name}: the budget sets no limits; give h2d, d2h, syncs, launches, sites or time")
    return budget


def _limit(value: Any, where: str) -> Limit:
    if isinstance(value, int) and not isinstance(value, bool):
        return Limit(count=_count(value, where))
    if not isinstance(value, dict) or not value or set(value) - {"count", "bytes"}:
        raise ProfilerError(f"{where} must be a count or {{count: N, bytes: SIZE}}")
    nbytes = None
    if "bytes" in value:
        try:
            nbytes = parse_size(value["bytes"], "bytes")
        except ValueError as exc:
            raise ProfilerError(f"{where}: {exc}") from None
    return Limit(_count(value.get("count"), f"{where}.count"), nbytes)


def _count(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= INT64_MAX:
        raise ProfilerError(f"{where} must be an integer from 0 to 2^63-1, got {shown(value)}")
    return value
