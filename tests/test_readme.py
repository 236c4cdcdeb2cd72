"""The README's Python examples run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)


def test_readme_has_examples() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_readme_example_runs(code: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_")}
    env["OFFLOAD_BACKEND"] = "numpy"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_alias_example_prints_what_the_readme_says() -> None:
    block = next(b for b in BLOCKS if "AliasError" in b)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_")}
    proc = subprocess.run([sys.executable, "-c", block], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    promised = re.search(r"# (kernel 'daxpy'.*?), \.\.\.", block)
    assert promised and proc.stdout.startswith(promised.group(1))
