"""What every runtime detector shares: the `Finding` record, drafts, and the claims on records.

Detectors run in a fixed order over one `Run`, and each copy (or sync) can
be blamed on at most one finding: a detector *claims* the records it calls
wasted, and later detectors skip claimed records. So a naive loop is
reported once, as per-launch transfers, not again as round trips and
re-uploads of the same bytes, and the times lost of all findings add up
to no more than the time the run really spent.

A detector produces `Draft`s; `Context.finish` turns them into frozen
`Finding`s once the syncs forced by claimed copies have been added to the
finding that claimed the copies, and formats the catalog message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from offload_core.catalog import Rule, Severity

from ...trace.model import Run
from ...trace.records import Link, Record, Site
from ...units import fmt_bytes, fmt_ns
from ..summary import modelled_column


@dataclass(frozen=True)
class Finding:
    """One runtime anti-pattern: where, how often, how many bytes, what it cost.

    `lost_ns` is the measured time the pattern cost (None where the run
    cannot measure it, e.g. pinned-vs-pageable on the NumPy backend);
    `modelled_lost_ns` the same on the modelled link `link` (None without
    one). `related` names the static rules (linter) that catch the pattern
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


class Context:
    """The run being examined, the rule options in force, and the claims made so far."""

    def __init__(self, run: Run, rules: Mapping[str, Rule], options: Mapping[str, Mapping[str, Any]],
                 link: Link | None) -> None:
        self.run = run
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
        out = []
        column = modelled_column(self.run.columns, self.link) if self.link is not None else None
        priced: list[int] | None = None if column is None else column.tolist()
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
            out.append(Finding(
                code=rule.id, name=rule.name, severity=rule.severity, message=rule.format(**values),
                site=d.site, count=d.count, nbytes=d.nbytes, lost_ns=lost, modelled_lost_ns=modelled,
                link=self.link.name if self.link is not None and modelled is not None else None,
                related=rule.related, records=tuple(sorted(d.records)),
            ))
        out.sort(key=lambda f: (-(f.modelled_lost_ns or 0), -(f.lost_ns or 0), f.code, f.location))
        return out


def lost_text(lost: int | None, modelled: int | None, link: Link | None) -> str:
    """`3.1 ms lost (41 ms modelled on pcie5-x16)`, saying which figure is which."""
    if lost is not None and modelled is not None and link is not None:
        return f"{fmt_ns(lost)} lost ({fmt_ns(modelled)} modelled on {link.name})"
    if lost is not None:
        return f"{fmt_ns(lost)} lost"
    if modelled is not None and link is not None:
        return f"{fmt_ns(modelled)} lost, modelled on {link.name} (not measurable on this backend)"
    return "time lost not measurable on this backend"


def names(params: Iterable[str | None]) -> str:
    """`'u', 'scratch'` in first-seen order."""
    seen: dict[str, None] = {}
    for p in params:
        seen.setdefault(p or "?", None)
    return ", ".join(f"'{p}'" for p in seen)


def line_of(r: Record) -> int:
    return r.site.line if r.site else 0
