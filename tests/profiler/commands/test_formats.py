"""`--format` of report, compare, gate and export: the option offers exactly what its command's table writes.

Each command keeps one table from format name to writer (`FORMATS`);
the parser's choices are read from it. So every name the table holds is
accepted and writes its output, and any other is argparse's one-line
refusal (exit 2) naming the table's formats, in the table's order.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from profiler.cli import main
from profiler.commands import compare, export, gate, report

from ..kit import ROOT

NAIVE, BATCHED = ROOT / "tests" / "data" / "stencil.naive.json", ROOT / "tests" / "data" / "stencil.batched.json"


@pytest.fixture
def traces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(NAIVE, tmp_path / "n.json")
    shutil.copy(BATCHED, tmp_path / "b.json")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OFFLOAD_PROF_REPORT_URL", raising=False)
    assert main(["gate", "n.json", "--baseline", "base.json", "--update-baseline"]) == 0
    return tmp_path


#: command -> (its table, the arguments before `--format`)
COMMANDS = {
    "report": (report.FORMATS, ["report", "n.json"]),
    "compare": (compare.FORMATS, ["compare", "n.json", "b.json"]),
    "gate": (gate.FORMATS, ["gate", "n.json", "--baseline", "base.json"]),
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_format_in_the_table_writes_its_output(traces: Path, command: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    table, argv = COMMANDS[command]
    capsys.readouterr()
    outputs = {}
    for fmt in table:
        assert main([*argv, "--format", fmt]) == 0, fmt
        outputs[fmt] = capsys.readouterr().out
    assert all(outputs.values()), [f for f, text in outputs.items() if not text]
    assert len(set(outputs.values())) == len(outputs), "each format writes something of its own"
    if "json" in outputs:
        assert isinstance(json.loads(outputs["json"]), dict)
    if "html" in outputs:
        assert outputs["html"].startswith("<!doctype html>")


def test_every_export_format_writes_its_file_under_its_suffix(traces: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for fmt, chosen in export.FORMATS.items():
        assert main(["export", "n.json", "--format", fmt]) == 0, fmt
        written = traces / f"n{chosen.suffix}"
        assert json.loads(written.read_text()), fmt
        assert capsys.readouterr().err == f"offload-prof: wrote {written.name} (1 run){chosen.note}\n"


@pytest.mark.parametrize("command", [*COMMANDS, "export"])
def test_a_format_not_in_the_table_is_refused_in_one_line(traces: Path, command: str,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    table, argv = COMMANDS[command] if command in COMMANDS else (export.FORMATS, ["export", "n.json"])
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--format", "xml"])
    assert exc.value.code == 2
    choices = ", ".join(repr(name) for name in table)
    assert capsys.readouterr().err == (f"offload-prof: error: {command}: argument --format: invalid choice: 'xml' "
                                       f"(choose from {choices})\n")
