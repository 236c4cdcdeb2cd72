"""The HTML report in headless Chromium: the page renders, the figures are in the DOM, the timeline draws and zooms.

The browser is tests/browser.py's (Playwright's Chromium, or the system's);
where none can be had, every test here skips with the line that says why.
Each run leaves a screenshot of the comparison page in build/screenshots/
(ignored by git), which CI can upload beside the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from profiler.analysis.diagnosis import analyse
from profiler.analysis.summary import totals
from profiler.model import Meta, Record, Run, Site
from profiler.outputs.html.page import named, render_page
from profiler.phrases import exact_sentence
from profiler.trace.link import SHIPPED_DIR, load_link

from ....browser import Browser, find
from ...kit import ROOT

DATA = ROOT / "tests" / "data"
LINK = load_link(SHIPPED_DIR / "pcie5-x16.yaml")
SCREENSHOTS = ROOT / "build" / "screenshots"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    found = find()
    if not isinstance(found, Browser):
        pytest.skip(f"no headless browser for the HTML report: {found}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(**found.launch_options())  # type: ignore[arg-type]
        yield b
        b.close()


def _open(browser: Any, html: str, folder: Path) -> tuple[Any, list[str]]:
    path = folder / "report.html"
    path.write_text(html, encoding="utf-8")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("request", lambda r: errors.append(f"request {r.url}") if not r.url.startswith("file:") else None)
    page.goto(path.as_uri())
    page.wait_for_selector("html[data-timeline=drawn]", timeout=30_000)
    return page, errors


def _busy(page: Any, ident: str) -> list[int]:
    return [int(n) for n in page.get_attribute(f"#{ident}", "data-busy-px").split(",")]


def test_the_comparison_renders_with_its_figures_and_timelines(browser: Any, tmp_path: Path) -> None:
    runs = [Run.load(DATA / "stencil.naive.json"), Run.load(DATA / "stencil.batched.json")]
    html = render_page(named(runs, ["naive.json", "batched.json"], [analyse(r, LINK) for r in runs]), link=LINK)
    page, errors = _open(browser, html, tmp_path)
    try:
        assert page.title() == "offload-prof: " + runs[0].label
        expected = exact_sentence([("naive", totals(runs[0], LINK)), ("batched", totals(runs[1], LINK))])
        assert page.inner_text("#headline-exact") == expected
        assert page.get_attribute("#verdict-naive", "data-kind") == "transfer-bound"
        assert page.inner_text("#verdict-naive .kind") == "transfer-bound"
        assert page.is_visible("#finding-naive-1") and page.get_attribute("#finding-naive-1", "data-code") == "OFF501"
        assert page.inner_text("#finding-naive-1 td.saving").startswith("saves ")
        assert page.locator("table.compare tbody tr").count() == 11  # with the modelled copy time
        # every lane with operations drew something, in both runs (the batched run's one sync included)
        assert all(n > 0 for n in _busy(page, "timeline-naive")), _busy(page, "timeline-naive")
        assert all(n > 0 for n in _busy(page, "timeline-batched")), _busy(page, "timeline-batched")
        box = page.locator("#timeline-naive canvas").bounding_box()
        assert box is not None and box["width"] > 1000 and box["height"] == 14 + 4 * 26 + 20 + 2  # four lanes, marks, axis, border
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shot = SCREENSHOTS / "html-report-compare.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000
        assert errors == []
    finally:
        page.close()


def test_zooming_in_decodes_the_operations_and_the_tip_names_one(browser: Any, tmp_path: Path) -> None:
    site = Site("/w/app.py", 7, "step", "d = up(x)", 5)
    records = [Record("h2d", 1_000_000 * k, 2_000, 4096, site=site) for k in range(100)]
    records += [Record("launch", 1_000_000 * k + 3_000, 5_000, kernel="k", launch=k, site=site) for k in range(100)]
    run = Run(Meta(backend="numpy", device="host", mode="naive", started_at="", wall_ns=100_000_000, cwd="/w"),
              tuple(records))
    # exact_limit=0: drawn from the overview until zoomed in, as a run of millions of operations is
    page, errors = _open(browser, render_page(named([run], ["r.json"], [analyse(run, None)]), exact_limit=0), tmp_path)
    try:
        assert page.get_attribute("#timeline", "data-mode") == "overview"
        h2d, d2h, launch, sync = _busy(page, "timeline")
        assert h2d > 0 and launch > 0 and d2h == 0 and sync == 0
        # the 51st copy and the launch after it, alone in a window of 20 us
        page.evaluate("offloadProf.zoom(0, 50000000 - 1000, 50000000 + 19000)")
        assert page.get_attribute("#timeline", "data-mode") == "events"
        h2d, d2h, launch, sync = _busy(page, "timeline")
        left = int(page.get_attribute("#timeline", "data-plot-left"))  # the labels' width
        assert left > 60
        width = page.evaluate("document.querySelector('#timeline canvas').clientWidth") - left
        assert abs(h2d - width * 2 / 20) <= 2 and abs(launch - width * 5 / 20) <= 2 and d2h == sync == 0
        canvas = page.locator("#timeline canvas").bounding_box()
        assert canvas is not None
        page.mouse.move(canvas["x"] + left + width * 2 / 20, canvas["y"] + 14 + 13)  # over the copy, in the H2D lane
        tip = page.inner_text("#timeline .tip")
        assert tip.startswith("H2D copy at 50.0 ms, 2.00 \u00b5s, 4.10 kB") and tip.endswith("app.py:7 in step")
        page.evaluate("offloadProf.zoom(0, 50500000, 50600000)")  # between two iterations: nothing
        assert _busy(page, "timeline") == [0, 0, 0, 0]
        page.dblclick("#timeline canvas")
        assert page.get_attribute("#timeline", "data-mode") == "overview"
        assert page.get_attribute("#timeline", "data-view") == "0,100000000"
        assert errors == []
    finally:
        page.close()
