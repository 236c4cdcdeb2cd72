"""The gate: exact counts and bytes per call site, kernel and direction; times with a tolerance; exit 0/1/2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from profiler.analysis.summary import Flow
from profiler.errors import ProfilerError, TraceError
from profiler.outputs.baseline import Baseline, FlowKey
from profiler.outputs.budget import Tolerance, parse_tolerance
from profiler.outputs.gate import FlowCheck, LimitCheck, TimeCheck, checks_for, evaluate, render

from ..kit import prof, record, script

PROGRAM = """\
import sys
import numpy as np
from offload_core import offload, region
from tests.offload_core.kit import daxpy, scale

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
x = np.ones(100)
y = np.zeros(100)
with region(x, y):
    for _ in range(steps):
        offload(daxpy, y, x, 1.0)
offload(scale, y, 0.5)
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "tests").symlink_to(Path(__file__).resolve().parents[2])
    script(tmp_path, "app.py", PROGRAM)
    return tmp_path


def _run(project: Path, name: str, *args: str, source: str | None = None) -> Path:
    if source is not None:
        script(project, "app.py", source)
    proc = prof("run", "-o", name, "--", "app.py", *args, cwd=project)
    assert proc.returncode == 0, proc.stderr
    return project / name


def test_baseline_keys_have_no_line_numbers(project: Path) -> None:
    trace = _run(project, "t.json")
    base = Baseline.load(trace)  # a trace works as a baseline too
    assert {(k.file, k.function, k.kernel, k.direction) for k in base.flows} == {
        ("app.py", "<module>", "(region)", "d2h"), ("app.py", "<module>", "(region)", "h2d"),
        ("app.py", "<module>", "scale", "d2h"), ("app.py", "<module>", "scale", "h2d")}
    mapped = FlowKey("app.py", "<module>", "with region(x, y):", "(region)", "h2d")
    assert base.flows[mapped] == Flow(2, 1600, base.flows[mapped].ns), "x and y mapped once"
    assert base.lines[mapped] == 9


def test_pass_regression_improvement(project: Path) -> None:
    base = project / "base.json"
    trace = _run(project, "t.json")
    proc = prof("gate", "t.json", "--baseline", "base.json", "--update-baseline", cwd=project)
    assert proc.returncode == 0 and "wrote baseline base.json (4 flows)" in proc.stderr
    assert json.loads(base.read_text())["format"] == "offload-prof-baseline"

    ok = prof("gate", str(trace), "--baseline", str(base), cwd=project)
    assert ok.returncode == 0 and ok.stdout == "gate passed (4 checks)\n"

    # Moving code keeps the baseline: sites match by file, function and line text.
    moved = _run(project, "moved.json", source="# a comment\n\n" + PROGRAM)
    assert prof("gate", str(moved), "--baseline", str(base), cwd=project).returncode == 0

    # A regression: the loop now runs outside the region.
    worse = PROGRAM.replace("with region(x, y):\n    for _ in range(steps):\n        offload", "for _ in range(steps):\n    offload")
    bad = _run(project, "bad.json", source=worse)
    proc = prof("gate", str(bad), "--baseline", str(base), cwd=project)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[-1] == "gate FAILED: 4 of 6 checks"
    assert "new copies: app.py in <module> `offload(daxpy, y, x, 1.0)` [daxpy] H2D: 6 copies, 4.8 kB (not in the baseline)" in lines
    assert "new copies: app.py in <module> `offload(daxpy, y, x, 1.0)` [daxpy] D2H: 3 copies, 2.4 kB (not in the baseline)" in lines
    assert any(l.startswith("copies gone: app.py in <module> `with region(x, y):` [(region)] H2D") for l in lines)


def test_count_changes_are_exact_both_ways(project: Path) -> None:
    base = _run(project, "base.json")
    more = project / "more.json"
    assert prof("run", "-o", "more.json", "--", "app.py", "5", cwd=project).returncode == 0
    # region copies do not depend on the step count: the gate sees no change, exactly as it should
    # (another argument is another command: comparing them is a choice the gate wants said)
    assert prof("gate", str(more), "--baseline", str(base), "--allow-mismatch", cwd=project).returncode == 0
    fewer = _run(project, "fewer.json", source=PROGRAM.replace("offload(scale, y, 0.5)\n", ""))
    proc = prof("gate", str(fewer), "--baseline", str(base), cwd=project)
    assert proc.returncode == 1 and "copies gone:" in proc.stdout and "accept with --update-baseline" in proc.stdout
    assert prof("gate", str(fewer), "--baseline", str(base), "--allow-fewer", cwd=project).returncode == 0


def test_github_and_json_formats(project: Path) -> None:
    base = _run(project, "base.json")
    bad = _run(project, "bad.json", source=PROGRAM.replace("offload(scale, y, 0.5)", "offload(scale, y, 0.5)\noffload(scale, x, 2.0)"))
    gh = prof("gate", str(bad), "--baseline", str(base), "--format", "github", cwd=project)
    assert gh.returncode == 1
    annotations = [l for l in gh.stdout.splitlines() if l.startswith("::error ")]
    assert annotations and all(l.startswith("::error file=app.py,line=") and "title=offload-prof gate::" in l for l in annotations)
    assert "more copies: app.py in <module> `offload(scale, x, 2.0)`" not in gh.stdout  # a different line text is a new site
    assert "new copies: app.py in <module> `offload(scale, x, 2.0)` [scale] H2D: 1 copy, 800 B" in gh.stdout
    doc = json.loads(prof("gate", str(bad), "--baseline", str(base), "--format", "json", cwd=project).stdout)
    assert doc["passed"] is False and doc["checks"] == 6 and {f["kind"] for f in doc["failures"]} == {"regression"}
    assert doc["failures"][0]["file"] == "app.py" and doc["failures"][0]["line"] == 13


def test_time_checks_need_a_tolerance(project: Path) -> None:
    base = _run(project, "base.json")
    slow = _run(project, "slow.json", "200")
    ok = prof("gate", str(slow), "--baseline", str(base), "--allow-mismatch", cwd=project)
    assert ok.returncode == 0, "times never gate without an explicit tolerance"
    proc = prof("gate", str(slow), "--baseline", str(base), "--allow-mismatch", "--time", "kernel:1%", cwd=project)
    assert proc.returncode == 1 and "kernel time " in proc.stdout and "beyond the tolerance of 1%" in proc.stdout
    assert prof("gate", str(slow), "--baseline", str(base), "--allow-mismatch", "--time", "kernel:10s",
                cwd=project).returncode == 0


def test_budget(project: Path) -> None:
    trace = _run(project, "t.json")
    (project / "budget.yaml").write_text(
        "h2d: {count: 2, bytes: 1KiB}\nd2h: 5\nsyncs: 1\nlaunches: 100\n"
        "sites:\n  - match: app.py:<module>\n    h2d: {count: 3}\n")
    proc = prof("gate", str(trace), "--budget", "budget.yaml", cwd=project)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "over budget: H2D count 3 > 2 (budget.yaml)",
        "over budget: H2D bytes 2.4 kB > 1.02 kB (budget.yaml)",
        "over budget: syncs count 2 > 1 (budget.yaml)",
        "gate FAILED: 3 of 6 checks",
    ]
    (project / "budget.yaml").write_text("h2d: {count: 3}\nsites:\n  - match: other.py\n    h2d: 0\n")
    assert prof("gate", str(trace), "--budget", "budget.yaml", cwd=project).returncode == 0


@pytest.mark.parametrize(
    "budget, message",
    [
        ("h2d: lots\n", "budget.yaml: h2d must be a count or {count: N, bytes: SIZE}"),
        ("h2d: {bytes: huge}\n", "budget.yaml: h2d: bytes 'huge' is not a size"),
        ("colour: red\n", "budget.yaml: unknown key(s) colour"),
        ("sites: [{h2d: 1}]\n", "budget.yaml: sites[1] needs a 'match' string"),
        ("time: {copy: fast}\n", "budget.yaml: time: copy tolerance 'fast' is not a duration"),
        ("time: {speed: 5%}\n", "budget.yaml: time: time field 'speed' is not one of wall, copy, h2d, d2h, kernel, sync"),
        ("h2d: [1\n", "budget.yaml: not a budget (invalid YAML"),
    ],
)
def test_bad_budgets_exit_2(project: Path, budget: str, message: str) -> None:
    trace = _run(project, "t.json")
    (project / "budget.yaml").write_text(budget)
    proc = prof("gate", str(trace), "--budget", "budget.yaml", "--baseline", str(trace), cwd=project)
    assert proc.returncode == 2 and proc.stderr.startswith(f"offload-prof: error: {message}"), proc.stderr
    assert proc.stderr.count("\n") == 1


def test_bad_gate_input_exits_2(project: Path) -> None:
    trace = _run(project, "t.json")
    cases = [
        (["gate", str(trace)], "gate needs --baseline BASE and/or --budget FILE"),
        (["gate", str(trace), "--baseline", "missing.json"], "missing.json: cannot read baseline file"),
        (["gate", str(trace), "--budget", "missing.yaml"], "missing.yaml: cannot read budget"),
        (["gate", str(trace), "--update-baseline"], "--update-baseline needs --baseline PATH"),
        (["gate", str(trace), "--baseline", str(trace), "--time", "copy"], "--time: 'copy' is not FIELD:TOLERANCE"),
        (["gate", "missing.json", "--baseline", str(trace)], "missing.json: cannot read trace file"),
    ]
    for args, message in cases:
        proc = prof(*args, cwd=project)
        assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, args
    (project / "b.json").write_text(json.dumps({"format": "offload-prof-baseline", "schema": 9, "flows": []}))
    proc = prof("gate", str(trace), "--baseline", "b.json", cwd=project)
    assert proc.returncode == 2 and "written with baseline schema 9, newer than this offload-prof reads (2)" in proc.stderr


def test_check_objects_return_one_line_failures() -> None:
    key = FlowKey("a.py", "f", "offload(k, x)", "k", "h2d")
    assert FlowCheck(key, Flow(2, 16), Flow(2, 16), 3).fails() is None
    f = FlowCheck(key, Flow(3, 24), Flow(2, 16), 3).fails()
    assert f is not None and f.message == "more copies: a.py in f `offload(k, x)` [k] H2D: count 3 (baseline 2), bytes 24 B (baseline 16 B)"
    assert (f.file, f.line, f.kind) == ("a.py", 3, "regression")
    assert FlowCheck(key, Flow(1, 8), Flow(2, 16), 3, allow_fewer=True).fails() is None
    assert TimeCheck(Tolerance("copy", percent=10), 1099, 1000).fails() is None
    slow = TimeCheck(Tolerance("copy", percent=10), 1200, 1000).fails()
    assert slow is not None and slow.message == "copy time 1.2 µs exceeds the baseline's 1 µs (+20%) beyond the tolerance of 10%"
    assert LimitCheck("H2D", 5, 4, "count", "b.yaml").fails().message == "over budget: H2D count 5 > 4 (b.yaml)"  # type: ignore[union-attr]
    result = evaluate([FlowCheck(key, Flow(3, 24), Flow(2, 16), 3), TimeCheck(Tolerance("wall", extra_ns=5), 10, 10)])
    assert (result.checks, len(result.failures), result.exit_code) == (2, 1, 1)
    assert render(result, "text").splitlines()[-1] == "gate FAILED: 1 of 2 checks"


def test_parse_tolerance() -> None:
    assert parse_tolerance("copy:20%") == Tolerance("copy", percent=20.0)
    assert parse_tolerance("wall=5ms") == Tolerance("wall", extra_ns=5_000_000)
    with pytest.raises(ProfilerError, match="time field 'cpu' is not one of"):
        parse_tolerance("cpu:5%")


def test_baseline_round_trip_and_errors(tmp_path: Path) -> None:
    run = record(PROGRAM.replace("int(sys.argv[1]) if len(sys.argv) > 1 else 3", "3"), tmp_path)
    base = Baseline.from_run(run)
    path = base.save(tmp_path / "sub" / "base.json")
    assert Baseline.load(path) == base
    data = json.loads(path.read_text())
    data["flows"][0]["direction"] = "sideways"
    path.write_text(json.dumps(data))
    with pytest.raises(TraceError, match="flow 0: direction 'sideways' is not h2d or d2h"):
        Baseline.load(path)
    assert not checks_for(run, None), "nothing to check without a baseline or budget"


def test_github_format_links_to_the_uploaded_html_report(project: Path) -> None:
    base = _run(project, "base.json")
    bad = _run(project, "bad.json", source=PROGRAM.replace("offload(scale, y, 0.5)", "offload(scale, y, 0.5)\noffload(scale, x, 2.0)"))
    url = "https://github.com/o/r/actions/runs/7/artifacts/9"
    gh = prof("gate", str(bad), "--baseline", str(base), "--format", "github", "--report-url", url, cwd=project)
    assert gh.returncode == 1
    errors = [l for l in gh.stdout.splitlines() if l.startswith("::error ")]
    assert errors and all(l.endswith(f" (HTML report: {url})") for l in errors)
    assert f"::notice title=offload-prof report::HTML report of this run: {url}" in gh.stdout.splitlines()
    # the same from the environment, as a workflow sets it once; the text format stays as it was
    env = prof("gate", str(bad), "--baseline", str(base), "--format", "github", cwd=project, OFFLOAD_PROF_REPORT_URL=url)
    assert env.stdout == gh.stdout
    text = prof("gate", str(bad), "--baseline", str(base), cwd=project, OFFLOAD_PROF_REPORT_URL=url)
    assert url not in text.stdout and text.returncode == 1
    plain = prof("gate", str(bad), "--baseline", str(base), "--format", "github", cwd=project)
    assert "HTML report" not in plain.stdout
