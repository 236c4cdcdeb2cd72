"""What the gate refuses (exit 2) instead of passing silently: failed targets, empty budgets, nothing to check, mismatches.

Exit 1 is the gate's word for "regression"; each case here once passed
(`gate passed (0 checks)`, or a pass on a run that stopped half way) and
now says why it cannot judge the run, with the option that accepts it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from profiler.cli import main
from profiler.model import Meta, Record, Run, Site

from ..kit import prof, script

SITE = Site("/work/app.py", 3, "<module>", "offload(k, x)", 1)


def run_of(*, mode: str = "batched", backend: str = "numpy", argv: tuple[str, ...] = ("app.py",), copies: int = 1,
           outcome: str = "ok", exit_code: int = 0, records: bool = True) -> Run:
    meta = Meta(backend=backend, device="host", mode=mode, started_at="2026-01-01T00:00:00+00:00", wall_ns=10_000,
                argv=argv, cwd="/work", outcome=outcome, exit_code=exit_code)  # type: ignore[arg-type]
    if not records:
        return Run(meta, ())
    launch = Record("launch", 0, 5, site=SITE, kernel="k", launch=0, mode=mode)
    return Run(meta, (launch, *(Record("h2d", 10 * i, 5, 800, site=SITE, kernel="k", launch=i, param="x", array=1,
                                       mode=mode) for i in range(copies))))


def _gate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()  # what came before
    rc = main(["gate", *argv])
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


@pytest.mark.parametrize("outcome, code, said", [
    ("exception", 1, "raised an exception (exit 1)"),
    ("interrupted", 130, "was interrupted (exit 130)"),
    ("exit", 3, "exited with status 3"),
])
def test_a_run_whose_target_failed_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              outcome: str, code: int, said: str) -> None:
    base = tmp_path / "base.json"
    assert main(["gate", str(run_of().save(tmp_path / "ok.json")), "--baseline", str(base), "--update-baseline"]) == 0
    failed = run_of(outcome=outcome, exit_code=code).save(tmp_path / "failed.json")
    rc, out, err = _gate(capsys, str(failed), "--baseline", str(base))
    assert (rc, out) == (2, "")
    assert err == (f"offload-prof: error: {failed}: the recorded target {said}, so it may have stopped short of the "
                   "program's copies; record a clean run, or pass --allow-failed-target\n")
    rc, out, _ = _gate(capsys, str(failed), "--baseline", str(base), "--allow-failed-target")
    assert (rc, out) == (0, "gate passed (1 check)\n")
    rc, _, err = _gate(capsys, str(failed), "--baseline", str(tmp_path / "new.json"), "--update-baseline")
    assert rc == 2 and "--allow-failed-target" in err and not (tmp_path / "new.json").exists(), \
        "no baseline is made from a failed run"
    assert main(["gate", str(failed), "--budget", str(script(tmp_path, "b.yaml", "h2d: 5\n"))]) == 2


def test_a_clean_sys_exit_is_a_clean_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    done = run_of(outcome="exit", exit_code=0).save(tmp_path / "done.json")
    assert _gate(capsys, str(done), "--baseline", str(done))[:2] == (0, "gate passed (1 check)\n")


def test_a_recorded_target_that_raised_is_refused_end_to_end(tmp_path: Path) -> None:
    script(tmp_path, "app.py", """\
        import sys
        import numpy as np
        from offload_core import offload
        from offload_core import In, kernel

        @kernel
        def touch(x: In) -> None:
            pass

        offload(touch, np.ones(10))
        if len(sys.argv) > 1:
            raise RuntimeError("half way")
    """)
    assert prof("run", "-o", "good.json", "--", "app.py", cwd=tmp_path).returncode == 0
    assert prof("run", "-o", "bad.json", "--", "app.py", "fail", cwd=tmp_path).returncode == 1
    proc = prof("gate", "bad.json", "--baseline", "good.json", "--allow-mismatch", cwd=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("offload-prof: error: bad.json: the recorded target raised an exception (exit 1)")


@pytest.mark.parametrize("budget, message", [
    ("", "the budget sets no limits; give h2d, d2h, syncs, launches, sites or time"),
    ("# nothing yet\nsites: []\n", "the budget sets no limits; give h2d, d2h, syncs, launches, sites or time"),
    ("sites:\n  - match: app.py\n", "sites[1] (app.py) sets no limit; give it h2d and/or d2h"),
])
def test_an_empty_budget_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], budget: str, message: str) -> None:
    run = run_of().save(tmp_path / "r.json")
    path = tmp_path / "budget.yaml"
    path.write_text(budget)
    rc, out, err = _gate(capsys, str(run), "--budget", str(path))
    assert (rc, out, err) == (2, "", f"offload-prof: error: {path}: {message}\n")


def test_a_trace_of_no_records_is_refused_unless_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = tmp_path / "base.json"
    assert main(["gate", str(run_of().save(tmp_path / "a.json")), "--baseline", str(base), "--update-baseline"]) == 0
    nothing = run_of(records=False).save(tmp_path / "nothing.json")
    rc, out, err = _gate(capsys, str(nothing), "--baseline", str(base))
    assert (rc, out) == (2, "")
    assert err == (f"offload-prof: error: {nothing}: the trace holds no records, so there is nothing to gate; "
                   "pass --allow-empty if an empty trace is expected\n")
    rc, out, _ = _gate(capsys, str(nothing), "--baseline", str(base), "--allow-empty")
    assert rc == 1 and "copies gone:" in out, "accepted, the empty run is then judged: its copies went missing"


def test_nothing_to_check_is_refused_unless_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = run_of(copies=0).save(tmp_path / "empty.json")
    rc, out, err = _gate(capsys, str(empty), "--baseline", str(empty))
    assert (rc, out) == (2, "")
    assert err == ("offload-prof: error: nothing to check: neither the run nor the baseline has copies, and no budget "
                   "limit applies; pass --allow-empty to accept that\n")
    assert _gate(capsys, str(empty), "--baseline", str(empty), "--allow-empty")[:2] == (0, "gate passed (0 checks)\n")


@pytest.mark.parametrize("other, differs", [
    (dict(mode="naive"), "mode 'naive', baseline 'batched'"),
    (dict(backend="cupy"), "backend 'cupy', baseline 'numpy'"),
    (dict(argv=("other.py",)), "command 'other.py', baseline 'app.py'"),
    (dict(argv=("app.py", "--steps", "9"), backend="cupy"),
     "command 'app.py --steps 9', baseline 'app.py'; backend 'cupy', baseline 'numpy'"),
])
def test_a_run_of_another_command_mode_or_backend_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             other: dict, differs: str) -> None:  # type: ignore[type-arg]
    base = tmp_path / "base.json"
    assert main(["gate", str(run_of().save(tmp_path / "a.json")), "--baseline", str(base), "--update-baseline"]) == 0
    stranger = run_of(**other).save(tmp_path / "b.json")
    rc, out, err = _gate(capsys, str(stranger), "--baseline", str(base))
    assert (rc, out) == (2, "")
    assert err == (f"offload-prof: error: {stranger} is not a run of what {base} was made from ({differs}); "
                   "compare like with like, or pass --allow-mismatch\n")
    assert _gate(capsys, str(stranger), "--baseline", str(base), "--allow-mismatch")[0] == 0


def test_the_script_may_be_named_either_way(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = tmp_path / "base.json"
    assert main(["gate", str(run_of(argv=("./app.py", "3")).save(tmp_path / "a.json")), "--baseline", str(base),
                 "--update-baseline"]) == 0
    assert json.loads(base.read_text())["command"] == "app.py 3"
    absolute = run_of(argv=("/work/app.py", "3")).save(tmp_path / "b.json")
    assert _gate(capsys, str(absolute), "--baseline", str(base))[:2] == (0, "gate passed (1 check)\n")


def test_a_baseline_without_a_command_is_compared_on_what_it_has(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = tmp_path / "base.json"
    assert main(["gate", str(run_of().save(tmp_path / "a.json")), "--baseline", str(base), "--update-baseline"]) == 0
    doc = json.loads(base.read_text())
    del doc["command"], doc["backend"]
    base.write_text(json.dumps(doc))
    other = run_of(argv=("elsewhere.py",), backend="cupy").save(tmp_path / "b.json")
    assert _gate(capsys, str(other), "--baseline", str(base))[0] == 0
    naive = run_of(**{"mode": "naive"}).save(tmp_path / "c.json")
    assert _gate(capsys, str(naive), "--baseline", str(base))[0] == 2


def test_a_regression_is_still_exit_1_and_only_that(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = tmp_path / "base.json"
    assert main(["gate", str(run_of().save(tmp_path / "a.json")), "--baseline", str(base), "--update-baseline"]) == 0
    more = run_of(copies=3).save(tmp_path / "more.json")
    rc, out, _ = _gate(capsys, str(more), "--baseline", str(base))
    assert rc == 1 and out.splitlines()[-1] == "gate FAILED: 1 of 1 check"


def test_the_gate_keeps_its_verdict_when_its_reader_goes_away(tmp_path: Path) -> None:
    import subprocess
    import sys

    from ..kit import env

    base = tmp_path / "base.json"
    assert main(["gate", str(run_of().save(tmp_path / "a.json")), "--baseline", str(base), "--update-baseline"]) == 0
    run_of(copies=400).save(tmp_path / "more.json")
    # the reader closes at once: the regression must still exit 1, not 0
    proc = subprocess.Popen([sys.executable, "-m", "profiler", "gate", "more.json", "--baseline", "base.json",
                             "--format", "github"], cwd=tmp_path, env=env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    with proc.stderr:
        err = proc.stderr.read()
    assert proc.wait(timeout=120) == 1, err
