"""The project's own set-up: what `make clean` removes, and pytest options that keep `make test` working."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_clean_removes_what_the_tools_leave_behind(tmp_path: Path) -> None:
    shutil.copy(ROOT / "Makefile", tmp_path / "Makefile")
    left = [".venv", "build", ".pytest_cache", ".offload-lint-cache", ".hypothesis"]
    for name in left:
        (tmp_path / name / "sub").mkdir(parents=True)
        (tmp_path / name / "sub" / "file").write_text("x")
    (tmp_path / "keep.py").write_text("kept\n")
    proc = subprocess.run(["make", "clean"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Makefile", "keep.py"]


def test_pytest_asyncio_has_nothing_to_warn_about_at_start_up() -> None:
    # Warnings raised while plugins configure themselves escape filterwarnings in
    # pytest 8 but end the run with an INTERNALERROR in pytest 9; -W error makes
    # them errors here too, whichever pytest is installed.
    proc = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-m", "pytest", "--collect-only", "-q",
         "-p", "no:cacheprovider", "tests/test_import_hygiene.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert "INTERNALERROR" not in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-3000:]
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
