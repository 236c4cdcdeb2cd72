"""A distributed job in the TUI: the Ranks view (a row per rank and the job, the slowest rank named), its key, Enter
keeping a rank's findings; a program run on its own has no such view.

The job is `kit.job_run`: two ranks of five 1 ms steps, rank 1's kernel
twice as long as rank 0's and a 300 µs wait for its device before every
all_reduce, so its busy time is 5 x 810 µs against rank 0's 5 x 310 µs.
"""

from __future__ import annotations

import pytest
from textual.widgets import Static, TabbedContent

from profiler.model import Run
from profiler.outputs.report import rank_table
from profiler.tui.app import OffloadProfApp
from profiler.tui.gridview import GridView
from profiler.tui.help import HelpScreen
from profiler.tui.session import Session
from profiler.tui.tables import findings_of_rank, findings_table, rank_keys, ranks_table

from .kit import NAIVE, app, job_app, job_run, job_session, text_of

ROWS = [
    [["0"], ["cuda:0", "5 / 5.24 MB", "5 / 20.5 kB", "5", "0", "5 / 20 B", "1.55 ms", "2.3 ms", "5.86 ms"]],
    [["1"], ["cuda:1", "5 / 5.24 MB", "5 / 20.5 kB", "5", "5", "5 / 20 B", "4.05 ms", "200 µs", "5.86 ms"]],
    [["job"], ["-", "10 / 10.5 MB", "10 / 41 kB", "10", "5", "10 / 40 B", "5.6 ms", "2.5 ms", "6 ms"]],
]
SLOWEST = "slowest  rank 1: busy 4.05 ms, 2.61x rank 0's (copies, kernels and syncs; time in collectives left out)"


def cells(grid: GridView) -> list[list[list[str] | None]]:
    return [grid.table.cells(r) for r in range(len(grid.table))]


def codes(grid: GridView) -> list[str]:
    return [row[0][0] for row in cells(grid)]  # type: ignore[index]


# ------------------------------------------------------------------ the table, without an app
def test_the_rank_table_has_each_ranks_figures_and_the_jobs_as_report_prints_them() -> None:
    s = job_session()
    t = ranks_table(s)
    assert [t.cells(r) for r in range(len(t))] == ROWS
    assert [c.title for c in t.sides[1].columns] == ["device", "H2D", "D2H", "launches", "syncs", "collectives",
                                                     "busy", "in collectives", "last end"]
    assert t.sides[1].title == "batched: ranks (2 of world size 2)"
    printed = rank_table(job_run(), None)
    assert printed is not None
    assert [[row[0][0], *row[1]] for row in ROWS] == printed.rows, "the TUI and `report` show the same figures"


def test_sorting_the_ranks_by_busy_time_puts_the_slowest_first() -> None:
    t = ranks_table(job_session())
    busy = next(i for i, c in enumerate(t.sides[1].columns) if c.key == "busy")
    t.sort_by(1, busy)
    assert [t.cells(r)[0] for r in range(len(t))] == [["job"], ["1"], ["0"]]


def test_a_rank_keeps_the_findings_that_name_it() -> None:
    s = job_session()
    s.set_findings(s.detect())
    t = findings_table(s)
    rows = [t.cells(r)[0][:2] for r in range(len(t))]  # type: ignore[index]
    assert rows == [["OFF509", "0-1"], ["OFF510", "1"], ["OFF507", "1"]]
    assert findings_of_rank(s, 0).keep.tolist() == [True, False, False]
    assert findings_of_rank(s, 1).keep.tolist() == [True, True, True]
    assert findings_of_rank(s, 1).label == "rank 1"


def test_a_program_run_on_its_own_is_no_job() -> None:
    s = Session.build([Run.load(NAIVE)], [str(NAIVE)], None)
    assert s.traces[0].job is None and s.jobs == ()
    assert job_session().traces[0].job is not None


# ------------------------------------------------------------------ the app
@pytest.mark.asyncio
async def test_a_job_opens_with_a_ranks_view_on_key_6_naming_the_slowest_rank() -> None:
    a = job_app()
    async with a.run_test(size=(120, 40)) as pilot:
        tabs = a.query_one("#views", TabbedContent)
        assert str(tabs.get_tab("ranks").label) == "6 Ranks"
        await pilot.press("6")
        await pilot.pause()
        assert tabs.active == "ranks"
        grid = a.query_one("#ranks-grid", GridView)
        assert a.focused is grid and cells(grid) == ROWS
        detail = text_of(a.query_one("#ranks-detail", Static))
        assert SLOWEST in detail
        assert "rank 0: cuda:0, 1 process; busy 1.55 ms; 5 collectives, 2.3 ms in them; last end 5.86 ms" in detail
        assert "Enter lists rank 0's 1 finding" in detail
        await pilot.press("down")
        await pilot.pause()
        detail = text_of(a.query_one("#ranks-detail", Static))
        assert "rank 1: cuda:1, 1 process; busy 4.05 ms; 5 collectives, 200 µs in them" in detail
        assert "Enter lists rank 1's 3 findings" in detail and SLOWEST in detail
        await pilot.press("down")
        await pilot.pause()
        detail = text_of(a.query_one("#ranks-detail", Static))
        assert "job: 2 ranks; busy 5.6 ms in all; 10 collectives, 2.5 ms in them; wall 6 ms" in detail
        assert "row 3 · 3 rows" in text_of(a.query_one("#status", Static))


@pytest.mark.asyncio
async def test_a_program_run_on_its_own_has_no_ranks_view_and_key_6_does_nothing() -> None:
    a = app(NAIVE)
    async with a.run_test(size=(120, 40)) as pilot:
        assert not a.query("#ranks") and not a.query("#ranks-grid")
        await pilot.press("6")
        await pilot.pause()
        assert a.query_one("#views", TabbedContent).active == "launches"
        assert "View: Ranks" not in {c.title for c in a.get_system_commands(a.screen)}
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(a.screen, HelpScreen)
        assert "6" not in {keys for _, keys, _ in a.screen.rows}
        assert "ranks view" not in {group for group, _, _ in a.screen.rows}


@pytest.mark.asyncio
async def test_the_palette_and_the_help_list_the_ranks_view_of_a_job() -> None:
    a = job_app()
    async with a.run_test(size=(120, 40)) as pilot:
        commands = {c.title: c for c in a.get_system_commands(a.screen)}
        commands["View: Ranks"].callback()
        await pilot.pause()
        assert a.query_one("#views", TabbedContent).active == "ranks"
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(a.screen, HelpScreen)
        rows = {(group, keys, what.split(":")[0]) for group, keys, what in a.screen.rows}
        assert ("anywhere", "6", "Ranks") in rows and ("ranks view", "Enter", "Findings of the rank") in rows


@pytest.mark.asyncio
async def test_enter_on_a_rank_keeps_its_findings_and_escape_shows_all_again() -> None:
    a = job_app()
    async with a.run_test(size=(120, 40)) as pilot:
        await pilot.press("6", "enter")
        await pilot.pause()
        assert a.query_one("#views", TabbedContent).active == "findings"
        findings = a.query_one("#findings-grid", GridView)
        assert a.focused is findings and codes(findings) == ["OFF509"]
        assert "1 of 3 findings · rank 0 only (Esc: all)" in text_of(a.query_one("#status", Static))
        await pilot.press("escape")
        await pilot.pause()
        assert codes(findings) == ["OFF509", "OFF510", "OFF507"] and a.findings_rank is None
        assert "rank 0 only" not in text_of(a.query_one("#status", Static))
        await pilot.press("6", "down", "enter")
        await pilot.pause()
        assert codes(findings) == ["OFF509", "OFF510", "OFF507"] and findings.table.scope is not None
        await pilot.press("slash", *"OFF510", "enter")
        await pilot.pause()
        assert codes(findings) == ["OFF510"], "a text filter narrows the rank's findings"
        await pilot.press("6", "up", "enter")
        await pilot.pause()
        assert codes(findings) == [], "rank 0 has no OFF510"
        assert "rank 0: no findings match the filter" in text_of(a.query_one("#findings-detail", Static))
        await pilot.press("escape")  # clears the text filter first
        await pilot.pause()
        assert codes(findings) == ["OFF509"]
        await pilot.press("6", "end", "enter")
        await pilot.pause()
        assert codes(findings) == ["OFF509", "OFF510", "OFF507"] and findings.table.scope is None, "the job row"


@pytest.mark.asyncio
async def test_findings_that_arrive_after_a_rank_was_chosen_keep_to_that_rank() -> None:
    a = OffloadProfApp(job_session(), background=True)
    async with a.run_test(size=(120, 40)) as pilot:
        await a.workers.wait_for_complete()
        await pilot.press("6", "enter")
        await pilot.pause()
        assert a.findings_rank == 0
        a.session.findings = None  # as if the detectors were still running
        a._findings_ready()
        await pilot.pause()
        assert codes(a.query_one("#findings-grid", GridView)) == [], "no findings yet"
        await pilot.press("6")
        await pilot.pause()
        assert "Enter lists rank 0's findings (the detectors are still running)" in \
            text_of(a.query_one("#ranks-detail", Static))
        a.session.set_findings(a.session.detect())
        a._findings_ready()
        await pilot.pause()
        assert codes(a.query_one("#findings-grid", GridView)) == ["OFF509"]
        assert "Enter lists rank 0's 1 finding" in text_of(a.query_one("#ranks-detail", Static)), "the pane follows"


@pytest.mark.asyncio
async def test_two_jobs_side_by_side_and_a_rank_the_trace_has_not() -> None:
    a = OffloadProfApp(Session.build([job_run(), job_run(world=3)], ["a.json", "b.json"], None))
    async with a.run_test(size=(200, 40)) as pilot:
        await pilot.press("6")
        await pilot.pause()
        grid = a.query_one("#ranks-grid", GridView)
        assert [s.title for s in grid.table.sides] == ["", "first: ranks (2 of world size 2)",
                                                      "second: ranks (2 of world size 3)"]
        assert cells(grid) == [[row[0], row[1], row[1]] for row in ROWS]
        detail = text_of(a.query_one("#ranks-detail", Static))
        assert f"first: {SLOWEST}" in detail and f"second: {SLOWEST}" in detail
        assert "second: no trace of rank 2 of world size 3: not recorded" in detail
        assert "first: no trace" not in detail
        await pilot.press("enter")
        await pilot.pause()
        rows = [row[0][:3] for row in cells(a.query_one("#findings-grid", GridView))]  # type: ignore[index]
        assert rows == [["first", "OFF509", "0-1"], ["second", "OFF509", "0-1"]]


@pytest.mark.asyncio
async def test_a_job_beside_a_program_run_on_its_own_lists_the_jobs_ranks_only() -> None:
    a = OffloadProfApp(Session.build([Run.load(NAIVE), job_run()], [str(NAIVE), "job.json"], None))
    async with a.run_test(size=(120, 40)) as pilot:
        await pilot.press("6")
        await pilot.pause()
        grid = a.query_one("#ranks-grid", GridView)
        assert [s.title for s in grid.table.sides] == ["", "batched: ranks (2 of world size 2)"]
        assert cells(grid) == ROWS and rank_keys(a.session) == [0, 1, None]
        assert f"batched: {SLOWEST}" in text_of(a.query_one("#ranks-detail", Static))


@pytest.mark.asyncio
@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_the_ranks_view_fits_the_terminal_and_keeps_the_busy_time(size: tuple[int, int]) -> None:
    a = job_app()
    async with a.run_test(size=size) as pilot:
        await pilot.press("6")
        await pilot.pause()
        grid = a.query_one("#ranks-grid", GridView)
        placed = grid.placed()
        assert max(p.x + p.width for p in placed) <= grid.scrollable_content_region.width
        shown = {grid.table.sides[p.side].columns[p.column].key for p in placed}
        assert {"rank", "h2d", "d2h", "syncs", "busy"} <= shown
