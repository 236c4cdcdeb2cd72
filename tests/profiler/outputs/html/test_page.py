"""The HTML page: one self-contained file whose DOM holds the verdict, the figures, the call sites and the findings.

These read the page's HTML as the browser gets it (the standard library's
parser); tests/profiler/outputs/html/test_browser.py opens it in Chromium.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from profiler.analysis.diagnosis import analyse
from profiler.model import Meta, Record, Run, Site
from profiler.outputs.html.page import cell_html, named, render_page
from profiler.outputs.html.parts import file_where
from profiler.phrases import exact_sentence, saving_text
from profiler.analysis.summary import totals
from profiler.trace.link import SHIPPED_DIR, load_link

from ...kit import ROOT, prof
from .dom import cells, parse

DATA = ROOT / "tests" / "data"
NAIVE, BATCHED = DATA / "stencil.naive.json", DATA / "stencil.batched.json"
LINK = load_link(SHIPPED_DIR / "pcie5-x16.yaml")


def _page(*paths: Path) -> tuple[str, list[Run]]:
    runs = [Run.load(p) for p in paths]
    return render_page(named(runs, [str(p) for p in paths], [analyse(r, LINK) for r in runs]), link=LINK), runs


def test_one_run_shows_its_verdict_totals_sites_and_findings_in_the_dom() -> None:
    html, (run,) = _page(NAIVE)
    page = parse(html)
    findings, judged = analyse(run, LINK)
    assert judged is not None and judged.kind == "transfer-bound"
    verdict = page.by_id("verdict")
    assert verdict.attrs["data-kind"] == "transfer-bound" and "copies 75%" in verdict.text
    assert "wall 28.6 ms; copies 21 ms (73.3% of wall); 31 launches in 1 region" in page.by_id("wall").text
    totals_rows = {cells(r)[0]: cells(r)[1:] for r in page.tags("tr") if r.children and r.children[0].tag == "td"}
    assert totals_rows["H2D copies"][:2] == ["31", "12.4 MB"] and totals_rows["D2H copies"][:2] == ["31", "12.4 MB"]
    assert cells(page.by_id("site-1"))[:5] == ["1", "stencil.py:30 in main", "offload(smooth, scratch, u)", "15 / 6 MB",
                                               "15 / 6 MB"]
    rows = [page.by_id(i) for i in page.ids("finding-")]
    assert [r.attrs["data-code"] for r in rows] == [f.code for f in findings] == ["OFF501", "OFF501", "OFF503"]
    assert [int(r.attrs["data-saving-ns"]) for r in rows] == [f.expected_saving_ns for f in findings]
    assert [int(r.attrs["data-saving-ns"]) for r in rows] == sorted((int(r.attrs["data-saving-ns"]) for r in rows),
                                                                     reverse=True)
    first = cells(rows[0])
    assert first[0] == saving_text(findings[0]) and first[2] == "stencil.py:30 in main" and first[3] == "keep resident"
    assert "static: OFF102, OFF101" in first[4]
    assert "modelled costs: the NumPy backend's copies are host memcpys" in html
    assert "comparison" not in page.ids("comparison")


def test_the_page_is_self_contained() -> None:
    html, _ = _page(NAIVE, BATCHED)
    page = parse(html)
    assert not [e for e in page.elements if "src" in e.attrs or "href" in e.attrs], "nothing is loaded from elsewhere"
    assert not page.tags("link") and not page.tags("img") and not page.tags("iframe")
    assert "url(" not in html and "@import" not in html and not re.search(r"https?://", html)
    assert [s.attrs.get("type") for s in page.tags("script")] == ["application/json", None]


def test_the_timeline_data_holds_every_copy_kernel_and_sync() -> None:
    html, runs = _page(NAIVE, BATCHED)
    data = json.loads(parse(html).by_id("timeline-data").text)
    assert [d["name"] for d in data] == ["naive", "batched"]
    for d, run in zip(data, runs):
        kinds = [r.kind for r in run.records]
        assert {ln["kind"]: ln["count"] for ln in d["lanes"]} == {k: kinds.count(k) for k in ("h2d", "d2h", "launch", "sync")}
        assert d["wall"] == run.meta.wall_ns
    assert len(data[0]["marks"]) == 3 and data[0]["marks"][0][1].startswith("OFF501 stencil.py:30 in main: saves ")
    page = parse(html)
    assert page.by_id("timeline-naive").attrs["data-run"] == "0" and page.by_id("timeline-batched").attrs["data-run"] == "1"


def test_two_runs_lead_with_the_comparison() -> None:
    html, runs = _page(NAIVE, BATCHED)
    page = parse(html)
    named_totals = [("naive", totals(runs[0], LINK)), ("batched", totals(runs[1], LINK))]
    assert page.by_id("headline-exact").text == exact_sentence(named_totals)
    assert page.by_id("headline-exact").text.startswith("batched: 20.7x fewer copies (3 vs 62)")
    assert page.by_id("headline-modelled").text.startswith("modelled on pcie5-x16: copies ")
    assert page.by_id("headline-measured").text.startswith("measured: batched is ")
    compare = {cells(r)[0]: cells(r)[1:] for r in page.tags("tr")
               if r.children and r.children[0].tag == "td" and len(r.children) == 4}
    assert compare["H2D copies"] == ["31", "1", "31x"] and compare["D2H bytes"] == ["12.4 MB", "800 kB", "15.5x"]
    assert compare["findings"] == ["3", "0", "-"]
    assert page.by_id("verdict-naive").attrs["data-kind"] == "transfer-bound"
    assert page.by_id("verdict-batched").attrs["data-kind"] == "host-bound"
    assert len(page.ids("finding-naive-")) == 3 and not page.ids("finding-batched-")
    assert html.index('id="comparison"') < html.index('id="run-naive"') < html.index('id="run-batched"')


def test_user_text_cannot_break_out_of_the_page() -> None:
    evil = Site("/w/app.py", 3, "f</script><script>alert(1)//", "x = '<b>&amp;</b>'", 1)
    run = Run(Meta(backend="numpy", device="host", mode="naive", started_at="", wall_ns=1000, cwd="/w",
                   argv=("app.py", "<i>")), (Record("h2d", 0, 10, 8, site=evil), Record("d2h", 20, 10, 8, site=evil)))
    html = render_page(named([run], ["<x>.json"], [analyse(run, None)]))
    page = parse(html)
    assert len(page.tags("script")) == 2
    assert "&amp;" not in [b.text for b in page.tags("b")] and all(i.attrs.get("class") for i in page.tags("i"))
    assert "alert(1)" in page.by_id("timeline-data").text
    assert json.loads(page.by_id("timeline-data").text)[0]["sites"][1] == "app.py:3 in f</script><script>alert(1)//"
    assert "x = '<b>&amp;</b>'" in cells(page.by_id("site-1"))[2]


def test_a_run_with_no_device_work_says_so() -> None:
    run = Run(Meta(backend="numpy", device="host", mode="batched", started_at="", wall_ns=1000, cwd="/w"), ())
    page = parse(render_page(named([run], ["empty.json"], [analyse(run, None)])))
    assert page.by_id("verdict").attrs["data-kind"] == "none"
    assert "no device work recorded" in page.by_id("verdict").text


def test_the_cell_report_is_built_from_the_same_parts() -> None:
    run = Run.load(NAIVE)
    findings, judged = analyse(run, LINK)
    where = file_where(run.meta.cwd)
    html = cell_html(named([run], ["x"], [(findings, judged)])[0], where=lambda s: "cell:" + where(s), link=LINK)
    page = parse(html)
    assert page.by_id("verdict").attrs["data-kind"] == "transfer-bound"
    assert cells(page.by_id("site-1"))[1] == "cell:stencil.py:30 in main"
    assert [page.by_id(i).attrs["data-code"] for i in page.ids("finding-")] == ["OFF501", "OFF501", "OFF503"]
    assert not page.tags("script") and not page.tags("canvas"), "a notebook may not run an output's script"


def test_report_and_compare_write_the_page(tmp_path: Path) -> None:
    out = tmp_path / "ci" / "report.html"
    proc = prof("report", str(NAIVE), "--format", "html", "-o", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "" and proc.stderr.strip() == f"offload-prof: wrote report {out}"
    assert parse(out.read_text()).by_id("verdict").attrs["data-kind"] == "transfer-bound"
    proc = prof("compare", str(NAIVE), str(BATCHED), "--format", "html", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("<!doctype html>") and 'id="comparison"' in proc.stdout
    proc = prof("report", str(NAIVE), "--format", "text", "-o", str(tmp_path / "r.txt"), cwd=tmp_path)
    assert proc.returncode == 0 and (tmp_path / "r.txt").read_text().startswith(f"trace    {NAIVE}")


@pytest.mark.parametrize("target", ["folder", "file/below"])
def test_an_output_that_cannot_be_written_is_one_line_and_exit_2(tmp_path: Path, target: str) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("")
    proc = prof("report", str(NAIVE), "--format", "html", "-o", str(tmp_path / target), cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("offload-prof: ")
