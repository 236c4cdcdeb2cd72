"""The phrases every view of a run says the same way: the text report, the HTML page, the TUI, the gate, the export.

Call-site labels (`site_label`), the names runs go by (`run_names`), a
finding's saving (`saving_text`), ratios and shares (`times`,
`percent`), the headline's sentences (`exact_sentence`,
`ratio_sentence`, `modelled_clause`) and a job's slowest rank
(`slowest_line`). They sit in a room of their own, below the outputs
and the TUI, so that both draw them from one place and neither imports
the other: `offload-prof tui --no-tui` prints the sentences the TUI
shows, word for word. They read the analyses' records and compute
nothing from a `Run` themselves beyond its names.
"""

from __future__ import annotations

from typing import Sequence

from .analysis.detectors import Finding
from .analysis.ranks import JobSummary
from .analysis.summary import Totals
from .trace.model import Run
from .trace.records import Link, Site, relative_file
from .units import fmt_bytes, fmt_ns, plural


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


def slowest_line(s: JobSummary) -> str:
    """`slowest  rank 1: busy 12.0 ms, 2.00x rank 0's` (busy: copies, kernels and syncs; collectives left out)."""
    slow, fast = s.slowest, s.fastest
    if slow is None:
        return "slowest  none: no rank recorded copies, kernels or syncs"
    ratio = s.imbalance()
    than = "" if ratio is None or fast is None else f", {ratio:.2f}x rank {fast.rank}'s"
    return f"slowest  rank {slow.rank}: busy {fmt_ns(slow.busy_ns)}{than} (copies, kernels and syncs; time in collectives left out)"


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
