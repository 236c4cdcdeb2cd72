"""Device values handed across files: a helper's parameter is on the device when the project's calls say so.

Small self-written cases of issue 31's first point: a helper in one file that
a loop in another calls with a device array (`normalise(A @ v)`), whose
parameter its own file cannot know.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from linter.analysis.callgraph import Summary
from linter.findings import FileResult
from linter.run.handed import project_params, told

from ..kit import run_cli

HELPER = """import cupy as cp


def normalise(v):
    total = v.sum()
    if total > 0:
        v = v / total
    return v
"""

LOOP = """import cupy as cp

from pkg.ops import normalise


def power(A, steps):
    A = cp.asarray(A)
    v = cp.ones(A.shape[1])
    for _ in range(steps):
        v = normalise(A @ v)
    return v
"""


def lint(tmp_path: Path, helper: str, loop: str, extra: str | None = None) -> list[dict[str, object]]:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "ops.py").write_text(helper)
    (pkg / "solve.py").write_text(loop)
    if extra is not None:
        (pkg / "other.py").write_text(extra)
    done = run_cli("--format", "json", "--no-cache", "--exit-zero", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return [d for d in json.loads(done.stdout) if d["code"] == "OFF104"]


def test_a_parameter_a_loop_in_another_file_hands_a_device_array_is_on_the_device(tmp_path: Path) -> None:
    found = lint(tmp_path, HELPER, LOOP)
    assert [(d["path"], d["line"]) for d in found] == [("pkg/ops.py", 6)]
    assert "every call of `normalise` (a loop in `power` (pkg/solve.py) calls it)" in str(found[0]["message"])


def test_a_host_value_from_any_caller_keeps_the_parameter_unknown(tmp_path: Path) -> None:
    host = "import cupy as cp\nimport numpy as np\n\nfrom pkg.ops import normalise\n\n\ndef once():\n    return normalise(np.ones(3))\n"
    assert lint(tmp_path, HELPER, LOOP, host) == []


def test_a_helper_that_downloads_its_parameter_first_is_not_told(tmp_path: Path) -> None:
    helper = HELPER.replace("    total = v.sum()\n", "    v = v.get()\n    total = v.sum()\n")
    assert lint(tmp_path, helper, LOOP) == []


def test_a_helper_run_once_is_not_told(tmp_path: Path) -> None:
    loop = LOOP.replace("    for _ in range(steps):\n        v = normalise(A @ v)\n", "    v = normalise(A @ v)\n")
    assert lint(tmp_path, HELPER, loop) == []


def result(path: str, **fields: object) -> FileResult:
    return FileResult(path, summary=Summary(**fields))  # type: ignore[arg-type]


def test_the_join_resolves_calls_and_drops_disagreements() -> None:
    done = {
        "a.py": result("a.py", functions=("a.step", "a.Model.__init__"), looping=("a.step",)),
        "b.py": result("b.py", device_args=(("a.step", "0", "cupy"), ("a.step", "1", "cupy"), ("a.Model", "0", "torch"),
                                             ("a.step", "scale", "cupy"))),
        "c.py": result("c.py", device_args=(("a.step", "1", "host"), ("a.step", "scale", "torch"))),
    }
    assert project_params(done, {"a.py": {}}) == {"a.py": {"a.step": {"0": "cupy"}}}  # Model.__init__ runs once
    assert told({"a.step": {"0": "cupy"}}) == ("param:a.step:0:cupy",)


@pytest.mark.parametrize("hot", [{}, {"a.py": {}}])
def test_nothing_handed_is_nothing_told(hot: dict) -> None:  # type: ignore[type-arg]
    assert project_params({"a.py": result("a.py", functions=("a.f",))}, hot) == {}
    assert told(None) == ()
