"""benchmarks/lint_trees.py writes each manifest repository's tree at its commit: files, links left out, errors."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .kit import ROOT

SPEC = importlib.util.spec_from_file_location("lint_trees", ROOT / "benchmarks" / "lint_trees.py")
assert SPEC is not None and SPEC.loader is not None
trees = importlib.util.module_from_spec(SPEC)
sys.modules["lint_trees"] = trees
SPEC.loader.exec_module(trees)

GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture()
def mirror(tmp_path: Path) -> tuple[Path, str, str]:
    """A bare mirror of `acme/solver` with two commits: (mirrors folder, first commit, second commit)."""
    work = tmp_path / "work"
    work.mkdir()
    _git(work, "init", "-q")
    (work / "pkg").mkdir()
    (work / "pkg" / "loop.py").write_text("import cupy\n")
    os.symlink("/etc/passwd", work / "link.py")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "one")
    first = _git(work, "rev-parse", "HEAD")
    (work / "pkg" / "loop.py").write_text("import cupy\nx = 1\n")
    _git(work, "commit", "-q", "-am", "two")
    second = _git(work, "rev-parse", "HEAD")
    mirrors = tmp_path / "mirrors"
    _git(tmp_path, "clone", "-q", "--bare", str(work), str(mirrors / "acme+solver" / "repo"))
    return mirrors, first, second


def _manifest(tmp_path: Path, commit: str, name: str = "m.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"repos": [{"repo": "acme/solver", "commit": commit}], "loops": [], "records": []}))
    return path


def test_the_tree_at_the_manifests_commit_is_written_without_links(tmp_path: Path, mirror, capsys) -> None:
    mirrors, first, _ = mirror
    out = tmp_path / "trees"
    code = trees.main([str(out), str(_manifest(tmp_path, first)), "--mirrors", str(mirrors),
                       "--cache", str(tmp_path / "cache")])
    assert code == 0
    assert (out / "acme+solver" / "pkg" / "loop.py").read_text() == "import cupy\n"  # the first commit's file
    assert not (out / "acme+solver" / "link.py").exists()
    assert not (out / "acme+solver" / ".git").exists()
    assert "[1/1] acme/solver " + first[:12] + ": 1 files into" in capsys.readouterr().out
    # run again: the tree is left alone unless --force
    assert trees.main([str(out), str(_manifest(tmp_path, first)), "--mirrors", str(mirrors)]) == 0
    assert "left alone" in capsys.readouterr().out


def test_a_commit_no_source_has_is_a_failure_with_its_reason(tmp_path: Path, mirror, capsys) -> None:
    mirrors, _, _ = mirror
    cache = tmp_path / "cache"
    # a clone in the cache without the commit and no remote to fetch it from: no network is tried
    _git(tmp_path, "init", "-q", "--bare", str(cache / "acme+solver.git"))
    code = trees.main([str(tmp_path / "trees"), str(_manifest(tmp_path, "0" * 40)), "--mirrors", str(mirrors),
                       "--cache", str(cache)])
    assert code == 1
    err = capsys.readouterr().err
    assert "acme/solver 000000000000: failed:" in err


def test_one_repository_at_two_commits_is_refused(tmp_path: Path, mirror) -> None:
    _, first, second = mirror
    with pytest.raises(SystemExit, match="acme/solver is named at two commits"):
        trees.wanted([_manifest(tmp_path, first, "a.json"), _manifest(tmp_path, second, "b.json")])


def test_records_of_a_labelled_list_name_their_commits(tmp_path: Path) -> None:
    path = tmp_path / "dev.json"
    path.write_text(json.dumps([{"repo": "a/b", "commit": "c" * 40, "path": "x.py", "line": 1},
                                {"repo": "a/b", "commit": "c" * 40, "path": "y.py", "line": 2}]))
    assert trees.wanted([path]) == [trees.Wanted("a/b", "c" * 40)]
