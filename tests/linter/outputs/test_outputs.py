"""Every output format of offload-lint against a snapshot: text, JSON, SARIF, GitHub, statistics and the fix diff.

The input is a small project written here: a loop that copies loop-invariant
data (OFF101, an unsafe hoisting fix) and reads a metric every iteration (OFF301), a
host-built array uploaded (OFF105, a safe fix), the same silenced with
`noqa`, one array passed as a kernel's InOut and In (OFF201, an
error), and a notebook whose cells hold a hoistable copy and a host-built
upload (cell positions, a fix per cell). The real command runs in a
subprocess in a temporary folder and names files relative to it; the SARIF
log's tool version is the one field replaced, so that no snapshot holds a
path of this machine or a version, and its rule list is checked apart from
the snapshot (which keeps the rules the results use). `pytest --snapshot-update` rewrites the
snapshots after a deliberate change.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..kit import CATALOG, run_cli

LOOP = """\
import cupy as cp
import numpy as np


def total(x, n):
    s = 0.0
    for i in range(n):
        d = cp.asarray(x)
        s += float(d.sum())
    return s


def fresh():
    return cp.asarray(np.zeros(1024))


def quiet():
    return cp.asarray(np.ones(8))  # noqa: OFF105
"""

ALIAS = """\
import numpy as np
from offload_core import In, InOut, kernel, offload


@kernel
def axpy(y: InOut, x: In, a: float) -> None:
    y += a * x


v = np.ones(16)
offload(axpy, v, v, 2.0)
"""


NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Explore\n"]},
        {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [],
         "source": ["%matplotlib inline\n", "import cupy as cp\n", "import numpy as np\n", "x = np.arange(8.0)"]},
        {"cell_type": "code", "execution_count": 2, "metadata": {},
         "outputs": [{"name": "stdout", "output_type": "stream", "text": ["28.0\n"]}],
         "source": ["for step in range(3):\n", "    d = cp.asarray(x)\n", "z = cp.asarray(np.zeros(8))"]},
    ],
    "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
    "nbformat": 4,
    "nbformat_minor": 5,
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "loop.py").write_text(LOOP)
    (tmp_path / "pkg" / "alias.py").write_text(ALIAS)
    (tmp_path / "pkg" / "explore.ipynb").write_text(json.dumps(NOTEBOOK, indent=1) + "\n")
    return tmp_path


def _lint(project: Path, *args: str, stderr: str = "") -> str:
    proc = run_cli("--no-cache", "--jobs", "1", *args, "pkg", cwd=project)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == stderr
    return proc.stdout


@pytest.mark.parametrize("fmt", ["text", "json", "github"])
def test_format(fmt: str, project: Path, text_snapshot: object) -> None:
    assert _lint(project, "--format", fmt, "--show-suppressed") == text_snapshot


def test_sarif(project: Path, text_snapshot: object) -> None:
    """The snapshot keeps the rules the results use, so that a rule added to the catalog does not change it."""
    log = json.loads(_lint(project, "--format", "sarif", "--show-suppressed"))
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["version"]
    driver["version"] = "<version>"
    rules = driver["rules"]
    assert [r["id"] for r in rules] == [r.id for r in CATALOG.rules.values() if r.kind == "static"]
    for result in run["results"]:
        assert rules[result.pop("ruleIndex")]["id"] == result["ruleId"]
    used = {result["ruleId"] for result in run["results"]}
    driver["rules"] = [r for r in rules if r["id"] in used]
    assert json.dumps(log, indent=2) + "\n" == text_snapshot


def test_statistics(project: Path, text_snapshot: object) -> None:
    assert _lint(project, "--statistics") == text_snapshot


def test_fix_diff(project: Path, text_snapshot: object) -> None:
    out = _lint(project, "--diff", "--unsafe-fixes", stderr="Would fix 4 findings in 2 files.\n")
    assert (project / "pkg" / "loop.py").read_text() == LOOP, "--diff writes nothing"
    assert (project / "pkg" / "explore.ipynb").read_text() == json.dumps(NOTEBOOK, indent=1) + "\n"
    assert out == text_snapshot
