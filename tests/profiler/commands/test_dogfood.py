"""Dogfood: the project's own example is recorded on both paths and gated against committed baselines.

`make test` (and so CI) runs this, so a change to offload_core or the
example that adds, removes or resizes a copy fails here, with the gate's
own one-line messages. After an intended change, refresh the baselines:

    offload-prof run --mode both -o /tmp/heat.json -- tests/profiler/programs/heat.py 4096 10
    offload-prof gate /tmp/heat.naive.json --baseline tests/baselines/heat.naive.json --update-baseline
    offload-prof gate /tmp/heat.batched.json --baseline tests/baselines/heat.batched.json --update-baseline
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..kit import PROGRAMS, ROOT, prof

BASELINES = ROOT / "tests" / "baselines"


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dogfood")
    proc = prof("run", "--mode", "both", "-o", str(out / "heat.json"), "--",
                str(PROGRAMS.relative_to(ROOT) / "heat.py"), "4096", "10", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.mark.parametrize("mode", ["naive", "batched"])
def test_example_matches_its_baseline(traces: Path, mode: str) -> None:
    baseline = BASELINES / f"heat.{mode}.json"
    assert baseline.is_file(), f"missing {baseline}; create it as this module's docstring says"
    proc = prof("gate", str(traces / f"heat.{mode}.json"), "--baseline", str(baseline), cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("gate passed (")


def test_the_batched_path_has_no_findings_and_the_naive_path_is_caught(traces: Path) -> None:
    batched = prof("report", "--format", "json", str(traces / "heat.batched.json"), cwd=ROOT)
    naive = prof("report", "--format", "json", str(traces / "heat.naive.json"), cwd=ROOT)
    import json

    assert json.loads(batched.stdout)["findings"] == []
    assert [f["code"] for f in json.loads(naive.stdout)["findings"]] == ["OFF501", "OFF501"]
