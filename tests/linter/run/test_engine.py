"""The engine's own decisions before any check runs: the size limit (OFF903) and the collector pause."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from linter.config.rules import settings_for
from linter.run.engine import lint_text
from linter.inputs.notebooks import Notebook

from ..kit import APIS, CATALOG, DEFAULT, run_cli

BROKEN = "import cupy as cp\n\nd = cp.asarray(x\n"  # 36 bytes, and a syntax error


def _lint(text: str, limit: int, enabled: frozenset[str] = DEFAULT | {"OFF903"}):  # type: ignore[no-untyped-def]
    settings = settings_for(CATALOG.rules, enabled, {"OFF903": {"max-bytes": limit}})
    return lint_text(text, settings, APIS)


def test_the_default_limit_is_on_and_in_the_catalog() -> None:
    rule = CATALOG["OFF903"]
    assert rule.default_enabled and rule.severity == "warning"
    assert rule.options["max-bytes"] == 500_000


def test_code_over_the_limit_is_off903_and_never_parsed() -> None:
    result = _lint(BROKEN, limit=35)
    assert [(f.code, f.line, f.column) for f in result.findings] == [("OFF903", 1, 1)]  # no OFF901: not parsed
    assert result.findings[0].message == (
        "not analysed: 36 bytes of code is over the limit of 35 bytes; raise the OFF903 option max-bytes to lint it"
    )
    assert [f.code for f in _lint(BROKEN, limit=36).findings] == ["OFF901"]


def test_the_limit_counts_utf8_bytes_not_characters() -> None:
    text = "import cupy as cp\nname = '" + "\u00e9" * 10 + "'\n"  # 38 characters, 48 bytes
    assert len(text) == 38 and len(text.encode()) == 48
    assert [f.code for f in _lint(text, limit=47).findings] == ["OFF903"]
    assert _lint(text, limit=48).findings == ()


def test_zero_lifts_the_limit_and_ignoring_the_rule_does_not() -> None:
    assert [f.code for f in _lint(BROKEN, limit=0).findings] == ["OFF901"]
    hidden = _lint(BROKEN, limit=10, enabled=DEFAULT - {"OFF903"})
    assert hidden.findings == () and hidden.error is None  # still not parsed: no OFF901 either


def test_a_notebook_is_measured_by_its_code_and_reported_at_its_first_code_cell() -> None:
    cells = [{"cell_type": "markdown", "source": "x" * 5000},
             {"cell_type": "code", "outputs": [{"text": "y" * 5000}], "source": ["import cupy as cp\n", "x = 1"]}]
    nb = Notebook.parse(json.dumps({"cells": cells}).encode())
    settings = settings_for(CATALOG.rules, DEFAULT, {"OFF903": {"max-bytes": 30}})
    assert lint_text(nb.code, settings, APIS, cells=nb.map).findings == ()  # 24 bytes of code in a 10 kB file
    settings = settings_for(CATALOG.rules, DEFAULT, {"OFF903": {"max-bytes": 20}})
    [finding] = lint_text(nb.code, settings, APIS, cells=nb.map).findings
    assert (finding.code, finding.cell, finding.line, finding.column) == ("OFF903", 2, 1, 1)


@pytest.mark.parametrize("enabled_before", [True, False])
def test_the_collector_is_paused_only_while_a_file_is_linted(enabled_before: bool) -> None:
    was = gc.isenabled()
    try:
        (gc.enable if enabled_before else gc.disable)()
        seen: list[bool] = []
        import linter.run.engine as engine

        original = engine.build_index

        def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
            seen.append(gc.isenabled())
            return original(*args, **kwargs)

        engine.build_index = spy
        try:
            _lint("import cupy as cp\nfor i in range(3):\n    cp.asarray(x)\n", limit=0)
        finally:
            engine.build_index = original
        assert seen == [False]
        assert gc.isenabled() is enabled_before
    finally:
        (gc.enable if was else gc.disable)()


def test_the_limit_is_configuration(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("import cupy as cp\n" + "x = cp.zeros(3)\n" * 20)
    (tmp_path / "small.py").write_text("import cupy as cp\nimport numpy as np\nd = cp.asarray(np.zeros(3))\n")
    (tmp_path / "pyproject.toml").write_text("[tool.offload-lint.options.OFF903]\nmax-bytes = 100\n")
    proc = run_cli(".", "--no-cache", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.splitlines()[:2] == [
        "big.py:1:1: OFF903 not analysed: 338 bytes of code is over the limit of 100 bytes; "
        "raise the OFF903 option max-bytes to lint it",
        "small.py:3:5: OFF105 [*] cupy.asarray uploads an array that numpy.zeros just built on the host; "
        "create it on the device with cp.zeros(...)",
    ]
    (tmp_path / "pyproject.toml").write_text("[tool.offload-lint.options.OFF903]\nmax-bytes = '1 MB'\n")
    bad = run_cli(".", "--no-cache", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.strip().endswith("option OFF903.max-bytes must be int, got str")
