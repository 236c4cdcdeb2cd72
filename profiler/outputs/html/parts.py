"""The pieces of an HTML report: the verdict, totals, call sites, findings and the comparison, as escaped HTML.

The page (`page`) and the notebook cell's report (`cell`) are built from
these, so a figure reads the same in a browser, in a notebook and in the
text report (the cells come from `profiler.outputs.report`'s rows and
`profiler.phrases`' sentences wherever the text report has them). Every piece is static HTML:
the key figures are in the DOM without the page's script, which only
draws the timeline. Call sites are labelled by a `Where` function, so the
page can print `app.py:12 in step` and a notebook `Cell In[3], line 4`.

Elements carry ids and `data-` attributes for the figures a reader (or a
test) looks for: `#verdict` (`#verdict-NAME` with several runs) with
`data-kind`, `#finding-N` (`#finding-NAME-N`) with `data-code` and
`data-saving-ns`, `#site-N` for the call sites.
"""

from __future__ import annotations

from html import escape
from typing import Callable, Sequence

from ...analysis.detectors import Finding, needs_fingerprints
from ...analysis.ranks import ranks_text
from ...analysis.summary import SiteSummary, Totals
from ...analysis.verdict import Verdict, cause_text
from ...phrases import saving_text
from ...trace.model import Run
from ...trace.records import Link, Site, relative_file
from ...units import fmt_bytes, fmt_ns
from ..report import rank_table, totals_rows

#: how a call site is shown
Where = Callable[[Site | None], str]

#: the verdict's four parts of the wall time: (css class, label)
VERDICT_PARTS = (("kernels", "kernels running"), ("copies", "copies, no kernel beside them"),
                 ("wait", "idle after a wait"), ("host", "idle while the host works"))


def file_where(cwd: str) -> Where:
    """`app.py:12 in step`: the file relative to the run's folder, the line and the function."""
    def where(site: Site | None) -> str:
        if site is None:
            return "(no call site)"
        return f"{relative_file(site.file, cwd)}:{site.line} in {site.function}"

    return where


def suffix(name: str) -> str:
    """`-naive` for an element id of the run named `naive` (nothing for a single run, named "")."""
    return f"-{_ident(name)}" if name else ""


def _ident(text: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in text)


def _pct(share: float) -> str:
    return f"{100 * share:.0f}%"


def verdict_html(v: Verdict | None, cwd: str, name: str = "", where: Where | None = None) -> str:
    """The run's verdict: its kind, the sentence of figures, the wall time split four ways, the lines behind idle time.

    Lines are `app.py:12` relative to `cwd`, or as `where` names them (a notebook's cells).
    """
    heading = f"<h2>Verdict{': ' + escape(name) if name else ''}</h2>"
    if v is None:
        return (f'<section class="verdict" id="verdict{suffix(name)}" data-kind="none">{heading}'
                '<p class="kind">no device work recorded</p></section>')
    figures = {"kernels": v.kernel_ns, "copies": v.copy_ns, "wait": v.wait_idle_ns, "host": v.host_idle_ns}
    bar = "".join(
        f'<span class="part {cls}" style="width:{100 * v.share(figures[cls]):.3f}%" '
        f'title="{label}: {_pct(v.share(figures[cls]))} ({fmt_ns(figures[cls])})"></span>'
        for cls, label in VERDICT_PARTS)
    legend = "".join(
        f'<li><i class="part {cls}"></i>{label} <b>{_pct(v.share(figures[cls]))}</b> ({fmt_ns(figures[cls])})</li>'
        for cls, label in VERDICT_PARTS)
    causes = "".join(f"<li>{escape(cause_text(c, cwd, where))}</li>" for c in v.causes)
    idle = f'<p class="sub">device idle time, largest first</p><ul class="causes">{causes}</ul>' if causes else ""
    return (f'<section class="verdict" id="verdict{suffix(name)}" data-kind="{v.kind}">{heading}'
            f'<p class="kind {v.kind}">{v.kind}</p>'
            f'<p class="summary">{escape(v.summary(cwd, where).split(": ", 1)[1])}</p>'
            f'<p class="remedy">What helps: {escape(v.remedy())}</p>'
            f'<div class="split" role="img" aria-label="where the wall time went">{bar}</div>'
            f'<ul class="legend">{legend}</ul>{idle}</section>')


def table_html(head: Sequence[str], rows: Sequence[Sequence[str]], cls: str = "", left: int = 1,
               row_ids: Sequence[str] = ()) -> str:
    """A table of already formatted cells (escaped here): the first `left` columns left-aligned, the rest as numbers."""
    def cells(tag: str, row: Sequence[str]) -> str:
        return "".join(f'<{tag}{"" if i < left else " class=num"}>{escape(str(c))}</{tag}>' for i, c in enumerate(row))

    ids = [f' id="{row_id}"' for row_id in row_ids]
    body = "".join(f'<tr{ids[n] if n < len(ids) else ""}>{cells("td", r)}</tr>' for n, r in enumerate(rows))
    return f'<table class="{cls}"><thead><tr>{cells("th", head)}</tr></thead><tbody>{body}</tbody></table>'


def totals_html(t: Totals, link: Link | None) -> str:
    """The totals table: counts, bytes, measured and (with a link) modelled time of each kind of operation."""
    head, rows = totals_rows(t, link is not None, f" ({link.name})" if link else "",
                             link is not None and link.sync_us is not None)
    return table_html(head, rows, "totals")


def ranks_html(run: Run, link: Link | None, name: str = "") -> str:
    """A distributed job's rank table (a row per rank, then the job) and the slowest rank; "" for a run of no ranks."""
    t = rank_table(run, link)
    if t is None:
        return ""
    ids = [f"rank{suffix(name)}-{row[0]}" for row in t.rows]
    notes = "".join(f'<p class="note">{escape(" ".join(n.split()))}</p>' for n in t.notes)
    return f'<h3>{escape(t.title.capitalize())}</h3>{table_html(t.head, t.rows, "ranks", left=2, row_ids=ids)}{notes}'


def sites_html(sites: Sequence[SiteSummary], where: Where, top: int, modelled: bool) -> str:
    """The call sites that copied most (by copy time), with their line of code."""
    chosen = [s for s in sites if s.copies.count][:top]
    if not chosen:
        return '<p class="none">no copies</p>'
    head = ["#", "call site", "code", "H2D", "D2H", "copy time"] + (["modelled"] if modelled else [])
    rows = [[str(n), where(s.site), s.site.text if s.site else "",
             f"{s.h2d.count} / {fmt_bytes(s.h2d.nbytes)}" if s.h2d.count else "-",
             f"{s.d2h.count} / {fmt_bytes(s.d2h.nbytes)}" if s.d2h.count else "-",
             fmt_ns(s.copies.ns)] + ([fmt_ns(s.copies.modelled_ns)] if modelled else [])
            for n, s in enumerate(chosen, 1)]
    return table_html(head, rows, "sites", left=3, row_ids=[f"site-{n}" for n in range(1, len(rows) + 1)])


def findings_html(run: Run, findings: Sequence[Finding], where: Where, name: str = "") -> str:
    """The findings, largest expected saving first: the saving, the rule, where, the fix, the message."""
    if not findings:
        note = _fingerprint_note(run)
        return f'<p class="none">no findings</p>{note}'
    rows = []
    for n, f in enumerate(findings, 1):
        saving = "" if f.expected_saving_ns is None else str(f.expected_saving_ns)
        static = f' <span class="static">static: {escape(", ".join(f.related))}</span>' if f.related else ""
        rows.append(
            f'<tr id="finding{suffix(name)}-{n}" class="{f.severity}" data-code="{f.code}" data-saving-ns="{saving}">'
            f'<td class="saving">{escape(saving_text(f))}</td>'
            f'<td><b>{f.code}</b> <span class="sev">{f.severity}</span>{_ranks(f)}</td>'
            f'<td class="where">{escape(where(f.site))}</td><td>{escape(f.fix)}</td>'
            f'<td class="msg">{escape(f.message)}{static}</td></tr>')
    head = "".join(f"<th>{h}</th>" for h in ("expected saving", "rule", "where", "fix", "what happened"))
    return (f'<table class="findings"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
            + _fingerprint_note(run))


def _ranks(f: Finding) -> str:
    """A job's finding names its rank(s): ` <span class="ranks">ranks 0-1</span>`."""
    return f' <span class="ranks">{escape(ranks_text(f.ranks))}</span>' if f.ranks else ""


def _fingerprint_note(run: Run) -> str:
    if run.meta.fingerprints:
        return ""
    return (f'<p class="note">{" and ".join(needs_fingerprints)} compare copied contents and were skipped: this run '
            'was recorded with --no-fingerprints</p>')
