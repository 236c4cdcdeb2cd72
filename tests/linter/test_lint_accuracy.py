"""benchmarks/lint_accuracy.py scores findings against a manifest: kept, left, caught, unknown, judged."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from .kit import ROOT

SPEC = importlib.util.spec_from_file_location("lint_accuracy", ROOT / "benchmarks" / "lint_accuracy.py")
assert SPEC is not None and SPEC.loader is not None
accuracy = importlib.util.module_from_spec(SPEC)
sys.modules["lint_accuracy"] = accuracy  # dataclasses look their module up there
SPEC.loader.exec_module(accuracy)

CODE = """\
import cupy as cp
import torch

def f(x, n, model, loader, dev):
    for i in range(n):
        d = cp.asarray(x)
    total = 0.0
    for a, b in loader:
        loss = model(a.to(dev)).sum()
        total += loss.item()
    w = cp.zeros(3).sum()
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    repo = tmp_path / "trees" / "someone+gpu"
    repo.mkdir(parents=True)
    (repo / "train.py").write_text(CODE)
    return tmp_path


def record(line: int, rule: str, verdict: str, **extra: object) -> dict[str, object]:
    return {"repo": "someone/gpu", "path": "train.py", "line": line, "rule": rule, "verdict": verdict,
            "reason": f"{verdict} at {line}", **extra}


def test_scores_kept_left_caught_and_unknown(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tree / "manifest.json"
    manifest.write_text(json.dumps([
        record(6, "OFF101", "tp"),            # kept
        record(10, "OFF104", "fn"),           # caught (by OFF301 on that line)
        record(11, "OFF103", "fn"),           # missed: no finding on that line
        record(3, "OFF101", "fp"),            # a known false positive that is gone
    ]))
    markdown = tree / "judged.md"
    assert accuracy.main([str(tree / "trees"), str(manifest), "--runs", "default", "--jobs", "1",
                          "--markdown", str(markdown)]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("OFF")}
    assert rows["OFF101"][1:3] == ["1", "1/1"]          # one finding, the TP kept
    assert rows["OFF101"][4:6] == ["0/1", "(0%)"]       # the FP left: none
    assert "misses still missed: 1" in out
    assert "precision: 2/2 right (100.0%)" in out        # the TP and the caught miss
    assert "| someone/gpu |" not in markdown.read_text()  # nothing unknown to list


def test_unknown_findings_are_listed_and_judgements_count(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tree / "manifest.json"
    manifest.write_text(json.dumps([record(6, "OFF101", "tp")]))
    judged = tree / "judged.json"
    judged.write_text(json.dumps([record(10, "OFF301", "fp", run="default")]))
    markdown = tree / "judged.md"
    accuracy.main([str(tree / "trees"), str(manifest), "--runs", "default", "--jobs", "1", "--judged", str(judged),
                   "--markdown", str(markdown)])
    out = capsys.readouterr().out
    assert "precision: 1/2 right (50.0%)" in out
    assert "[fp] someone/gpu train.py:10 OFF301" in out
    assert "| someone/gpu | `train.py:10` | OFF301 | fp | fp at 10 |" in markdown.read_text()


def test_a_missing_tree_is_one_line(tmp_path: Path) -> None:
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps([record(1, "OFF101", "tp")]))
    with pytest.raises(SystemExit, match="no checkout for someone/gpu .* someone\\+gpu"):
        accuracy.main([str(tmp_path), str(manifest)])


def test_code_nobody_labelled_gives_recall_of_hand_read_costs(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The second mode: loops read by hand, the costs found there, every finding judged or sent to a worksheet."""
    manifest = tree / "unseen.json"
    manifest.write_text(json.dumps({
        "repos": [{"repo": "someone/gpu", "commit": "0" * 40, "library": "cupy", "python_lines": 11}],
        "loops": [{"repo": "someone/gpu", "path": "train.py", "line": 5, "costs": 1},
                  {"repo": "someone/gpu", "path": "train.py", "line": 8, "costs": 1}],
        "records": [record(6, "OFF101", "fn"), record(9, "OFF109", "fn")],
    }))
    sheet = tree / "sheet.json"
    assert accuracy.main([str(tree / "trees"), str(manifest), "--runs", "default", "--jobs", "1",
                          "--worksheet", str(sheet)]) == 0
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines() if line.startswith("someone/gpu"))
    assert row[2] == "2"                              # loops read
    assert row[3:5] == ["1/2", "(50%)"]               # the copy at line 6 caught, line 9 not
    unjudged = json.loads(sheet.read_text())
    assert row[5:] == ["1/2", "(50%)", "1"]           # the caught copy right, the .item() not judged yet
    assert [(u["line"], u["rule"]) for u in unjudged] == [(10, "OFF301")]
    assert ">   10          total += loss.item()" in unjudged[0]["code"]


def test_a_notebook_record_names_its_cell(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Lines of a notebook count within a cell, so a record there says which cell; the same line of another
    cell is another place, and the worksheet quotes the cell's own lines."""
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# a notebook\n"]},
             {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": ["import cupy as cp\n", "x = [1.0, 2.0]\n"]},
             {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
              "source": ["for i in range(100):\n", "    d = cp.asarray(x)\n"]}]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tree / "trees" / "someone+gpu" / "demo.ipynb").write_text(json.dumps(notebook))
    manifest = tree / "unseen.json"
    nb = {"repo": "someone/gpu", "path": "demo.ipynb", "rule": "OFF101", "verdict": "fn", "reason": "an upload"}
    manifest.write_text(json.dumps({
        "repos": [{"repo": "someone/gpu", "commit": "0" * 40, "library": "cupy"}],
        "loops": [{"repo": "someone/gpu", "path": "demo.ipynb", "line": 1, "costs": 1}],
        "records": [{**nb, "cell": 3, "line": 2}, {**nb, "cell": 2, "line": 2}],
    }))
    sheet = tree / "sheet.json"
    assert accuracy.main([str(tree / "trees"), str(manifest), "--runs", "default", "--jobs", "1",
                          "--worksheet", str(sheet)]) == 0
    out = capsys.readouterr().out
    row = next(line.split() for line in out.splitlines() if line.startswith("someone/gpu"))
    assert row[3:5] == ["1/2", "(50%)"]               # cell 3's upload caught; line 2 of cell 2 is not it
    assert "[unjudged] someone/gpu train.py:10 OFF301" in out
    assert all(u["path"] == "train.py" for u in json.loads(sheet.read_text()))
