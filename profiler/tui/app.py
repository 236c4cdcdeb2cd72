"""The offload-prof TUI: the headline, five views (six for a job), filtering, sorting, help and the command palette.

The app is a thin shell over a `Session` (data computed once) and the
view widgets: `GridView` for the tables, `Timeline` for the bars.
A distributed job (a trace of several torchrun ranks) adds a Ranks view:
a row per rank and one for the job, the slowest rank named below; Enter
on a rank keeps that rank's findings in the Findings view (Esc there
shows them all again). A program run on its own has no Ranks view, and
its key does nothing.
Every view is reachable by a number key, by Tab, and from the command
palette (Ctrl+P), which also lists a "sort by" command per column of the
view in front. `/` filters the view in front (each view keeps its own
filter), `s` sorts by the highlighted column, `?` lists every binding,
`q` quits.

Findings need the detectors, which walk every record; for a large trace
(more than `BACKGROUND_RECORDS`) they run after the first frame, so the
tables and the timeline are usable at once and the Findings tab fills in
when they are done: in a child process that loads the trace files
itself when the session came from files (a thread would share the
interpreter lock and slow every keypress for those seconds), else in a
thread. Quitting ends the child.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, Iterable

from rich.console import RenderableType
from rich.text import Text
from textual import work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Input, Static, TabbedContent, TabPane

from ..analysis.detectors import Finding
from ..units import fmt_bytes, fmt_ns
from .findings import SourceScreen, describe
from .gridview import GridView
from .headline import headline
from .help import HelpScreen
from .ranks import ranks_detail
from .session import Session, detect_files
from .tables import (finding_rows, findings_of_rank, findings_table, kernels_table, launches_table, rank_keys,
                     ranks_table, sites_table)
from .timeline import Timeline

#: traces larger than this (records, both runs together) find their findings in the background
BACKGROUND_RECORDS = 200_000
VIEWS = (("launches", "Launches"), ("kernels", "Kernels"), ("sites", "Call sites"), ("findings", "Findings"),
         ("timeline", "Timeline"), ("ranks", "Ranks"))
#: the binding of the Ranks view, which only a distributed job has
RANKS_ACTION = "view('ranks')"


class OffloadProfApp(App[int]):
    """`offload-prof tui NAIVE [BATCHED]`."""

    CSS_PATH = "offload_prof.tcss"
    TITLE = "offload-prof"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("slash", "filter", "Filter", tooltip="filter the rows of this view (Esc clears)"),
        *(Binding(str(n), f"view('{name}')", title, show=False) for n, (name, title) in enumerate(VIEWS, 1)),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    def __init__(self, session: Session, *, background: bool | None = None) -> None:
        super().__init__()
        self.session = session
        self._detector: Any = None
        self.background = session.records > BACKGROUND_RECORDS if background is None else background
        #: the rank whose findings the Findings view keeps (Enter in the Ranks view); None: every finding
        self.findings_rank: int | None = None
        if session.findings is None and not self.background:
            self._detect_now()

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        s = self.session
        yield Static(id="headline")
        with TabbedContent(initial="launches", id="views"):
            with TabPane("1 Launches", id="launches"):
                yield GridView(launches_table(s), id="launches-grid")
                yield Static(id="launches-detail", classes="detail")
            with TabPane("2 Kernels", id="kernels"):
                yield GridView(kernels_table(s), id="kernels-grid")
                yield Static(id="kernels-detail", classes="detail")
            with TabPane("3 Call sites", id="sites"):
                yield GridView(sites_table(s), id="sites-grid")
                yield Static(id="sites-detail", classes="detail")
            with TabPane(self._findings_label(), id="findings"):
                yield GridView(findings_table(s), id="findings-grid")
                yield Static(id="findings-detail", classes="detail")
            with TabPane("5 Timeline", id="timeline"):
                yield Timeline(s, id="timeline-view")
            if s.jobs:
                with TabPane("6 Ranks", id="ranks"):
                    yield GridView(ranks_table(s), id="ranks-grid")
                    yield Static(id="ranks-detail", classes="detail")
        yield Input(placeholder="filter: kernel, call site, rule or message text (Enter keeps it, Esc clears)",
                    id="filter", select_on_focus=False)
        yield Static(id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self._update_headline()
        self.query_one("#launches-grid", GridView).focus()
        if self.session.findings is None:
            self._detect_in_background()
        for view in self.grid_views():
            self._show_detail(view, self.query_one(f"#{view}-grid", GridView).current_key())
        self._update_status()

    def on_resize(self) -> None:
        self._update_headline()

    def _update_headline(self) -> None:
        width = self.size.width - 2
        self.query_one("#headline", Static).update(headline(self.session, max(width, 20)))

    # ------------------------------------------------------------ findings
    def _detect_now(self) -> None:
        try:
            self.session.set_findings(self.session.detect())
        except Exception as exc:  # a broken catalog must not take the other views down
            self._detection_failed(f"the detectors failed: {exc}")

    def _detection_failed(self, why: str) -> None:
        self.session.findings = tuple(() for _ in self.session.traces)
        self.session.verdicts = tuple(None for _ in self.session.traces)
        self.session.findings_error = why

    @work(exclusive=True, group="detect")
    async def _detect_in_background(self) -> None:
        if self.session.from_files:
            found = await self._detect_in_a_process()
            if found is not None:
                self._findings_ready()
                return
        await asyncio.to_thread(self._detect_now)
        self._findings_ready()

    async def _detect_in_a_process(self) -> bool | None:
        """Run the detectors in a fresh interpreter on the trace files; None when it could not start."""
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        receive, send = ctx.Pipe(duplex=False)
        paths = [t.path for t in self.session.traces]
        proc = ctx.Process(target=detect_files, args=(paths, self.session.link, send), daemon=True)
        # Textual captures sys.stdout/stderr while it runs, and the capture has no
        # file descriptor for the child to inherit: hand it the real ones.
        captured = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = sys.__stdout__ or captured[0], sys.__stderr__ or captured[1]
        try:
            proc.start()
        except (OSError, ValueError):
            send.close()
            receive.close()
            return None
        finally:
            sys.stdout, sys.stderr = captured
        send.close()
        self._detector = proc
        try:
            status, payload = await asyncio.to_thread(receive.recv)
        except (EOFError, OSError):
            status, payload = "error", "the detector process ended without an answer"
        finally:
            receive.close()
            proc.join(timeout=5)
            self._detector = None
        if status == "ok":
            self.session.set_findings(payload)
        else:
            self._detection_failed(f"the detectors failed: {payload}")
        return True

    def on_unmount(self) -> None:
        proc = getattr(self, "_detector", None)
        if proc is not None and proc.is_alive():
            proc.terminate()  # quitting must not wait for findings nobody will see

    def _findings_ready(self) -> None:
        self._update_headline()  # the verdicts came with the findings
        grid = self.query_one("#findings-grid", GridView)
        grid.set_table(findings_table(self.session))
        if self.findings_rank is not None:
            grid.apply_scope(findings_of_rank(self.session, self.findings_rank))
        self.query_one("#views", TabbedContent).get_tab("findings").label = self._findings_label()
        self._update_status()
        self._show_detail("findings", grid.current_key())
        if self.session.jobs:  # its pane says how many findings each rank has
            self._show_detail("ranks", self.query_one("#ranks-grid", GridView).current_key())

    def _findings_label(self) -> str:
        n = self.session.finding_count()
        return f"4 Findings ({'…' if n is None else n})"

    # ------------------------------------------------------------ views
    @property
    def view(self) -> str:
        return self.query_one("#views", TabbedContent).active or "launches"

    def grid_views(self) -> list[str]:
        """The views that are tables, in key order (Ranks only for a job)."""
        return [name for name, _ in VIEWS if name != "timeline" and (name != "ranks" or self.session.jobs)]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The Ranks view's key does nothing for a trace that is no distributed job."""
        if action == "view" and parameters == ("ranks",):
            return bool(self.session.jobs)
        return True

    def grid(self, view: str | None = None) -> GridView | None:
        name = view or self.view
        if name == "timeline":
            return None
        return self.query_one(f"#{name}-grid", GridView)

    def action_view(self, name: str) -> None:
        self.query_one("#views", TabbedContent).active = name
        self._focus_view()

    def _focus_view(self) -> None:
        box = self.query_one("#filter", Input)
        if box.display and self.focused is box:
            return  # typing a filter: the tab switch at start-up must not take the keys away
        grid = self.grid()
        (grid or self.query_one("#timeline-view", Timeline)).focus()
        self._update_status()
        if grid is not None:
            self._show_detail(self.view, grid.current_key())

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self.call_after_refresh(self._focus_view)

    def on_grid_view_highlighted(self, event: GridView.Highlighted) -> None:
        view = (event.grid.id or "").removesuffix("-grid")
        self._show_detail(view, event.key)
        if view == self.view:
            self._update_status()

    def on_grid_view_selected(self, event: GridView.Selected) -> None:
        if event.grid.id == "findings-grid":
            self.open_finding(event.key)
        elif event.grid.id == "ranks-grid":
            self.show_rank_findings(rank_keys(self.session)[event.key])

    def show_rank_findings(self, rank: int | None) -> None:
        """The Findings view with the findings of `rank` only (None: every finding)."""
        self.findings_rank = rank
        findings = self.query_one("#findings-grid", GridView)
        findings.apply_scope(None if rank is None else findings_of_rank(self.session, rank))
        self.action_view("findings")

    def open_finding(self, key: int) -> None:
        rows = finding_rows(self.session)
        if 0 <= key < len(rows):
            ti, fi = rows[key]
            self.push_screen(SourceScreen(self.session.traces[ti], self._finding(ti, fi)))

    def _finding(self, ti: int, fi: int) -> Finding:
        assert self.session.findings is not None
        return self.session.findings[ti][fi]

    # ------------------------------------------------------------ details
    def _show_detail(self, view: str, key: int | None) -> None:
        if view == "timeline":
            return
        pane = self.query_one(f"#{view}-detail", Static)
        pane.update(self._detail(view, key))

    def _detail(self, view: str, key: int | None) -> RenderableType:
        s = self.session
        if view == "ranks":
            if key is None:
                return Text("no rows match the filter", style="italic")
            rank = rank_keys(s)[key]
            count = None if s.findings is None or rank is None else int(findings_of_rank(s, rank).keep.sum())
            return ranks_detail(s, rank, count)
        if view == "findings":
            if s.findings is None:
                return Text(f"running the detectors on {s.records:,} records ...", style="italic")
            if s.findings_error:
                return Text(s.findings_error, style="bold red")
            rows = finding_rows(s)
            scope = self.query_one("#findings-grid", GridView).table.scope
            if key is None and rows and scope is not None:
                return Text(f"{scope.label}: no findings" + (" match the filter" if self._filter_of(view) else ""),
                            style="italic")
            if key is None or not rows:
                return Text("no findings: no runtime anti-pattern in " + ("these runs" if s.paired else "this run"),
                            style="italic")
            ti, fi = rows[key]
            return describe(s.traces[ti], self._finding(ti, fi), s.paired)
        if key is None:
            return Text("no rows match the filter" if self._filter_of(view) else "", style="italic")
        out = Text(no_wrap=True, overflow="ellipsis")
        for n, t in enumerate(s.traces):
            if n:
                out.append("\n")
            out.append(f"{t.name}: ", style="bold")
            out.append_text(self._entity_line(view, n, key))
        return out

    def _entity_line(self, view: str, side: int, key: int) -> Text:
        grid = self.grid(view)
        assert grid is not None
        entity = int(grid.table.sides[side + 1].entity[key])
        t = self.session.traces[side]
        if entity < 0:
            return Text("-", style="dim")
        if view == "launches":
            lt = t.launches
            return Text(f"#{entity:,} {lt.kernel_name(entity)} · H2D {int(lt.h2d_count[entity])} / "
                        f"{fmt_bytes(int(lt.h2d_bytes[entity]))} · D2H {int(lt.d2h_count[entity])} / "
                        f"{fmt_bytes(int(lt.d2h_bytes[entity]))} · kernel {fmt_ns(int(lt.kernel_ns[entity]))} · "
                        f"sync {fmt_ns(int(lt.sync_ns[entity]))} · {t.site_label(lt.site_of(entity))} "
                        f"(launch index {int(lt.index[entity])})")
        if view == "kernels":
            k = t.kernels[entity]
            return Text(f"{k.kernel} · {k.launches.count:,} launches, kernel {fmt_ns(k.launches.ns)} · "
                        f"H2D {k.h2d.count:,} / {fmt_bytes(k.h2d.nbytes)} · D2H {k.d2h.count:,} / "
                        f"{fmt_bytes(k.d2h.nbytes)} · {k.syncs.count:,} syncs")
        site = t.sites[entity]
        return Text(f"{site.copies.count:,} copies / {fmt_bytes(site.copies.nbytes)} in {fmt_ns(site.copies.ns)} · "
                    f"{site.launches:,} launches · {t.site_label(site.site)}: {site.site.text if site.site else ''}")

    # ------------------------------------------------------------ filter and status
    def _filter_of(self, view: str) -> str:
        grid = self.grid(view)
        return grid.table.filter_text if grid is not None else ""

    def action_filter(self) -> None:
        if self.grid() is None:
            self.notify("the timeline has nothing to filter; filter a table view", severity="warning")
            return
        box = self.query_one("#filter", Input)
        box.value = self._filter_of(self.view)
        box.display = True
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        grid = self.grid()
        if event.input.id == "filter" and grid is not None and event.input.display:
            grid.apply_filter(event.value)
            self._show_detail(self.view, grid.current_key())
            self._update_status()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.input.display = False
        self._focus_view()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        grid = self.grid()
        box.value = ""
        box.display = False
        if grid is not None and grid.table.filter_text:
            grid.apply_filter("")
        elif grid is not None and grid.table.scope is not None:  # a second Esc shows every rank's findings again
            self.findings_rank = None
            grid.apply_scope(None)
        self._focus_view()

    def _update_status(self) -> None:
        grid = self.grid()
        status = self.query_one("#status", Static)
        if grid is None:
            status.update(Text(" z: one scale / each its own · m: measured / modelled copy times", style="dim"))
            return
        t = grid.table
        narrowed = t.filter_text or t.scope is not None
        parts = [f"{len(t):,} of {t.counted(t.keys)}" if narrowed else t.counted(t.keys)]
        if len(t):
            parts.insert(0, f"row {grid.cursor + 1:,}")
        if t.sort is not None:
            parts.append(t.describe_sort())
        if t.scope is not None:
            parts.append(f"{t.scope.label} only (Esc: all)")
        if t.filter_text:
            parts.append(f"filter “{t.filter_text}”")
        status.update(Text(" " + " · ".join(parts), style="dim"))

    # ------------------------------------------------------------ help and palette
    def action_help(self) -> None:
        from .findings import SourceScreen as _Source

        jobs = bool(self.session.jobs)
        anywhere = [b for b in self.BINDINGS if jobs or not (isinstance(b, Binding) and b.action == RANKS_ACTION)]
        ranks = [Binding("enter", "select", "Findings of the rank",
                         tooltip="the Findings view keeps the highlighted rank's findings (Esc there: all); "
                                 "on the job row, every finding")]
        self.push_screen(HelpScreen([
            ("anywhere", anywhere),
            ("tables", GridView.BINDINGS),
            *((("ranks view", ranks),) if jobs else ()),
            ("timeline", Timeline.BINDINGS),
            ("source screen", _Source.BINDINGS),
            ("palette", [Binding("ctrl+p", "command_palette", "Command palette",
                                 tooltip="views, sort by any column, filter, help, quit")]),
        ]))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        for n, (name, title) in enumerate(VIEWS, 1):
            if name == "ranks" and not self.session.jobs:
                continue
            yield SystemCommand(f"View: {title}", f"show the {title} view (key {n})",
                                lambda name=name: self.action_view(name))
        grid = self.grid()
        if grid is not None:
            for side, column, label in grid.table.column_names():
                yield SystemCommand(f"Sort {self.view}: {label}", "sort the rows by this column (again: reverse)",
                                    lambda g=grid, s=side, c=column: self._sort(g, s, c))
        yield SystemCommand("Filter rows", "filter the rows of this view (/)", self.action_filter)
        yield SystemCommand("Help: keys", "every key binding (?)", self.action_help)
        yield from super().get_system_commands(screen)

    def _sort(self, grid: GridView, side: int, column: int) -> None:
        grid.sort_by(side, column)
        self._update_status()

    async def action_quit(self) -> None:
        self.exit(0)


def run_app(session: Session) -> int:
    """Run the TUI in this terminal until the user quits; the exit status."""
    result = OffloadProfApp(session).run()
    return int(result or 0)
