"""Text reports: `offload-prof report TRACE`, `offload-prof compare NAIVE BATCHED`, and the headline sentence.

Renderers only read a `Run` (through `profiler.analysis.summary`), the
findings of `profiler.analysis.detectors` and the run's verdict
(`profiler.analysis.verdict`, first thing after the header: what bounded
the run, so the findings below can be read against it); they compute
nothing the TUI or a JSON consumer could not compute the same way.
Findings are listed by expected saving, the largest first, with the
saving up front. Measured and modelled
figures are never mixed: modelled columns are headed with the link
profile's name and a note says where the figures come from. The names of
runs, call-site labels and the ratio sentence ("batched is 139x faster;
99% of the naive run was copies") are the TUI's too, so they live here
and the TUI draws them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Sequence

from ..analysis.detectors import Finding, detect, needs_fingerprints
from ..analysis.ranks import JobSummary, job_findings, ranks_text, summarise
from ..analysis.replay import Timeline
from ..analysis.summary import Flow, SiteSummary, Totals, by_site, totals
from ..analysis.verdict import Verdict, verdict
from ..trace.job import job_of
from ..trace.model import Run
from ..trace.records import Link, Site, relative_file
from ..units import fmt_bytes, fmt_ns, fmt_ratio, plural


def table(rows: Sequence[Sequence[str]], header: Sequence[str], left: int = 1) -> list[str]:
    """Aligned columns: the first `left` columns left-aligned, the rest right-aligned."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    out = []
    for r in [header, *rows]:
        cells = [str(c).ljust(w) if i < left else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths))]
        out.append("  " + "  ".join(cells).rstrip())
    return out


def site_label(site: Site | None, cwd: str, column: bool = False) -> str:
    """`file:line in function` (`file:line:column in function`), the file relative to the run's folder."""
    if site is None:
        return "(no call site)"
    where = f"{site.line}:{site.column}" if column else f"{site.line}"
    return f"{relative_file(site.file, cwd)}:{where} in {site.function}"


def run_names(runs: Sequence[Run]) -> tuple[str, ...]:
    """Their modes when the modes differ (naive, batched); else first, second."""
    modes = [r.meta.mode or "run" for r in runs]
    if len(runs) == 1:
        return (modes[0],)
    if len(set(modes)) == len(modes):
        return tuple(modes)
    return ("first", "second")[: len(runs)]


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


def saving_text(f: Finding) -> str:
    """`saves 11.3 ms (61%)`: the finding's expected saving and its share of the wall time.

    A saving of nothing beside time lost says why instead (`Finding.unsaved`): `saves 0 ns` next to
    `16 ms lost` would read as a contradiction.
    """
    if f.expected_saving_ns is None:
        return "saving not measurable on this backend"
    if f.unsaved and not f.expected_saving_ns:
        return f"saves nothing ({f.unsaved})"
    share = f.saving_share
    return f"saves {fmt_ns(f.expected_saving_ns)}" + ("" if share is None else f" ({_share_text(share)})")


def _share_text(share: float) -> str:
    """`61%`, `0.4%`, `<0.1%`."""
    if share >= 0.095:
        return f"{100 * share:.0f}%"
    if share >= 0.001 or share == 0:
        return f"{100 * share:.1f}%"
    return "<0.1%"


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


def analyse(run: Run, link: Link | None) -> tuple[list[Finding], Verdict | None]:
    """The findings and the verdict of `run`, from one inference of its timeline.

    For a distributed job the findings are its ranks', each naming its
    rank(s) (`profiler.analysis.ranks.job_findings`), and the job's own
    (a rule that looks across ranks).
    """
    timeline = Timeline.of(run)
    job = job_of(run)
    if job is None:
        return detect(run, link=link, timeline=timeline), verdict(run, timeline)
    return job_findings(job, link), verdict(run, timeline)


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


def slowest_line(s: JobSummary) -> str:
    """`slowest  rank 1: busy 12.0 ms, 2.00x rank 0's` (busy: copies, kernels and syncs; collectives left out)."""
    slow, fast = s.slowest, s.fastest
    if slow is None:
        return "slowest  none: no rank recorded copies, kernels or syncs"
    ratio = s.imbalance()
    than = "" if ratio is None or fast is None else f", {ratio:.2f}x rank {fast.rank}'s"
    return f"slowest  rank {slow.rank}: busy {fmt_ns(slow.busy_ns)}{than} (copies, kernels and syncs; time in collectives left out)"


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


# ------------------------------------------------------- the headline sentence
def times(ratio: float) -> str:
    """`139x`, `23.7x`, `4.21x`: three significant figures without exponents."""
    if ratio >= 100:
        return f"{ratio:.0f}x"
    if ratio >= 10:
        return f"{ratio:.1f}x"
    return f"{ratio:.2f}x"


def percent(part: float, whole: float) -> str:
    """`73%`; never `100%` for less than the whole, `-` without a whole."""
    if whole <= 0:
        return "-"
    share = 100.0 * part / whole
    text = f"{share:.0f}%"
    return "99%" if text == "100%" and part < whole else text


Named = Sequence[tuple[str, Totals]]


def exact_sentence(runs: Named) -> str:
    """`batched: 67.6x fewer copies (17 vs 1,150), 60.6x fewer bytes (23.1 MB vs 1.4 GB)`, or `naive: 62 copies, 24.8 MB`.

    Counts and bytes are the same on every machine and every run, so the
    headline leads with them; times, which follow the machine's load, come
    after (`ratio_sentence`).
    """
    (first, a), *rest = runs
    if not rest:
        return f"{first}: {plural(a.copies.count, 'copy', 'copies')}, {fmt_bytes(a.copies.nbytes)}"
    second, b = rest[0]
    x, y = a.copies, b.copies
    if x.count == 0 and y.count == 0:
        return f"no copies in either run ({first}, {second})"
    if y.count == 0:
        return f"{second}: no copies ({first}: {plural(x.count, 'copy', 'copies')}, {fmt_bytes(x.nbytes)})"
    return (f"{second}: {_fewer(x.count, y.count, 'copies')} ({y.count:,} vs {x.count:,}), "
            f"{_fewer(x.nbytes, y.nbytes, 'bytes')} ({fmt_bytes(y.nbytes)} vs {fmt_bytes(x.nbytes)})")


def _fewer(base: int, other: int, what: str) -> str:
    if other == base:
        return f"as many {what}"
    if other == 0:
        return f"no {what}"
    if other < base:
        return f"{times(base / other)} fewer {what}"
    return f"{times(other / base)} more {what}" if base else f"more {what}"


def ratio_sentence(runs: Named, samples: Sequence[Sequence[int]] = ()) -> str:
    """`batched is 139x faster; 99% of the naive run was copies` (or the one-run form), from (name, totals).

    `samples` are the runs' wall times per repeat (`Meta.wall_samples_ns`)
    when each was recorded several times, paired by position: the ratio is
    then of the median runs, followed by how many repeats and the range of
    the per-repeat ratios, so a reader sees how much the machine moved it.
    """
    (first, a), *rest = runs
    share = percent(a.copies.ns, a.wall_ns)
    if not rest:
        return f"{share} of the {first} run was copies"
    second, b = rest[0]
    if a.wall_ns <= 0 or b.wall_ns <= 0:
        return f"{second} and {first} have no wall time to compare; {share} of the {first} run was copies"
    faster = a.wall_ns >= b.wall_ns
    if faster:
        speed = f"{second} is {times(a.wall_ns / b.wall_ns)} faster"
    else:
        speed = f"{second} is {times(b.wall_ns / a.wall_ns)} slower"
    return f"{speed}{_spread(samples, faster)}; {share} of the {first} run was copies"


def _spread(samples: Sequence[Sequence[int]], faster: bool) -> str:
    """` (median of 5 repeats, range 0.95x-1.10x)`: the same ratio repeat by repeat, lowest and highest.

    A range that straddles 1x says the difference in time is within what
    the machine's load moves it.
    """
    if len(samples) != 2 or len(samples[0]) < 2 or len(samples[0]) != len(samples[1]):
        return ""
    pairs = [(x, y) for x, y in zip(*samples) if x > 0 and y > 0]
    if len(pairs) != len(samples[0]):
        return ""
    ratios = [x / y if faster else y / x for x, y in pairs]
    return f" (median of {len(ratios)} repeats, range {times(min(ratios))}-{times(max(ratios))})"


def modelled_clause(runs: Named, link: Link | None) -> str:
    """`modelled on pcie5-x16: copies 410 ms vs 0.2 ms` where a link applies."""
    if link is None:
        return ""
    figures = " vs ".join(fmt_ns(t.copies.modelled_ns) for _, t in runs)
    return f"modelled on {link.name}: copies {figures}"


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
