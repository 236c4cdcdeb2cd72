"""The HTML report as one self-contained page: `offload-prof report --format html` and `compare --format html`.

One file a CI job can upload and anyone can open: the style sheet, the
script and the timeline's data are inlined, nothing is fetched (no CDN,
no font, no image), so it opens offline and from an artifact. The
figures are static HTML built by `parts` (readable with the script
off); the script only draws the timelines (`report.js`, from the data of
`timeline`). With two runs the page leads with the comparison, the
headline's sentences and the same rows as `compare`, then each run.

`cell_html` is the notebook's report: the same parts, without the page
around them and without the timeline (a notebook may not run a cell
output's script), with call sites labelled by the notebook's cells.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Sequence

from ...analysis.detectors import Finding
from ...analysis.summary import by_site, totals
from ...analysis.verdict import Verdict
from ...phrases import exact_sentence, modelled_clause, ratio_sentence, run_names, saving_text
from ...trace.model import Run
from ...trace.records import Link
from ...units import fmt_bytes, fmt_ns, plural
from ..report import compare_rows, compare_sites
from .parts import (
    Where, file_where, findings_html, ranks_html, sites_html, suffix, table_html, totals_html, verdict_html)
from .timeline import EXACT_LIMIT, timeline_data

_HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Analysed:
    """A run with what the report shows of it: its file, its name on the page, its findings and verdict."""

    run: Run
    path: str
    name: str
    findings: tuple[Finding, ...]
    verdict: Verdict | None


def asset(name: str) -> str:
    """`report.css` or `report.js`, shipped beside this module."""
    return (_HERE / name).read_text(encoding="utf-8")


def named(runs: Sequence[Run], paths: Sequence[str], analysed: Sequence[tuple[Sequence[Finding], Verdict | None]]
          ) -> list[Analysed]:
    """Each run with its path, its name (`run_names`: the modes when they differ) and its analysis."""
    names = run_names(runs) if len(runs) > 1 else ("",)
    return [Analysed(run, path, name, tuple(f), v) for run, path, name, (f, v) in zip(runs, paths, names, analysed)]


def render_page(runs: Sequence[Analysed], *, link: Link | None = None, top: int = 10,
                exact_limit: int = EXACT_LIMIT) -> str:
    """The whole page for one run or two (the second compared with the first).

    A timeline of at most `exact_limit` operations is drawn from its
    operations at once; a larger one from its overview until zoomed in.
    """
    if not 1 <= len(runs) <= 2:
        raise ValueError("the HTML report shows one run or two")
    first = runs[0].run
    title = "offload-prof: " + (first.label or "report")
    body = [_header(runs, link)]
    if len(runs) == 2:
        body.append(_comparison(runs[0], runs[1], link, top))
    data = []
    for index, a in enumerate(runs):
        body.append(_run_section(a, link, top, index))
        data.append({**timeline_data(a.run, a.name, file_where(a.run.meta.cwd), _marks(a)).as_json(),
                     "exact": exact_limit})
    # "</" cannot close the data's script element: site labels are the user's text
    # a file name's bad bytes as `\\xff` inside the JSON strings too (the backslash escaped for JSON)
    payload = utf8_text(json.dumps(data, separators=(",", ":"), ensure_ascii=False), in_json=True).replace(
        "</", "<\\/")
    return utf8_text("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                     f"<title>{escape(title)}</title><style>{asset('report.css')}</style></head>\n"
                     f"<body class=\"offload-prof\">\n{''.join(body)}\n"
                     f"<script type=\"application/json\" id=\"timeline-data\">{payload}</script>\n"
                     f"<script>{asset('report.js')}</script>\n</body></html>\n")


#: a lone surrogate: how Python holds a byte of a file name that is not UTF-8 (`os.fsdecode`), which UTF-8 cannot encode
_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_text(text: str, in_json: bool = False) -> str:
    """`text` with every lone surrogate shown as the byte it stands for (`\\xff`), so that it encodes as UTF-8.

    A call site in `l\\xffop.py` (a file name that is not UTF-8) reaches
    the report as a lone surrogate; a page is UTF-8 throughout, so the bad
    byte is shown as `ls -b` shows it, and anything else that is no
    character (a surrogate from a JSON escape) as U+FFFD. `in_json`: the
    text is JSON, whose strings need the backslash escaped.
    """
    slash = "\\\\" if in_json else "\\"

    def shown(m: re.Match[str]) -> str:
        code = ord(m.group())
        return f"{slash}x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else "\ufffd"

    return _SURROGATE.sub(shown, text)


def cell_html(a: Analysed, *, where: Where, link: Link | None = None, top: int = 10, title: str = "") -> str:
    """A notebook cell's report: verdict, totals, call sites and findings, styled, without the timeline."""
    run = a.run
    t = totals(run, link)
    head = f"<h3>{escape(title)}</h3>" if title else ""
    return utf8_text(f"<div class=\"offload-prof\"><style>{asset('report.css')}</style>{head}"
            f"{verdict_html(a.verdict, run.meta.cwd, where=where)}"
            f"<p class=\"meta\" id=\"wall\">{_wall_sentence(run, t.wall_ns, t.copies.ns, t.launches.count, t.regions)}</p>"
            f"{_link_note(link, run)}"
            f"<h3>Totals</h3>{totals_html(t, link)}{ranks_html(run, link)}"
            f"<h3>Top call sites by copy time</h3>{sites_html(by_site(run, link), where, top, link is not None)}"
            f"<h3>Findings ({len(a.findings)}), largest expected saving first</h3>"
            f"{findings_html(run, a.findings, where)}</div>")


def _header(runs: Sequence[Analysed], link: Link | None) -> str:
    first = runs[0].run
    target = " ".join(first.meta.argv) or "(in-process recording)"
    lines = []
    for a in runs:
        m = a.run.meta
        when = m.started_at.replace("T", " ")[:16] + " UTC" if m.started_at else "?"
        label = f"{escape(a.name)}: " if a.name else ""
        lines.append(f"<p class=\"meta\">{label}<code>{escape(a.path)}</code>: backend {escape(m.backend)} "
                     f"({escape(m.device)}), mode {escape(m.mode)}, {escape(when)}"
                     + ("" if m.fingerprints else ", no fingerprints") + "</p>")
    return (f"<header><h1>offload-prof report</h1><p class=\"meta\">target <code>{escape(target)}</code></p>"
            f"{''.join(lines)}{_link_note(link, first)}</header>")


def _link_note(link: Link | None, run: Run) -> str:
    if link is None:
        return ""
    why = "the NumPy backend's copies are host memcpys, so" if run.meta.backend == "numpy" else "on request,"
    return (f"<p class=\"note\">modelled costs: {why} the <i>modelled</i> columns show what the recorded copies "
            f"would cost on the {escape(link.name)} link ({escape(link.source or 'profile')})</p>")


def _comparison(a: Analysed, b: Analysed, link: Link | None, top: int) -> str:
    ta, tb = totals(a.run, link), totals(b.run, link)
    pair = [(a.name, ta), (b.name, tb)]
    sentences = [("exact", exact_sentence(pair)), ("modelled", modelled_clause(pair, link)),
                 ("measured", "measured: " + ratio_sentence(pair, [a.run.meta.wall_samples_ns, b.run.meta.wall_samples_ns]))]
    lines = "".join(f"<p class=\"headline\" id=\"headline-{key}\">{escape(text)}</p>" for key, text in sentences if text)
    rows = compare_rows(ta, tb, len(a.findings), len(b.findings), link)
    sites = [[file_where(cwd)(shown.site), f"{fa.count} / {fmt_bytes(fa.nbytes)}", f"{fb.count} / {fmt_bytes(fb.nbytes)}",
              fmt_ns(fa.ns), fmt_ns(fb.ns)] for shown, cwd, fa, fb in compare_sites(a.run, b.run, link, top)]
    site_table = (table_html(["call site", f"copies ({a.name})", f"copies ({b.name})", f"time ({a.name})",
                              f"time ({b.name})"], sites, "compare-sites")
                  if sites else "<p class=\"none\">no copies in either run</p>")
    return (f"<section id=\"comparison\"><h2>{escape(a.name)} vs {escape(b.name)}</h2>{lines}"
            f"{table_html(['', a.name, b.name, 'ratio'], rows, 'compare')}"
            f"<h3>Call sites with copies</h3>{site_table}</section>")


def _run_section(a: Analysed, link: Link | None, top: int, index: int) -> str:
    run = a.run
    t = totals(run, link)
    where = file_where(run.meta.cwd)
    name = f" ({escape(a.name)})" if a.name else ""
    events = plural(len(run.records), "event")
    return (f"<section class=\"run\" id=\"run{suffix(a.name)}\">"
            f"{verdict_html(a.verdict, run.meta.cwd, a.name)}"
            f"<p class=\"meta\" id=\"wall{suffix(a.name)}\">"
            f"{_wall_sentence(run, t.wall_ns, t.copies.ns, t.launches.count, t.regions)}</p>"
            f"<h3>Timeline{name}: copies, kernels and syncs</h3>"
            f"<div class=\"timeline\" data-run=\"{index}\" id=\"timeline{suffix(a.name)}\"><canvas></canvas>"
            f"<div class=\"tip\"></div><p class=\"hint\">{events}; a bar's height grows with the share of its "
            "slice of time the lane was busy (square root: 1% busy shows a tenth of the lane). Wheel to zoom, drag to pan, double-click to reset; triangles mark findings."
            "<button class=\"reset\" type=\"button\">reset zoom</button></p></div>"
            f"<h3>Totals{name}</h3>{totals_html(t, link)}{ranks_html(run, link, a.name)}"
            f"<h3>Top call sites by copy time{name}</h3>{sites_html(by_site(run, link), where, top, link is not None)}"
            f"<h3>Findings{name} ({len(a.findings)}), largest expected saving first</h3>"
            f"{findings_html(run, a.findings, where, a.name)}</section>")


def _wall_sentence(run: Run, wall_ns: int, copy_ns: int, launches: int, regions: int) -> str:
    share = f" ({100 * copy_ns / wall_ns:.1f}% of wall)" if wall_ns else ""
    return (f"wall {fmt_ns(wall_ns)}; copies {fmt_ns(copy_ns)}{share}; "
            f"{plural(launches, 'launch', 'launches')} in {plural(regions, 'region')}")


def _marks(a: Analysed) -> list[tuple[int, str]]:
    """Each finding at the start of its first blamed record, labelled with its rule, saving and site."""
    start = a.run.columns.start_ns
    where = file_where(a.run.meta.cwd)
    return [(int(start[f.records[0]]), f"{f.code} {where(f.site)}: {saving_text(f)}")
            for f in a.findings if f.records and 0 <= f.records[0] < len(start)]
