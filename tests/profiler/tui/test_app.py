"""The app driven headless with Pilot: every view, sorting, filtering, findings and the source screen, help, quit."""

from __future__ import annotations

import numpy as np
import pytest
from textual.widgets import Input, Static, TabbedContent

from profiler.model import Run
from profiler.tui.app import OffloadProfApp
from profiler.tui.findings import SourceScreen
from profiler.tui.gridview import GridView
from profiler.tui.help import HelpScreen
from profiler.tui.session import Session
from profiler.tui.timeline import Timeline

from ..synth import synthetic_run
from .kit import BATCHED, NAIVE, app, link, text_of

pytestmark = pytest.mark.asyncio

VIEWS = ("launches", "kernels", "sites", "findings", "timeline")


async def test_number_keys_switch_every_view_and_focus_it() -> None:
    a = app()
    async with a.run_test(size=(120, 40)) as pilot:
        for n, view in enumerate(VIEWS, 1):
            await pilot.press(str(n))
            await pilot.pause()
            assert a.query_one("#views", TabbedContent).active == view
            focused = a.focused
            assert isinstance(focused, Timeline if view == "timeline" else GridView)
            if view != "timeline":
                assert focused.id == f"{view}-grid"


async def test_the_command_palette_reaches_every_view() -> None:
    a = app()
    async with a.run_test(size=(120, 40)) as pilot:
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"View: Timeline")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause(0.2)
        assert a.query_one("#views", TabbedContent).active == "timeline"
        commands = {c.title: c for c in a.get_system_commands(a.screen)}
        for title, view in (("Call sites", "sites"), ("Findings", "findings"), ("Kernels", "kernels"),
                            ("Launches", "launches"), ("Timeline", "timeline")):
            commands[f"View: {title}"].callback()
            await pilot.pause()
            assert a.query_one("#views", TabbedContent).active == view, title
        assert "Quit" in {c.title for c in a.get_system_commands(a.screen)}


async def test_launch_rows_pair_the_two_runs_by_launch() -> None:
    a = app()
    async with a.run_test(size=(120, 40)) as pilot:
        grid = a.query_one("#launches-grid", GridView)
        assert len(grid.table) == 31
        naive, batched = grid.table.cells(0)[1], grid.table.cells(0)[2]
        assert naive is not None and batched is not None
        assert naive[0] == batched[0] == "smooth"
        assert naive[1] == "400 kB" and batched[1] == "-", "the naive run uploads per launch; the batched one does not"
        await pilot.press("end")
        await pilot.pause()
        assert grid.cursor == 30 and grid.current_key() == 30
        assert grid.table.cells(30)[1][0] == "scale"  # type: ignore[index]
        detail = text_of(a.query_one("#launches-detail", Static))
        assert "naive: #30 scale" in detail and "batched: #30 scale" in detail


async def test_sorting_by_a_column_and_reversing_it() -> None:
    a = app()
    async with a.run_test(size=(120, 40)) as pilot:
        grid = a.query_one("#launches-grid", GridView)
        placed = grid.placed()
        copy = next(n for n, p in enumerate(placed) if p.side == 1 and grid.table.sides[1].columns[p.column].key == "copy")
        grid.column_cursor = copy
        await pilot.press("s")
        await pilot.pause()
        naive_copy = a.session.traces[0].launches.copy_ns
        shown = [int(naive_copy[k]) for k in grid.table.order]
        assert shown == sorted(shown, reverse=True), "numbers sort largest first"
        assert "sorted by copy (naive) ▼" in text_of(a.query_one("#status", Static))
        await pilot.press("s")
        await pilot.pause()
        shown = [int(naive_copy[k]) for k in grid.table.order]
        assert shown == sorted(shown)
        await pilot.press("o")
        await pilot.pause()
        assert grid.table.order.tolist() == list(range(31))


async def test_sorting_kernels_and_call_sites_from_the_palette() -> None:
    a = app()
    async with a.run_test(size=(120, 40)) as pilot:
        await pilot.press("2")
        await pilot.press("ctrl+p")
        await pilot.press(*"kernels: launches (naive")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        grid = a.query_one("#kernels-grid", GridView)
        assert [grid.table.cells(r)[0][0] for r in range(len(grid.table))] == ["smooth", "scale"]  # type: ignore[index]
        assert grid.table.sort is not None and grid.table.sort.descending
        await pilot.press("3")
        sites = a.query_one("#sites-grid", GridView)
        sites.sort_by(0, 0)  # call site text: A to Z
        labels = [sites.table.cells(r)[0][0] for r in range(len(sites.table))]  # type: ignore[index]
        assert labels == sorted(labels)


async def test_filtering_keeps_matching_rows_and_escape_clears() -> None:
    a = app()
    async with a.run_test(size=(120, 40)) as pilot:
        grid = a.query_one("#launches-grid", GridView)
        await pilot.press("slash")
        box = a.query_one("#filter", Input)
        assert box.display and a.focused is box
        await pilot.press(*"scale")
        await pilot.pause()
        assert len(grid.table) == 1 and grid.table.cells(0)[1][0] == "scale"  # type: ignore[index]
        await pilot.press("enter")
        await pilot.pause()
        assert not box.display and a.focused is grid
        await pilot.press("slash", *"q1?", "backspace", "backspace", "backspace")
        await pilot.pause()
        assert a.is_running and a.query_one("#views", TabbedContent).active == "launches", "keys typed go to the filter"
        await pilot.press("enter")
        assert "1 of 31 launches" in text_of(a.query_one("#status", Static))
        assert 'filter “scale”' in text_of(a.query_one("#status", Static))
        await pilot.press("slash", *"nothing-like-this")
        await pilot.pause()
        assert len(grid.table) == 0
        assert "no rows match the filter" in text_of(a.query_one("#launches-detail", Static))
        await pilot.press("escape")
        await pilot.pause()
        assert len(grid.table) == 31 and not box.display


async def test_filters_belong_to_their_view() -> None:
    a = app()
    async with a.run_test(size=(120, 40)) as pilot:
        await pilot.press("3", "slash", *"region", "enter")
        await pilot.pause()
        assert len(a.query_one("#sites-grid", GridView).table) == 1
        assert len(a.query_one("#launches-grid", GridView).table) == 31


async def test_findings_show_the_static_rule_and_the_source_line() -> None:
    a = app()
    async with a.run_test(size=(120, 40)) as pilot:
        await pilot.press("4")
        await pilot.pause()
        grid = a.query_one("#findings-grid", GridView)
        assert [grid.table.cells(r)[0][1] for r in range(3)] == ["OFF501", "OFF501", "OFF503"]  # type: ignore[index]
        detail = text_of(a.query_one("#findings-detail", Static))
        assert "OFF501 per-launch-transfer" in detail and "stencil.py:30:13 in main" in detail
        assert "static: OFF102 offload-in-loop-without-region" in detail
        assert "▶ 30 │             offload(smooth, scratch, u)" in detail
        assert "29 │         for _ in range(steps):" in detail, "two lines of context"
        assert "4 Findings (3)" in str(a.query_one("#views", TabbedContent).get_tab("findings").label)


async def test_enter_opens_the_finding_in_the_source_screen() -> None:
    a = app()
    async with a.run_test(size=(120, 40)) as pilot:
        await pilot.press("4", "down", "down", "enter")
        await pilot.pause(0.3)
        screen = a.screen
        assert isinstance(screen, SourceScreen)
        assert screen.finding.code == "OFF503" and screen.finding.site is not None
        assert screen.path is not None and screen.path.name == "stencil.py"
        assert "stencil.py:32 in main · OFF503 unchanged-round-trip" in text_of(screen.query_one("#source-title", Static))
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(a.screen, SourceScreen)


async def test_help_lists_the_bindings_and_closes() -> None:
    a = app()
    async with a.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(a.screen, HelpScreen)
        keys = {(k, what.split(":")[0]) for _, k, what in a.screen.rows}
        for expected in (("q", "Quit"), ("/", "Filter"), ("s", "Sort"), ("1", "Launches"), ("5", "Timeline"),
                         ("z", "Scale"), ("Ctrl+P", "Command palette"), ("Enter", "Open")):
            assert expected in keys, expected
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(a.screen, HelpScreen)


async def test_q_quits_with_status_0() -> None:
    a = app()
    async with a.run_test(size=(80, 24)) as pilot:
        await pilot.press("q")
        await pilot.pause()
    assert a.return_value == 0


async def test_timeline_toggles() -> None:
    a = app()
    async with a.run_test(size=(120, 40)) as pilot:
        await pilot.press("5")
        tl = a.query_one(Timeline)
        assert tl.shared_scale and not tl.modelled
        before = str(tl.render())
        await pilot.press("z", "m")
        await pilot.pause()
        assert not tl.shared_scale and tl.modelled
        after = str(tl.render())
        assert "copy times modelled on pcie5-x16; each run its own scale" in after and after != before
        await pilot.press("slash")
        await pilot.pause()
        assert not a.query_one("#filter", Input).display, "the timeline has no rows to filter"


async def test_without_a_link_there_is_no_modelled_column_or_toggle() -> None:
    a = app(modelled=False)
    async with a.run_test(size=(160, 40)) as pilot:
        grid = a.query_one("#launches-grid", GridView)
        assert all(c.key != "modelled" for side in grid.table.sides for c in side.columns)
        await pilot.press("5", "m")
        await pilot.pause()
        assert not a.query_one(Timeline).modelled


async def test_one_trace() -> None:
    a = app(NAIVE)
    async with a.run_test(size=(80, 24)) as pilot:
        grid = a.query_one("#launches-grid", GridView)
        assert len(grid.table.sides) == 2 and grid.table.sides[1].title == "naive: 31 launches"
        assert "73% of the naive run was copies" in text_of(a.query_one("#headline", Static))
        await pilot.press("4")
        assert "4 Findings (3)" in str(a.query_one("#views", TabbedContent).get_tab("findings").label)


async def test_a_large_trace_renders_only_visible_rows_and_finds_in_the_background() -> None:
    run = synthetic_run(300_000, seed=5)
    session = Session.build([run, Run.load(BATCHED)], ["big.json", str(BATCHED)], link())
    a = OffloadProfApp(session)
    assert a.background and session.findings is None
    async with a.run_test(size=(120, 40)) as pilot:
        grid = a.query_one("#launches-grid", GridView)
        keys = len(grid.table)
        assert keys == len(session.traces[0].launches) > 50_000
        await pilot.press("end")
        await pilot.pause()
        assert grid.cursor == keys - 1
        await pilot.press("pageup", "pageup", "home")
        await pilot.pause()
        assert grid.cursor == 0
        assert grid.rows_rendered < 40 * 12, f"rendered {grid.rows_rendered} rows of {keys}"
        await a.workers.wait_for_complete()
        await pilot.pause()
        assert session.findings is not None
        label = str(a.query_one("#views", TabbedContent).get_tab("findings").label)
        assert label == f"4 Findings ({session.finding_count()})"
        await pilot.press("slash", *"daxpy", "enter")
        await pilot.pause()
        kernel = session.traces[0].launches.kernel
        code = session.traces[0].launches.kernels.index("daxpy")
        assert len(grid.table) == int((kernel == code).sum())


async def test_findings_of_trace_files_come_from_a_child_process(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = synthetic_run(20_000, seed=9).save(tmp_path / "big.json")
    session = Session.load([str(path), str(BATCHED)], link())
    a = OffloadProfApp(session, background=True)
    assert session.findings is None
    async with a.run_test(size=(120, 40)) as pilot:
        await pilot.press("4")
        assert f"running the detectors on {session.records:,} records" in text_of(a.query_one("#findings-detail", Static)) \
            or session.findings
        await a.workers.wait_for_complete()
        await pilot.pause()
        assert a._detector is None and session.findings_error is None
        expected, verdicts = Session.load([str(path), str(BATCHED)], link()).detect()
        assert [[(f.code, f.count, f.nbytes, f.records, f.expected_saving_ns) for f in run]
                for run in session.findings or ()] == \
            [[(f.code, f.count, f.nbytes, f.records, f.expected_saving_ns) for f in run] for run in expected]
        assert session.verdicts == verdicts and verdicts[0] is not None, "the verdicts come with the findings"


async def test_quitting_ends_a_running_detector_process(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = synthetic_run(300_000, seed=2).save(tmp_path / "big.json")
    a = OffloadProfApp(Session.load([str(path)], link()), background=True)
    async with a.run_test(size=(80, 24)) as pilot:
        for _ in range(100):
            if a._detector is not None:
                break
            await pilot.pause(0.05)
        proc = a._detector
        assert proc is not None and proc.is_alive()
        await pilot.press("q")
    proc.join(timeout=10)
    assert not proc.is_alive()


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
async def test_every_view_fits_the_terminal(size: tuple[int, int]) -> None:
    a = app()
    async with a.run_test(size=size) as pilot:
        for n in range(1, 6):
            await pilot.press(str(n))
            await pilot.pause()
            if n < 5:
                grid = a.query_one(f"#{VIEWS[n - 1]}-grid", GridView)
                placed = grid.placed()
                assert placed and max(p.x + p.width for p in placed) <= grid.scrollable_content_region.width
                runs = [p for p in placed if not grid.table.sides[p.side].shared]
                by_side: dict[int, list[int]] = {}
                for p in runs:
                    by_side.setdefault(p.side, []).append(p.column)
                assert len({tuple(v) for v in by_side.values()}) == 1, "both runs show the same columns"
                assert np.all(grid.table.order >= 0)
