"""What every runtime detector shares: the `Finding` record, drafts, and the claims on records.

Detectors run in a fixed order over one `Run`, and each copy (or sync) can
be blamed on at most one finding: a detector *claims* the records it calls
wasted, and later detectors skip claimed records. So a naive loop is
reported once, as per-launch transfers, not again as round trips and
re-uploads of the same bytes, and the times lost of all findings add up
to no more than the time the run really spent.

A detector produces `Draft`s; `Context.finish` turns them into frozen
`Finding`s once the syncs forced by claimed copies have been added to the
finding that claimed the copies, and formats the catalog message. It also
prices each finding's fix: the detector says what the fix changes (a
`profiler.analysis.replay.Fix`, by default: the claimed records no longer
happen), the replay of the run's timeline says what that saves, and the
finding's severity drops to info when the saving is not material
(`materiality`). Findings come out ranked by that saving.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from offload_core.catalog import Rule, Severity

from ...trace.model import Run
from ...trace.records import Link, Record, Site
from ...units import fmt_bytes, fmt_ns
from ..replay import Fix, Timeline, hoist, replayed_wall
from ..replay.unsaved import why_nothing_saved
from ..summary import modelled_column
from .materiality import Intervals, Materiality


@dataclass(frozen=True)
class Finding:
    """One runtime anti-pattern: where, how often, how many bytes, what it cost.

    `lost_ns` is the measured time the pattern cost (None where the run
    cannot measure it, e.g. pinned-vs-pageable on the NumPy backend);
    `modelled_lost_ns` the same on the modelled link `link` (None without
    one). `expected_saving_ns` is the wall time the run would save with
    the fix the message advises (`fix`, in a few words), from a replay of
    its timeline (None where the fix cannot be priced on this backend);
    unlike the time lost, it counts a copy hidden behind compute as
    nothing and a sync as the work it kept the host from queueing.
    `related` names the static rules (linter) that catch the pattern
    before the code runs. `records` are indices into `run.records` of the
    records the finding blames.
    """

    code: str
    name: str
    severity: Severity
    message: str
    site: Site | None
    count: int
    nbytes: int
    lost_ns: int | None
    modelled_lost_ns: int | None
    link: str | None
    related: tuple[str, ...]
    records: tuple[int, ...] = field(default=(), repr=False)
    expected_saving_ns: int | None = None
    fix: str = ""
    #: the run's wall time, which the saving is a share of
    wall_ns: int = 0
    #: the ranks of a distributed job that made the mistake (`profiler.analysis.ranks`); empty outside a job
    ranks: tuple[int, ...] = ()
    #: why the fix saves nothing although the records took time (`replay.unsaved`); "" otherwise
    unsaved: str = ""

    @property
    def saving_share(self) -> float | None:
        """The expected saving as a fraction of the run's wall time."""
        if self.expected_saving_ns is None or self.wall_ns <= 0:
            return None
        return self.expected_saving_ns / self.wall_ns

    @property
    def line(self) -> int:
        return self.site.line if self.site else 0

    @property
    def column(self) -> int:
        return self.site.column if self.site else 0

    @property
    def location(self) -> str:
        """`file:line:col` (1-based), as the linter prints positions."""
        if self.site is None:
            return "<unknown>"
        return f"{self.site.file}:{self.site.line}:{self.site.column}"


@dataclass
class Draft:
    """A finding under construction.

    `records` are the claimed records; unless `lost_ns`/`modelled_ns` are
    given, the time lost is their measured (and modelled) duration.
    `fix` makes the finding's fix from its final records (the syncs
    forced by claimed copies are added after the detector ran); None:
    the records no longer happen (`replay.hoist`), and returning None
    means the fix cannot be priced here.
    """

    code: str
    site: Site | None
    count: int
    nbytes: int
    fields: dict[str, Any]
    records: list[int] = field(default_factory=list)
    lost_ns: int | None = None
    modelled_ns: int | None = None
    explicit_lost: bool = False
    fix: Callable[[list[int]], Fix | None] | None = None


class Context:
    """The run being examined, the rule options in force, and the claims made so far."""

    def __init__(self, run: Run, rules: Mapping[str, Rule], options: Mapping[str, Mapping[str, Any]],
                 link: Link | None, timeline: Timeline | None = None) -> None:
        self.run = run
        self.timeline = timeline
        self.records = run.records
        self.rules = rules
        self.link = link
        self._options = options
        #: record index -> the draft that blames it
        self.claims: dict[int, Draft] = {}
        self.drafts: list[Draft] = []

    def option(self, code: str, name: str) -> Any:
        """The rule's option: an override if given, else the catalog default."""
        override = self._options.get(code, {})
        if name in override:
            return override[name]
        defaults = self.rules[code].options
        if name not in defaults:
            raise KeyError(f"{code}: the catalog gives no option '{name}'")
        return defaults[name]

    def claimed(self, i: int) -> bool:
        return i in self.claims

    def add(self, draft: Draft) -> Draft:
        for i in draft.records:
            self.claims.setdefault(i, draft)
        self.drafts.append(draft)
        return draft

    # ------------------------------------------------------------- finish
    def attach_forced_syncs(self) -> None:
        """Blame each sync whose preceding D2H copies are all claimed on the draft that claimed them.

        offload_core synchronises because it copied something back; when
        those copies were wasted, so was the wait.
        """
        pending: list[int] = []
        for i, r in enumerate(self.records):
            if r.kind == "d2h":
                pending.append(i)
            elif r.kind == "sync":
                if pending and all(p in self.claims for p in pending) and i not in self.claims:
                    owner = self.claims[pending[-1]]
                    owner.records.append(i)
                    self.claims[i] = owner
                pending = []

    def finish(self) -> list[Finding]:
        if not self.drafts:
            return []
        out = []
        column = modelled_column(self.run.columns, self.link) if self.link is not None else None
        priced: list[int] | None = None if column is None else column.tolist()
        timeline = self.timeline if self.timeline is not None else Timeline.of(self.run)
        base = replayed_wall(timeline)
        intervals = Intervals(self.run)
        wall = self.run.meta.wall_ns
        for d in self.drafts:
            rule = self.rules[d.code]
            if d.explicit_lost:
                lost, modelled = d.lost_ns, d.modelled_ns
            else:
                lost = sum(self.records[i].duration_ns for i in d.records)
                modelled = None if priced is None else sum(priced[i] for i in d.records)
            values = dict(d.fields)
            values.setdefault("count", d.count)
            values.setdefault("bytes", fmt_bytes(d.nbytes))
            values["lost"] = lost_text(lost, modelled, self.link)
            values["static"] = ", ".join(rule.related) or "no static rule"
            fix = d.fix(d.records) if d.fix is not None else hoist(d.records, FIX_ACTIONS[d.code], self.run)
            expected = None if fix is None else max(base - replayed_wall(timeline, fix), 0)
            unsaved = why_nothing_saved(timeline, fix) if fix is not None and expected == 0 and (lost or modelled) else ""
            repeats = intervals.count(fix.records if fix is not None else d.records)
            severity = Materiality.of(d.code, self.option).severity(rule.severity, expected, wall, repeats)
            out.append(Finding(
                code=rule.id, name=rule.name, severity=severity, message=rule.format(**values),
                site=d.site, count=d.count, nbytes=d.nbytes, lost_ns=lost, modelled_lost_ns=modelled,
                link=self.link.name if self.link is not None and modelled is not None else None,
                related=rule.related, records=tuple(sorted(d.records)), expected_saving_ns=expected,
                fix=fix.action if fix is not None else FIX_ACTIONS[d.code], wall_ns=wall, unsaved=unsaved,
            ))
        out.sort(key=rank)
        return out


#: the fix each rule's message advises, in a few words
FIX_ACTIONS: dict[str, str] = {"OFF502": "upload once", "OFF506": "copy back once", "OFF501": "keep resident",
                               "OFF503": "keep resident", "OFF504": "page-lock", "OFF505": "pack",
                               "OFF507": "drop sync", "OFF509": "reduce once"}


def rank(f: Finding) -> tuple[int, int, int, int, str, str]:
    """Most expected saving first; findings whose saving is unknown after those, by time lost."""
    known = f.expected_saving_ns is not None
    return (0 if known else 1, -(f.expected_saving_ns or 0), -(f.modelled_lost_ns or 0), -(f.lost_ns or 0),
            f.code, f.location)


def lost_text(lost: int | None, modelled: int | None, link: Link | str | None) -> str:
    """`3.1 ms lost (41 ms modelled on pcie5-x16)`, saying which figure is which (`link`: the link or its name)."""
    name = link.name if isinstance(link, Link) else link
    if lost is not None and modelled is not None and name is not None:
        return f"{fmt_ns(lost)} lost ({fmt_ns(modelled)} modelled on {name})"
    if lost is not None:
        return f"{fmt_ns(lost)} lost"
    if modelled is not None and name is not None:
        return f"{fmt_ns(modelled)} lost, modelled on {name} (not measurable on this backend)"
    return "time lost not measurable on this backend"


def names(params: Iterable[str | None]) -> str:
    """`'u', 'scratch'` in first-seen order."""
    seen: dict[str, None] = {}
    for p in params:
        seen.setdefault(p or "?", None)
    return ", ".join(f"'{p}'" for p in seen)


def line_of(r: Record) -> int:
    return r.site.line if r.site else 0
