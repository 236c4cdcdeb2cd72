"""The real `pre-commit try-repo` against a temporary git repository: the hook fails on a bad
file, the fix hook repairs it, and the hook passes afterwards.

pre-commit builds the hook's virtualenv by installing this project with pip, as it would for
a user, so this test takes a minute and needs the package index the project installs from.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .kit import ROOT

BAD = "import cupy as cp\nimport numpy as np\n\nd = cp.asarray(np.zeros(1024))\n"


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_pre_commit_hooks_fail_then_fix_then_pass(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OFFLOAD_", "PRE_COMMIT", "GIT_"))}
    env.update(PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    for args in (["git", "init", "-q"], ["git", "config", "commit.gpgsign", "false"]):
        assert _run(args, repo, env).returncode == 0
    (repo / "gpu.py").write_text(BAD)
    assert _run(["git", "add", "gpu.py"], repo, env).returncode == 0
    pre_commit = [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT)]

    failed = _run([*pre_commit, "offload-lint", "--all-files"], repo, env)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "gpu.py:4:5: OFF105 [*]" in failed.stdout

    fixed = _run([*pre_commit, "offload-lint-fix", "--all-files"], repo, env)
    assert fixed.returncode == 1, fixed.stdout + fixed.stderr  # pre-commit fails a hook that changed files
    assert "files were modified by this hook" in fixed.stdout
    assert (repo / "gpu.py").read_text() == "import cupy as cp\nimport numpy as np\n\nd = cp.zeros(1024)\n"

    passed = _run([*pre_commit, "offload-lint", "--all-files"], repo, env)
    assert passed.returncode == 0, passed.stdout + passed.stderr
