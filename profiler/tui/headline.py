"""The headline at the top of the TUI: each run's wall, copy and kernel time, copies each way, and the ratio.

It is what a user opened the tool for, so it is built to fit any width:
columns have priorities and the least important go first when the
terminal is narrow (80 columns keep wall, copy and kernel time and the
copies each way). Below the columns it leads with what is exact on any
machine, the copies and bytes ("batched: 67.6x fewer copies ..."),
then the modelled link time where a link applies, then what was measured
("measured: batched is 139x faster ..."; with the range over repeats when
the runs were recorded several times), each sentence whole. On the NumPy
backend copies are host memcpys, so a modelled copy time is a separate,
labelled column and clause, never mixed into measured figures. The
sentences are `profiler.phrases`', which the text mode of `tui` and
`demo` prints too; this module lays them out. The last line gives
each run's verdict (what bounded it, with its deciding figure) once the
detectors have judged the runs.

Built as rich `Text` (no Textual), so it is tested as plain text.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from typing import Sequence

from rich.text import Text

from ..analysis.summary import Totals
from ..phrases import exact_sentence, modelled_clause, percent, ratio_sentence
from ..units import fmt_bytes, fmt_ns
from .session import Session, Trace


@dataclass(frozen=True)
class _Col:
    title: str
    cells: tuple[str, ...]
    priority: int
    align: str = "right"

    @property
    def width(self) -> int:
        return max(len(self.title), *(len(c) for c in self.cells))


def count(n: int) -> str:
    return f"{n:,}"


def named_totals(session: Session) -> list[tuple[str, Totals]]:
    return [(t.name, t.totals) for t in session.traces]


def _columns(session: Session) -> list[_Col]:
    ts: tuple[Trace, ...] = session.traces
    tot = [t.totals for t in ts]
    cols = [
        _Col("", tuple(t.name for t in ts), 0, "left"),
        _Col("wall", tuple(fmt_ns(x.wall_ns) for x in tot), 0),
        _Col("copies", tuple(fmt_ns(x.copies.ns) for x in tot), 0),
        _Col("", tuple(percent(x.copies.ns, x.wall_ns) for x in tot), 3),
        _Col("kernels", tuple(fmt_ns(x.launches.ns) for x in tot), 1),
        _Col("H2D", tuple(count(x.h2d.count) for x in tot), 1),
        _Col("", tuple(fmt_bytes(x.h2d.nbytes) for x in tot), 2),
        _Col("D2H", tuple(count(x.d2h.count) for x in tot), 1),
        _Col("", tuple(fmt_bytes(x.d2h.nbytes) for x in tot), 2),
        _Col("launches", tuple(count(x.launches.count) for x in tot), 5),
        _Col("syncs", tuple(count(x.syncs.count) for x in tot), 6),
    ]
    if session.link is not None:
        cols.insert(4, _Col(f"copies ({session.link.name})", tuple(fmt_ns(x.copies.modelled_ns) for x in tot), 4))
    return cols


def fit(cols: list[_Col], width: int, gap: int = 2) -> list[_Col]:
    """The columns that fit `width`, dropping the least important first, in their own order."""
    kept = list(cols)
    while len(kept) > 1 and sum(c.width for c in kept) + gap * (len(kept) - 1) > width:
        worst = max(range(len(kept)), key=lambda i: (kept[i].priority, i))
        kept.pop(worst)
    return kept


def headline(session: Session, width: int) -> Text:
    """The whole headline for a terminal `width` columns wide."""
    cols = fit(_columns(session), width)
    widths = [c.width for c in cols]
    out = Text(no_wrap=True, overflow="ellipsis")
    header = "  ".join(c.title.ljust(w) if c.align == "left" else c.title.rjust(w) for c, w in zip(cols, widths))
    out.append(header.rstrip() + "\n", style="bold")
    for row, trace in enumerate(session.traces):
        cells = [c.cells[row].ljust(w) if c.align == "left" else c.cells[row].rjust(w) for c, w in zip(cols, widths)]
        out.append(cells[0], style=f"bold {'red' if row == 0 and session.paired else 'green'}")
        out.append(("  " + "  ".join(cells[1:])).rstrip() + "\n")
    named = named_totals(session)
    exact = exact_sentence(named)
    clause = modelled_clause(named, session.link)
    measured = "measured: " + ratio_sentence(named, [t.run.meta.wall_samples_ns for t in session.traces])
    if clause and len(exact) + 2 + len(clause) <= width:  # one line when the two fit together
        out.append(exact, style="bold")
        out.append("; " + clause + "\n", style="dim")
    else:
        out.append(_fill(exact, width) + "\n", style="bold")
        if clause:
            out.append(_fill(clause, width) + "\n", style="dim")
    out.append(_fill(measured, width) + "\n")
    out.append(_fill(verdict_text(session), width))
    return out


def verdict_text(session: Session) -> str:
    """`verdict: naive transfer-bound (copies 73%) · batched host-bound (idle 51%)`; one run's with the line
    behind its idle time: `verdict: host-bound (idle 57%); most before train.py:13 (1.5 ms, 5 times)`."""
    if session.verdicts is None:
        return "verdict: judging the run…" if len(session.traces) == 1 else "verdict: judging the runs…"
    parts = []
    for trace, v in zip(session.traces, session.verdicts):
        name = f"{trace.name} " if session.paired else ""
        idle = v.idle_text(trace.run.meta.cwd) if v is not None and len(session.traces) == 1 else ""
        parts.append(name + (v.short() if v is not None else "no device work") + (f"; {idle}" if idle else ""))
    return "verdict: " + " · ".join(parts)


def _fill(sentence: str, width: int) -> str:
    """The sentence whole, wrapped at spaces where the terminal is narrower than it."""
    return "\n".join(textwrap.wrap(sentence, width, break_long_words=False)) or sentence
