"""The Findings view's detail pane and the source screen that Enter opens.

A runtime finding is only useful with the code it blames, so the pane
under the findings list shows, for the highlighted finding: its message,
what its fix would save and what it cost, the static rules that would have caught it before the code
ran (named and summarised from the catalog), and the source line with two
lines of context. Enter opens the whole file on its own screen, scrolled
to the line and highlighted; Escape comes back.

Sources are looked up through `Trace.source_file` (the recorded path,
then relative to the run's, the trace's and the current folder); a trace
whose sources are not on this machine still shows the line's text, which
the recorder stored.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from ..analysis.detectors import Finding
from ..analysis.ranks import ranks_text
from ..phrases import saving_text
from ..units import fmt_bytes, fmt_ns
from .session import Trace

CONTEXT = 2


@lru_cache(maxsize=64)
def source_lines(path: Path) -> tuple[str, ...]:
    try:
        return tuple(path.read_text(encoding="utf-8", errors="replace").splitlines())
    except OSError:
        return ()


@lru_cache(maxsize=1)
def _catalog_rules() -> dict[str, tuple[str, str]]:
    """Rule id -> (name, summary), or nothing when the catalog cannot be read (the pane says so)."""
    from offload_core.catalog import CatalogError, load_catalog

    try:
        return {code: (r.name, r.summary) for code, r in load_catalog().rules.items()}
    except CatalogError:
        return {}


def context_lines(trace: Trace, finding: Finding, context: int = CONTEXT) -> list[tuple[int, str]]:
    """(line number, text) around the finding's line, from the file or, failing that, the recorded text."""
    site = finding.site
    if site is None:
        return []
    path = trace.source_file(site)
    lines = source_lines(path) if path is not None else ()
    if not lines or site.line > len(lines):
        return [(site.line, site.text)] if site.text else []
    lo, hi = max(site.line - context, 1), min(site.line + context, len(lines))
    return [(n, lines[n - 1]) for n in range(lo, hi + 1)]


def describe(trace: Trace, finding: Finding, paired: bool) -> RenderableType:
    """The detail pane's content for one finding."""
    head = Text()
    if paired:
        head.append(f"{trace.name}: ", style="bold")
    head.append(f"{finding.code} {finding.name}", style="bold")
    head.append(f" [{finding.severity}]  ", style="yellow" if finding.severity == "warning" else "cyan")
    if finding.ranks:
        head.append(f"{ranks_text(finding.ranks)}  ", style="bold")
    head.append(trace.site_label(finding.site, column=True))
    body = Text()
    body.append(f"fix: {finding.fix}, {saving_text(finding)} of the wall time\n", style="bold")
    cost = f"{finding.count:,} times, {fmt_bytes(finding.nbytes)}; lost {fmt_ns(finding.lost_ns)} measured"
    if finding.modelled_lost_ns is not None and finding.link:
        cost += f", {fmt_ns(finding.modelled_lost_ns)} modelled on {finding.link}"
    body.append(cost + "\n", style="bold")
    rules = _catalog_rules()
    if finding.related:
        for rule in finding.related:
            name, summary = rules.get(rule, ("", "not in this catalog"))
            body.append("static: ", style="bold")
            body.append(f"{rule} {name}: {summary}\n")
    else:
        body.append("static: no static rule catches this pattern\n", style="dim")
    body.append(finding.message)
    source = Text()
    ctx = context_lines(trace, finding)
    width = len(str(ctx[-1][0])) if ctx else 1
    for n, line in ctx:
        mark = n == (finding.site.line if finding.site else -1)
        source.append(f"{'▶' if mark else ' '} {n:>{width}} │ ", style="bold" if mark else "dim")
        source.append(line.rstrip() + "\n", style="bold reverse" if mark else "")
    if not ctx:
        source.append("(no source line recorded)\n", style="dim")
    source.append("Enter opens the file at this line\n", style="dim italic")
    return Group(head, source, body)


class SourceScreen(Screen[None]):
    """A source file scrolled to a line, with the line highlighted."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back")]

    def __init__(self, trace: Trace, finding: Finding) -> None:
        super().__init__()
        self.trace = trace
        self.finding = finding
        site = finding.site
        self.path = trace.source_file(site) if site is not None else None

    def compose(self) -> ComposeResult:
        site = self.finding.site
        where = self.trace.site_label(site)
        yield Static(Text(f" {where} · {self.finding.code} {self.finding.name}", style="bold"), id="source-title")
        with VerticalScroll(id="source-scroll"):
            yield Static(self._body(), id="source-body")
        yield Footer()

    def _body(self) -> RenderableType:
        site = self.finding.site
        lines = source_lines(self.path) if self.path is not None else ()
        if site is None:
            return Text("this finding has no call site", style="dim")
        if not lines:
            return Text(f"source not found on this machine: {site.file}\n\n{site.line}: {site.text}")
        return Syntax("\n".join(lines), "python", line_numbers=True, highlight_lines={site.line},
                      theme="ansi_dark", word_wrap=False)

    def on_mount(self) -> None:
        site = self.finding.site
        if site is not None:
            scroll = self.query_one("#source-scroll", VerticalScroll)
            self.call_after_refresh(lambda: scroll.scroll_to(y=max(site.line - 1 - scroll.size.height // 2, 0),
                                                             animate=False))
