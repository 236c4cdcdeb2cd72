"""The Timeline view: where each run's time went, as bars in the terminal.

Two pictures, both on one scale for the two runs unless asked otherwise
(`z`), since the point is to see the difference:

* one horizontal bar per run, its length the run's wall time, split into
  copy time, kernel time and the rest;
* per run, copy time (bottom) and kernel time (top) per launch across the
  run, launches binned into the terminal's columns (the mean per launch
  of each bin), drawn with eighth-block characters.

Bins are NumPy reductions over the session's `LaunchTable`, recomputed
only when the size or a toggle changes, so 10^6 launches draw as fast
as 10. `m` switches copy times to the modelled link where there is one.
"""

from __future__ import annotations

import numpy as np
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.reactive import reactive
from textual.widget import Widget

from ..units import fmt_ns
from .session import Session, Trace

BLOCKS = " ▁▂▃▄▅▆▇█"
COPY = "red"
KERNEL = "green"
OTHER = "grey50"


def binned(values: np.ndarray, bins: int) -> np.ndarray:
    """The mean of `values` over `bins` consecutive, near-equal slices.

    With fewer values than bins, each value spans `bins // n` columns, so
    a short run still fills the width.
    """
    n = int(values.shape[0])
    if n == 0 or bins <= 0:
        return np.zeros(0)
    if n <= bins:
        return np.repeat(values.astype(np.float64), bins // n)
    edges = (np.arange(bins) * n) // bins
    sums = np.add.reduceat(values.astype(np.float64), edges)
    counts = np.diff(np.append(edges, n))
    return sums / counts


def column_cells(copy: float, kernel: float, height: int) -> list[tuple[str, Style]]:
    """One bar, bottom cell first: `copy` and `kernel` are heights in cells (copy drawn below)."""
    out: list[tuple[str, Style]] = []
    top = copy + kernel
    for j in range(height):
        copy_cover = min(max(copy - j, 0.0), 1.0)
        total_cover = min(max(top - j, 0.0), 1.0)
        eighths = round(copy_cover * 8)
        if total_cover <= 0:
            out.append((" ", Style()))
        elif eighths >= 8:
            out.append(("█", Style(color=COPY)))
        elif eighths > 0:
            upper = KERNEL if total_cover - copy_cover >= (1 - copy_cover) / 2 else None
            out.append((BLOCKS[eighths], Style(color=COPY, bgcolor=upper)))
        else:
            level = round(total_cover * 8)
            out.append((BLOCKS[level] if level else " ", Style(color=KERNEL)))
    if height and top > 0 and out[0][0] == " ":
        # a bar too short for one eighth still shows that something ran
        out[0] = ("▁", Style(color=COPY if copy >= kernel else KERNEL))
    return out


class Timeline(Widget, can_focus=True):
    """Copy vs compute time of every run, as wall-time bars and per-launch bars."""

    BINDINGS = [
        Binding("z", "toggle_scale", "Scale", tooltip="one scale for both runs, or each its own"),
        Binding("m", "toggle_modelled", "Modelled", tooltip="copy times measured, or modelled on the link"),
    ]

    shared_scale: reactive[bool] = reactive(True)
    modelled: reactive[bool] = reactive(False)

    def __init__(self, session: Session, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.session = session

    def action_toggle_scale(self) -> None:
        self.shared_scale = not self.shared_scale

    def action_toggle_modelled(self) -> None:
        if self.session.link is None:
            self.notify("no link profile: copy times are measured only", severity="warning")
            return
        self.modelled = not self.modelled

    def _copy_ns(self, t: Trace) -> np.ndarray:
        modelled = t.launches.copy_modelled
        return modelled if self.modelled and modelled is not None else t.launches.copy_ns

    def render(self) -> Text:
        width, height = self.content_size.width, self.content_size.height
        out = Text(no_wrap=True, overflow="crop")
        traces = self.session.traces
        label_w = max(len(t.name) for t in traces) + 1
        source = f"modelled on {self.session.link.name}" if self.modelled and self.session.link else "measured"
        out.append("■ copy", Style(color=COPY))
        out.append("  ")
        out.append("■ kernel", Style(color=KERNEL))
        out.append("  ")
        out.append("■ other", Style(color=OTHER))
        out.append(f"   copy times {source}; {'one scale' if self.shared_scale else 'each run its own scale'} (z)\n",
                   Style(dim=True))
        self._wall_bars(out, traces, width, label_w)
        rest = height - 2 - len(traces)
        per_run = rest // len(traces)
        if per_run < 4 or width < label_w + 10:
            return out
        bar_h = per_run - 2
        bins = width - label_w
        data = []
        for t in traces:
            copy, kernel = binned(self._copy_ns(t), bins), binned(t.launches.kernel_ns, bins)
            data.append((copy, kernel))
        peaks = [float((c + k).max(initial=0.0)) for c, k in data]
        for t, (copy, kernel), peak in zip(traces, data, peaks):
            scale = max(peaks) if self.shared_scale else peak
            self._launch_bars(out, t, copy, kernel, scale, bar_h, width, label_w)
        return out

    def _wall_bars(self, out: Text, traces: tuple[Trace, ...], width: int, label_w: int) -> None:
        longest = max(t.totals.wall_ns for t in traces) or 1
        room = max(width - label_w - 30, 10)
        for t in traces:
            tot = t.totals
            wall = tot.wall_ns
            copy = (tot.copies.modelled_ns or 0) if self.modelled and self.session.link else tot.copies.ns
            kernel = tot.launches.ns
            scale = longest if self.shared_scale else (wall or 1)
            cells = round(room * wall / scale)
            c = min(round(room * copy / scale), cells) if copy <= wall else cells
            k = min(round(room * kernel / scale), cells - c)
            out.append(t.name.ljust(label_w), Style(bold=True))
            out.append("█" * c, Style(color=COPY))
            out.append("█" * k, Style(color=KERNEL))
            out.append("█" * max(cells - c - k, 0), Style(color=OTHER))
            share = f"{100 * copy / wall:.0f}%" if wall else "-"
            note = f" wall {fmt_ns(wall)}, copies {share}" + (" (more than the wall: modelled)" if copy > wall else "")
            out.append(note + "\n", Style(dim=True))

    def _launch_bars(self, out: Text, t: Trace, copy: np.ndarray, kernel: np.ndarray, scale: float,
                     height: int, width: int, label_w: int) -> None:
        n = len(t.launches)
        out.append(f"{t.name}: copy and kernel time per launch, {n:,} launches", Style(bold=True))
        out.append(f"  (top {fmt_ns(scale)} per launch)\n" if n else "\n", Style(dim=True))
        unit = height / scale if scale > 0 else 0.0
        columns = [column_cells(float(c) * unit, float(k) * unit, height) for c, k in zip(copy, kernel)]
        for j in reversed(range(height)):
            out.append(" " * label_w)
            for col in columns:
                ch, style = col[j]
                out.append(ch, style)
            out.append("\n")
        last = f"{max(n - 1, 0):,}"
        axis = "0".ljust(max(len(columns) - len(last), 1)) + last if n else "(no launches)"
        out.append(" " * label_w + axis + "\n", Style(dim=True))
