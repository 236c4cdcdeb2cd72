"""`offload-prof report` and `compare`: totals, top call sites, findings, ratios; modelled costs labelled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from profiler.analysis.detectors import detect
from profiler.model import Run
from profiler.outputs.report import render_compare, render_report

from ..kit import PROGRAMS, ROOT, prof
from ..timelines import Timeline as Hand


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("traces")
    proc = prof("run", "--mode", "both", "-o", str(out / "heat.json"), "--", str(PROGRAMS / "heat.py"), "2048", "8", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return out / "heat.naive.json", out / "heat.batched.json"


def test_report_text(traces: tuple[Path, Path]) -> None:
    naive = traces[0]
    proc = prof("report", str(naive), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    run = Run.load(naive)
    assert f"trace    {naive}" in out and "mode naive" in out
    assert "H2D copies      16  262 kB" in out and "D2H copies      16  262 kB" in out
    assert "modelled (pcie5-x16)" in out and "modelled costs: the NumPy backend's copies are host memcpys" in out
    assert "tests/profiler/programs/heat.py:19 in heat" in out and "tests/profiler/programs/heat.py:20 in heat" in out
    assert ". offload(smooth, scratch, u)" in out and ". offload(smooth, u, scratch)" in out
    verdict = out.splitlines()[3]
    assert verdict.startswith("verdict  host-bound: device busy "), "what bounded the run, under the header"
    assert "most before the first device operation (start-up, " in verdict, "the target's imports and set-up"
    assert out.splitlines()[4].startswith("helps    "), "what kind of change can help, under the verdict"
    assert "findings (2), largest expected saving first" in out
    # 2048 points: fixing either saves well under the 5 ms that make a warning
    assert out.count("OFF501 [info] keep resident, saves ") == 2
    assert out.count("offload(smooth) copies 'src' (H2D), 'dst' (D2H) on each of 8 launches") == 2
    saves = [f.expected_saving_ns or 0 for f in detect(run)]
    assert saves == sorted(saves, reverse=True) and all(0 < s < 5_000_000 for s in saves)
    assert "(static: OFF102, OFF101)" in out
    assert len(run.records) > 0


def test_report_measured_only_and_json(traces: tuple[Path, Path]) -> None:
    text = prof("report", "--no-model", str(traces[0]), cwd=ROOT).stdout
    assert "modelled" not in text
    proc = prof("report", "--format", "json", str(traces[0]), cwd=ROOT)
    doc = json.loads(proc.stdout)
    assert doc["totals"]["h2d"]["count"] == 16 and doc["link"]["name"] == "pcie5-x16"
    assert [f["code"] for f in doc["findings"]] == ["OFF501", "OFF501"]
    assert doc["findings"][0]["site"]["text"].startswith("offload(smooth")
    assert doc["meta"]["mode"] == "naive"
    saves = [f["expected_saving_ns"] for f in doc["findings"]]
    assert all(isinstance(s, int) and s > 0 for s in saves) and saves == sorted(saves, reverse=True)
    assert {f["fix"] for f in doc["findings"]} == {"keep resident"}
    verdict = doc["verdict"]
    assert verdict["kind"] == "host-bound" and verdict["wall_ns"] == doc["meta"]["wall_ns"]
    assert verdict["kernel_ns"] + verdict["copy_ns"] + verdict["wait_idle_ns"] + verdict["host_idle_ns"] == \
        verdict["wall_ns"]
    assert verdict["launches"] == 16 and verdict["evidence"].startswith("the device sat idle ")
    assert verdict["causes"][0]["reason"] == "start-up" and verdict["causes"][0]["site"] is None


def test_report_on_another_link_and_a_bad_one(traces: tuple[Path, Path], tmp_path: Path) -> None:
    link = tmp_path / "slow.yaml"
    link.write_text("name: slow\nh2d_pageable_gbps: 1\nd2h_pageable_gbps: 1\nlatency_us: 100\n")
    out = prof("report", "--link", str(link), str(traces[0]), cwd=ROOT).stdout
    assert "modelled (slow)" in out
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nh2d_pageable_gbps: fast\n")
    proc = prof("report", "--link", str(bad), str(traces[0]), cwd=ROOT)
    assert proc.returncode == 2 and proc.stderr.startswith(f"offload-prof: error: {bad}: missing key 'd2h_pageable_gbps'")


def test_compare_side_by_side(traces: tuple[Path, Path]) -> None:
    proc = prof("compare", str(traces[0]), str(traces[1]), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    lines = {line.split("  ")[1].strip(): line.split() for line in out.splitlines() if line.startswith("  ") and "  " in line[2:]}
    assert lines["H2D copies"][-3:] == ["16", "1", "16x"]
    assert lines["D2H copies"][-3:] == ["16", "2", "8x"]
    assert lines["syncs"][-3:] == ["16", "1", "16x"]
    assert lines["launches"][-3:] == ["16", "16", "1x"]
    assert "copy time modelled (pcie5-x16)" in out and "findings, naive (2)" in out and "findings, batched (0)" in out
    assert "call sites with copies" in out and "heat.py:17 in heat" in out, "the batched run's region site is listed too"
    head = out.splitlines()
    assert head[2].startswith("verdict  naive: host-bound: ") and head[3].startswith("verdict  batched: host-bound: ")


def test_renderers_are_functions_of_the_run(traces: tuple[Path, Path]) -> None:
    a, b = Run.load(traces[0]), Run.load(traces[1])
    first = render_report(a, detect(a), path="x")
    assert first == render_report(a, detect(a), path="x")
    assert "top call sites by copy time" in first and "modelled" not in first
    text = render_compare(a, b, detect(a), detect(b), paths=("a", "b"))
    assert text.startswith("compare  a (naive)  vs  b (batched)")


def test_report_notes_skipped_fingerprint_rules(tmp_path: Path) -> None:
    proc = prof("run", "--no-fingerprints", "-o", str(tmp_path / "t.json"), "--", str(PROGRAMS / "heat.py"), "64", "1", cwd=ROOT)
    assert proc.returncode == 0
    out = prof("report", str(tmp_path / "t.json"), cwd=ROOT).stdout
    assert "note: OFF502 and OFF503 compare copied contents and were skipped" in out


@pytest.mark.parametrize(("backend", "regions"), [("cupti", ""), ("rocprof", ""), ("cupy", " in 0 region(s)")])
def test_regions_are_counted_only_where_offload_core_could_have_made_them(backend: str, regions: str) -> None:
    """A PyTorch program recorded through CUPTI has no offload_core regions; saying "in 0 region(s)" is noise."""
    h = Hand(backend=backend)
    h.kernel(10, 5, line=3)
    run = h.run(20)
    wall = next(line for line in render_report(run, (), path="t.json").splitlines() if line.startswith("wall "))
    assert wall.endswith("1 launch" + regions)
