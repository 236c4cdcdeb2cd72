"""Text reports: `offload-prof report TRACE`, `offload-prof compare NAIVE BATCHED`, and the text the TUI would open on.

Renderers only read a `Run` (through `profiler.analysis.summary`), the
findings of `profiler.analysis.detectors` and the run's verdict
(`profiler.analysis.verdict`, first thing after the header: what bounded
the run, so the findings below can be read against it); they compute
nothing the TUI or a JSON consumer could not compute the same way.
Findings are listed by expected saving, the largest first, with the
saving up front. Measured and modelled
figures are never mixed: modelled columns are headed with the link
profile's name and a note says where the figures come from. The names of
runs, call-site labels and the headline's sentences ("batched is 139x
faster; 99% of the naive run was copies") are the TUI's and the HTML
page's too: they come from `profiler.phrases`. The tables' rows
(`totals_rows`, `compare_rows`, `compare_sites`, `rank_table`) are the
HTML page's too.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Sequence

from ..analysis.detectors import Finding, needs_fingerprints
from ..analysis.diagnosis import analyse
from ..analysis.ranks import ranks_text, summarise
from ..analysis.summary import Flow, SiteSummary, Totals, by_site, totals
from ..analysis.verdict import Verdict, verdict
from ..phrases import exact_sentence, modelled_clause, ratio_sentence, run_names, saving_text, site_label, slowest_line
from ..trace.job import job_of
from ..trace.model import Run
from ..trace.records import Link, relative_file
from ..units import fmt_bytes, fmt_ns, fmt_ratio, plural


def table(rows: Sequence[Sequence[str]], header: Sequence[str], left: int = 1) -> list[str]:
    """Aligned columns: the first `left` columns left-aligned, the rest right-aligned."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    out = []
    for r in [header, *rows]:
        cells = [str(c).ljust(w) if i < left else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths))]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def _flow_cells(f: Flow, modelled: bool) -> list[str]:
    cells = [str(f.count), fmt_bytes(f.nbytes) if f.nbytes else "-", fmt_ns(f.ns)]
    if modelled:
        cells.append(fmt_ns(f.modelled_ns))
    return cells


def header_lines(run: Run, path: str) -> list[str]:
    m = run.meta
    target = " ".join(m.argv) or "(in-process recording)"
    ended = {"ok": "exit 0", "exit": f"exit {m.exit_code}", "exception": f"raised, exit {m.exit_code}",
             "interrupted": f"interrupted, exit {m.exit_code}"}.get(m.outcome, m.outcome)
    when = m.started_at.replace("T", " ")[:16] + " UTC" if m.started_at else "?"
    return [
        f"trace    {path}",
        f"target   {target} ({ended})",
        f"backend  {m.backend} ({m.device}); mode {m.mode}; {when}"
        + ("" if m.fingerprints else "; no fingerprints"),
    ]


#: sources that record any program's CUDA or HIP calls: their programs have no offload_core regions unless they say so
FOREIGN_SOURCES = frozenset({"cupti", "rocprof"})


def regions_text(run: Run, regions: int) -> str:
    """` in 2 region(s)`; nothing for a CUPTI or rocprof trace without regions (a PyTorch program has none to have)."""
    if not regions and run.meta.backend in FOREIGN_SOURCES:
        return ""
    return f" in {regions} region(s)"


def link_note(link: Link | None, run: Run) -> list[str]:
    if link is None:
        return []
    why = "the NumPy backend's copies are host memcpys, so" if run.meta.backend == "numpy" else "on request,"
    return [f"modelled costs: {why} the 'modelled' columns show what the recorded copies would cost on "
            f"the {link.name} link ({link.source or 'profile'})"]


def totals_lines(t: Totals, modelled: bool, label: str = "", sync_modelled: bool = True) -> list[str]:
    head, rows = totals_rows(t, modelled, label, sync_modelled)
    return table(rows, head)


def totals_rows(t: Totals, modelled: bool, label: str = "", sync_modelled: bool = True
                ) -> tuple[list[str], list[list[str]]]:
    """The totals table as (header, rows) of formatted cells, for the text and the HTML report."""
    head = ["", "count", "bytes", "measured"] + ([f"modelled{label}"] if modelled else [])
    rows = [
        ["H2D copies", *_flow_cells(t.h2d, modelled)],
        ["D2H copies", *_flow_cells(t.d2h, modelled)],
        ["launches", str(t.launches.count), "-", fmt_ns(t.launches.ns)] + ([fmt_ns(t.launches.modelled_ns)] if modelled else []),
        ["syncs", str(t.syncs.count), "-", fmt_ns(t.syncs.ns)]
        + ([fmt_ns(t.syncs.modelled_ns) if sync_modelled else "-"] if modelled else []),
        ["allocations", str(t.allocs.count), fmt_bytes(t.allocs.nbytes) if t.allocs.nbytes else "-", fmt_ns(t.allocs.ns)]
        + (["-"] if modelled else []),
    ]
    return head, rows


def sites_lines(sites: Sequence[SiteSummary], cwd: str, top: int, modelled: bool) -> list[str]:
    chosen = [s for s in sites if s.copies.count][:top]
    if not chosen:
        return ["  (no copies)"]
    head = ["#", "call site", "H2D", "D2H", "copy time"] + (["modelled"] if modelled else [])
    rows = []
    for n, s in enumerate(chosen, 1):
        rows.append([str(n), site_label(s.site, cwd),
                     f"{s.h2d.count} / {fmt_bytes(s.h2d.nbytes)}" if s.h2d.count else "-",
                     f"{s.d2h.count} / {fmt_bytes(s.d2h.nbytes)}" if s.d2h.count else "-",
                     fmt_ns(s.copies.ns)] + ([fmt_ns(s.copies.modelled_ns)] if modelled else []))
    lines = table(rows, head, left=2)
    texts = [s.site.text for s in chosen if s.site is not None]
    if texts:
        lines.append("")
        lines += [f"  {n}. {s.site.text}" for n, s in enumerate(chosen, 1) if s.site is not None and s.site.text]
    return lines


def finding_line(f: Finding, cwd: str) -> str:
    where = "<unknown>" if f.site is None else f"{relative_file(f.site.file, cwd)}:{f.site.line}:{f.site.column}"
    static = f" (static: {', '.join(f.related)})" if f.related else ""
    ranks = f" ({ranks_text(f.ranks)})" if f.ranks else ""
    return f"{where}: {f.code} [{f.severity}]{ranks} {f.fix}, {saving_text(f)}: {f.message}{static}"


def findings_lines(run: Run, findings: Sequence[Finding]) -> list[str]:
    lines = [f"  {finding_line(f, run.meta.cwd)}" for f in findings] or ["  none"]
    if not run.meta.fingerprints:
        # OFF508 follows contents across the ranks of a job: only a job misses it
        skipped = [code for code in needs_fingerprints if code != "OFF508" or job_of(run) is not None]
        named = " and ".join([", ".join(skipped[:-1]), skipped[-1]] if len(skipped) > 1 else skipped)
        lines.append(f"  note: {named} compare copied contents and were skipped: "
                     "this run was recorded with --no-fingerprints")
    return lines


def verdict_line(v: Verdict | None, cwd: str, name: str = "") -> str:
    """`verdict  host-bound: device busy 13%, ...` (with the run's name when there are several)."""
    label = f"{name}: " if name else ""
    return f"verdict  {label}" + (v.summary(cwd) if v is not None else "no device work recorded")


def verdict_json(v: Verdict | None) -> dict[str, Any] | None:
    """The verdict's figures for JSON: its fields, the shares and the evidence sentence."""
    if v is None:
        return None
    return {**asdict(v), "idle_ns": v.idle_ns, "busy_share": v.busy_share, "copy_share": v.share(v.copy_ns),
            "sync_share": v.share(v.sync_ns), "kernel_share": v.share(v.kernel_ns), "evidence": v.evidence(),
            "remedy": v.remedy()}


@dataclass(frozen=True)
class RankTable:
    """A job's rank table, formatted: a row per rank, then the job's; the lines under it (slowest rank, missing ranks)."""

    title: str
    head: list[str]
    rows: list[list[str]]
    notes: list[str]


def rank_table(run: Run, link: Link | None) -> RankTable | None:
    """The rank table of a distributed job (text and HTML reports show it); None for a run of no ranks."""
    job = job_of(run)
    if job is None:
        return None
    s = summarise(job, link)
    head = ["rank", "device", "H2D", "D2H", "launches", "syncs", "collectives", "busy", "in collectives", "last end"]
    rows = []
    for r in s.ranks:
        t, met = r.totals, r.collectives
        rows.append([str(r.rank), r.device or "-", f"{t.h2d.count} / {fmt_bytes(t.h2d.nbytes)}",
                     f"{t.d2h.count} / {fmt_bytes(t.d2h.nbytes)}", str(t.launches.count), str(t.syncs.count),
                     f"{met.count} / {fmt_bytes(met.nbytes)}", fmt_ns(r.busy_ns), fmt_ns(met.ns), fmt_ns(r.end_ns)])
    j = s.job
    met = s.collectives
    rows.append(["job", "-", f"{j.h2d.count} / {fmt_bytes(j.h2d.nbytes)}", f"{j.d2h.count} / {fmt_bytes(j.d2h.nbytes)}",
                 str(j.launches.count), str(j.syncs.count), f"{met.count} / {fmt_bytes(met.nbytes)}",
                 fmt_ns(s.busy_ns), fmt_ns(met.ns), fmt_ns(j.wall_ns)])
    notes = [slowest_line(s)]
    if s.missing:
        notes.append(f"  no trace of {ranks_text(s.missing)}: not recorded (killed before recording, or never started)")
    return RankTable(f"ranks ({len(s.ranks)} of world size {s.world_size})", head, rows, notes)


def ranks_lines(run: Run, link: Link | None) -> list[str]:
    """A job's rank table (a row per rank, then the job), the slowest rank named; nothing for a run of no ranks."""
    t = rank_table(run, link)
    return [] if t is None else ["", t.title, *table(t.rows, t.head), *t.notes]


def render_report(run: Run, findings: Sequence[Finding], *, path: str, link: Link | None = None, top: int = 10,
                  judged: Verdict | None = None) -> str:
    """`report`'s text; `judged` is the run's verdict (computed here when not given)."""
    modelled = link is not None
    t = totals(run, link)
    lines = header_lines(run, path)
    v = judged if judged is not None else verdict(run)
    lines.append(verdict_line(v, run.meta.cwd))
    if v is not None:
        lines.append(f"helps    {v.remedy()}")
    share = f" ({100 * t.copy_share:.1f}% of wall)" if t.wall_ns else ""
    lines.append(f"wall     {fmt_ns(t.wall_ns)}; copies {fmt_ns(t.copies.ns)}{share}; "
                 f"{plural(t.launches.count, 'launch', 'launches')}{regions_text(run, t.regions)}")
    lines += link_note(link, run)
    lines += ["", "totals", *totals_lines(t, modelled, f" ({link.name})" if link else "",
                                          link is not None and link.sync_us is not None)]
    lines += ranks_lines(run, link)
    lines += ["", "top call sites by copy time", *sites_lines(by_site(run, link), run.meta.cwd, top, modelled)]
    lines += ["", f"findings ({len(findings)}), largest expected saving first", *findings_lines(run, findings)]
    return "\n".join(lines) + "\n"


def render_report_json(run: Run, findings: Sequence[Finding], *, path: str, link: Link | None = None,
                       top: int = 10, judged: Verdict | None = None) -> str:
    """`report --format json`: the trace's meta, the verdict, the link, totals, the top call sites and the findings."""
    doc = {"trace": path, "meta": asdict(run.meta),
           "verdict": verdict_json(judged if judged is not None else verdict(run)),
           "link": None if link is None else asdict(link),
           "totals": asdict(totals(run, link)), "sites": [asdict(s) for s in by_site(run, link)[:top]],
           "findings": [asdict(f) for f in findings]}
    job = job_of(run)
    if job is not None:
        s = summarise(job, link)
        doc["job"] = {"world_size": s.world_size, "missing": list(s.missing), "ranks": [asdict(r) for r in s.ranks],
                      "slowest": None if s.slowest is None else s.slowest.rank, "imbalance": s.imbalance()}
    return json.dumps(doc, indent=1) + "\n"


def render_compare(
    naive: Run, batched: Run, naive_findings: Sequence[Finding], batched_findings: Sequence[Finding],
    *, paths: tuple[str, str], link: Link | None = None, top: int = 10,
    verdicts: tuple[Verdict | None, Verdict | None] | None = None,
) -> str:
    """`compare`'s text; `verdicts` are the runs' (computed here when not given)."""
    a, b = totals(naive, link), totals(batched, link)
    first, second = run_names((naive, batched))
    names = (first, second)
    judged = verdicts if verdicts is not None else (verdict(naive), verdict(batched))
    lines = [f"compare  {paths[0]} ({names[0]})  vs  {paths[1]} ({names[1]})",
             f"target   {naive.label}" + ("" if naive.label == batched.label else f"  vs  {batched.label}")]
    lines += [verdict_line(v, run.meta.cwd, name) for v, run, name in zip(judged, (naive, batched), names)]
    lines += link_note(link, naive)
    lines += ["", *table(compare_rows(a, b, len(naive_findings), len(batched_findings), link), ["", *names, "ratio"])]
    for name, run in ((names[0], naive), (names[1], batched)):
        ranked = ranks_lines(run, link)
        if ranked:
            ranked[1] = f"{ranked[1]}, {name}"
        lines += ranked
    lines += ["", "call sites with copies", *_compare_sites(naive, batched, link, top, names)]
    for name, run, found in ((names[0], naive, naive_findings), (names[1], batched, batched_findings)):
        lines += ["", f"findings, {name} ({len(found)})", *findings_lines(run, found)]
    return "\n".join(lines) + "\n"


def compare_rows(a: Totals, b: Totals, findings_a: int, findings_b: int, link: Link | None) -> list[list[str]]:
    """The comparison's rows (what, first run, second run, ratio), formatted, for the text and the HTML report."""
    rows: list[list[str]] = []

    def row(name: str, x: float, y: float, fmt: Any) -> None:
        rows.append([name, fmt(x), fmt(y), fmt_ratio(x, y)])

    row("wall time", a.wall_ns, b.wall_ns, fmt_ns)
    row("copy time", a.copies.ns, b.copies.ns, fmt_ns)
    if link is not None:
        row(f"copy time modelled ({link.name})", a.copies.modelled_ns or 0, b.copies.modelled_ns or 0, fmt_ns)
    row("kernel time", a.launches.ns, b.launches.ns, fmt_ns)
    row("H2D copies", a.h2d.count, b.h2d.count, str)
    row("H2D bytes", a.h2d.nbytes, b.h2d.nbytes, fmt_bytes)
    row("D2H copies", a.d2h.count, b.d2h.count, str)
    row("D2H bytes", a.d2h.nbytes, b.d2h.nbytes, fmt_bytes)
    row("launches", a.launches.count, b.launches.count, str)
    row("syncs", a.syncs.count, b.syncs.count, str)
    row("findings", findings_a, findings_b, str)
    return rows


def _compare_sites(a: Run, b: Run, link: Link | None, top: int, names: tuple[str, str]) -> list[str]:
    rows = [[site_label(shown.site, cwd), f"{fa.count} / {fmt_bytes(fa.nbytes)}", f"{fb.count} / {fmt_bytes(fb.nbytes)}",
             fmt_ns(fa.ns), fmt_ns(fb.ns)] for shown, cwd, fa, fb in compare_sites(a, b, link, top)]
    if not rows:
        return ["  (no copies)"]
    return table(rows, ["call site", f"copies ({names[0]})", f"copies ({names[1]})", f"time ({names[0]})", f"time ({names[1]})"])


def compare_sites(a: Run, b: Run, link: Link | None, top: int) -> list[tuple[SiteSummary, str, Flow, Flow]]:
    """The call sites with copies in either run, matched by file, function and line text, the first run's order first.

    Each is (the site's summary in the run that has it, that run's folder,
    the copies of the first run, those of the second).
    """
    def key(s: SiteSummary, cwd: str) -> tuple[str, str, str]:
        if s.site is None:
            return ("", "", "")
        return (relative_file(s.site.file, cwd), s.site.function, s.site.text)

    first = {key(s, a.meta.cwd): s for s in by_site(a, link) if s.copies.count}
    second = {key(s, b.meta.cwd): s for s in by_site(b, link) if s.copies.count}
    order = list(first) + [k for k in second if k not in first]
    out = []
    for k in order[:top]:
        s, t = first.get(k), second.get(k)
        shown = s if s is not None else t
        assert shown is not None
        out.append((shown, a.meta.cwd if s is not None else b.meta.cwd, s.copies if s is not None else Flow(),
                    t.copies if t is not None else Flow()))
    return out


def render_compare_json(
    naive: Run, batched: Run, naive_findings: Sequence[Finding], batched_findings: Sequence[Finding],
    *, paths: tuple[str, str], link: Link | None = None, top: int = 10,
    verdicts: tuple[Verdict | None, Verdict | None] | None = None,
) -> str:
    """`compare --format json`: each run (meta, verdict, totals, findings), the ratios of the text table, the top
    call sites."""
    a, b = totals(naive, link), totals(batched, link)
    names = run_names((naive, batched))
    judged = verdicts if verdicts is not None else (verdict(naive), verdict(batched))

    def ratio(x: float | None, y: float | None) -> float | None:
        return None if x is None or y is None or y == 0 else x / y

    ratios = {
        "wall": ratio(a.wall_ns, b.wall_ns), "copy": ratio(a.copies.ns, b.copies.ns),
        "copy_modelled": ratio(a.copies.modelled_ns, b.copies.modelled_ns), "kernel": ratio(a.launches.ns, b.launches.ns),
        "h2d_count": ratio(a.h2d.count, b.h2d.count), "h2d_bytes": ratio(a.h2d.nbytes, b.h2d.nbytes),
        "d2h_count": ratio(a.d2h.count, b.d2h.count), "d2h_bytes": ratio(a.d2h.nbytes, b.d2h.nbytes),
        "launches": ratio(a.launches.count, b.launches.count), "syncs": ratio(a.syncs.count, b.syncs.count),
    }
    runs = [{"trace": path, "name": name, "meta": asdict(run.meta), "verdict": verdict_json(v), "totals": asdict(t),
             "sites": [asdict(s) for s in by_site(run, link)[:top]], "findings": [asdict(f) for f in found]}
            for path, name, run, v, t, found in zip(paths, names, (naive, batched), judged, (a, b),
                                                   (naive_findings, batched_findings))]
    doc = {"link": None if link is None else asdict(link), "runs": runs, "ratios": ratios}
    return json.dumps(doc, indent=1) + "\n"


# ------------------------------------------------------- what the TUI would open on
def render_runs(runs: Sequence[Run], paths: Sequence[str], link: Link | None) -> str:
    """What the TUI would open on, as text: `compare` and the headline's sentences for two runs, `report` for one."""
    if len(runs) == 1:
        findings, judged = analyse(runs[0], link)
        return render_report(runs[0], findings, path=paths[0], link=link, judged=judged)
    (fa, va), (fb, vb) = analyse(runs[0], link), analyse(runs[1], link)
    text = render_compare(runs[0], runs[1], fa, fb, paths=(paths[0], paths[1]), link=link, verdicts=(va, vb))
    named = [(name, totals(run, link)) for name, run in zip(run_names(runs), runs)]
    clause = modelled_clause(named, link)
    measured = "measured: " + ratio_sentence(named, [run.meta.wall_samples_ns for run in runs])
    return text + "\n" + exact_sentence(named) + "\n" + (clause + "\n" if clause else "") + measured + "\n"
