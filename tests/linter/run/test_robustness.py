"""No input crashes the linter: the standard library, random programs, and hostile bytes.

The command is run over the whole standard library and over random programs from
hypothesmith (exit code 0 or 1, never 2); in-process, the checks run on random programs
and on a sample of the standard library with the prefilter off, so every check sees them.
"""

from __future__ import annotations

import sysconfig
from pathlib import Path

import hypothesmith
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from linter.config.rules import settings_for
from linter.run.engine import lint_bytes

from ..kit import APIS, CATALOG, lint, run_cli

STDLIB = Path(sysconfig.get_paths()["stdlib"])
HEADER = "import cupy as cp\nimport numpy as np\nimport torch\nfrom offload_core import *\n"
ALL = frozenset(c for c, r in CATALOG.rules.items() if r.kind == "static")
SETTINGS = settings(
    max_examples=60, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)


def test_the_standard_library_lints_without_error(tmp_path: Path) -> None:
    proc = run_cli(str(STDLIB), "--no-cache", "--exit-zero", "--select", "ALL", cwd=tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "internal error" not in proc.stderr


def test_a_sample_of_the_standard_library_through_every_check() -> None:
    files = sorted(p for p in STDLIB.rglob("*.py") if "site-packages" not in p.parts)[::12]
    assert len(files) > 100
    for path in files:
        result, _ = lint_bytes(path.read_bytes(), settings_for(CATALOG.rules, ALL), APIS, prefilter=False, path=str(path))
        assert result.error is None, f"{path}: {result.error}"


@SETTINGS
@given(hypothesmith.from_grammar())
def test_random_grammar_programs_never_crash_a_check(source: str) -> None:
    result = lint(HEADER + source, select=ALL, prefilter=False)
    assert result.error is None, result.error


@SETTINGS
@given(hypothesmith.from_node())
def test_random_syntax_trees_never_crash_a_check(source: str) -> None:
    result = lint(HEADER + source, select=ALL, prefilter=False)
    assert result.error is None, result.error
    assert all(f.code != "OFF901" or f.line >= 1 for f in result.findings)


@settings(max_examples=4, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(hypothesmith.from_grammar(), hypothesmith.from_node()))
def test_the_command_on_random_programs_exits_zero_or_one(tmp_path_factory: pytest.TempPathFactory, source: str) -> None:
    folder = tmp_path_factory.mktemp("random")
    (folder / "program.py").write_text(HEADER + source, encoding="utf-8")
    proc = run_cli(".", "--no-cache", "--select", "ALL", cwd=folder)
    assert proc.returncode in (0, 1), proc.stderr
    assert "internal error" not in proc.stderr


@pytest.mark.parametrize(
    "data",
    [
        b"", b"\n", b"\x00\x00import cupy", b"import cupy\n" + b"(" * 5000 + b")" * 5000,
        b"import cupy\nx = " + b"-" * 20000 + b"1\n", b"\xff\xfe\x00i\x00m\x00p", b"import cupy\n\r\r\n\x0c\tx=1",
        b"# coding: made-up\nimport cupy\n", b"import cupy\nf'{'\n", "import cupy\nπ = 'ü'\n".encode(),
        b"import cupy\n" + b"for i in x:\n " * 60 + b"  cupy.asarray(i)\n",
    ],
    ids=lambda d: repr(d[:20]),
)
def test_hostile_bytes(data: bytes) -> None:
    result, _ = lint_bytes(data, settings_for(CATALOG.rules, ALL), APIS, prefilter=False)
    assert result.error is None, result.error
