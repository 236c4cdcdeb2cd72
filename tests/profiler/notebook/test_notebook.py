"""`%load_ext profiler` and `%%offload_prof` in a real notebook, executed by nbclient in a real IPython kernel.

The notebook runs on the NumPy backend: a naive loop (a copy each way per
launch), the same loop in a region, a cell that raises, and bad options;
the assertions read what the kernel produced, as Jupyter would show it.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from ..outputs.html.dom import cells, parse

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (pip install -e '.[test]')")
nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (pip install -e '.[test]')")
pytest.importorskip("ipykernel", reason="ipykernel is not installed (pip install -e '.[test]')")

SETUP = """\
import numpy as np
from offload_core import In, InOut, kernel, offload, region

@kernel
def daxpy(y: InOut, x: In, a: float) -> None:
    y += a * x

def step(y, x):
    offload(daxpy, y, x, 2.0)

x = np.ones(1_000_000)
y = np.zeros_like(x)"""

CELLS = [
    "%load_ext profiler",
    SETUP,
    "%%offload_prof --mode naive -o naive.json\nfor _ in range(30):\n    offload(daxpy, y, x, 2.0)\nsteps = 30",
    "%%offload_prof\nwith region(x, y):\n    for _ in range(30):\n        step(y, x)",
    "%%offload_prof --mode naive\nstep(y, x)\nraise ValueError('stop here')",
    "%%offload_prof --top 0\npass",
    "%%offload_prof --source nothing\npass",
    "import offload_core\nprint(offload_core.get_mode(), steps)",
    "%%offload_prof --source cupti\npass",
    "ran = 0\n%mkdir folder",
    "%%offload_prof -o folder\nran = 1",
    "print(ran)",
]


def execute(sources: list[str], folder: Path, **env: str) -> list[Any]:
    """Run a notebook of `sources` in a fresh kernel of this interpreter; each cell's outputs."""
    # a kernel spec of this interpreter, so the kernel imports this checkout whatever else Jupyter has installed
    spec = folder / "jupyter" / "kernels" / "offload-test"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "offload-guard tests", "language": "python", "env": env}))
    mp = pytest.MonkeyPatch()
    mp.setenv("JUPYTER_PATH", str(folder / "jupyter"))
    mp.setenv("JUPYTER_PLATFORM_DIRS", "1")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in sources]
    try:
        client = nbclient.NotebookClient(nb, timeout=300, kernel_name="offload-test", allow_errors=True,
                                         resources={"metadata": {"path": str(folder)}})
        client.execute()
    finally:
        mp.undo()
    nbformat.write(nb, folder / "executed.ipynb")
    return [c.outputs for c in nb.cells]


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Any], Path]:
    folder = tmp_path_factory.mktemp("notebook")
    return execute(CELLS, folder, OFFLOAD_BACKEND="numpy", OFFLOAD_MODE="batched"), folder


def _html(outputs: list[Any]) -> str:
    found = [o["data"]["text/html"] for o in outputs if o.get("output_type") in ("execute_result", "display_data")
             and "text/html" in o.get("data", {})]
    assert len(found) == 1, outputs
    return str(found[0])


def _stdout(outputs: list[Any]) -> str:
    return "".join(o["text"] for o in outputs if o.get("output_type") == "stream" and o.get("name") == "stdout")


def _only_stderr(outputs: list[Any]) -> str:
    """The cell's standard error, joined, when that is all it showed.

    A kernel may deliver one write in several stream messages (a loaded CI
    machine split a UsageError's line from its newline), so the messages are
    joined before the text is judged.
    """
    assert outputs and all(o["output_type"] == "stream" and o.get("name") == "stderr" for o in outputs), outputs
    return "".join(o["text"] for o in outputs)


def _errors(outputs: list[Any]) -> list[Any]:
    return [o for o in outputs if o.get("output_type") == "error"]


def test_the_extension_loads_quietly(executed: tuple[list[Any], Path]) -> None:
    outputs, _ = executed
    assert outputs[0] == [] and outputs[1] == []


def test_a_naive_cell_shows_its_verdict_call_sites_and_findings(executed: tuple[list[Any], Path]) -> None:
    outputs, folder = executed
    assert not _errors(outputs[2])
    html = _html(outputs[2])
    page = parse(html)
    assert "offload-prof: cell In[3]" in page.tags("h3")[0].text
    assert page.by_id("verdict").attrs["data-kind"] == "transfer-bound"
    # the lines behind the device's idle time are cells too, never the kernel's temporary files
    assert "before Cell In[3], line 3 (" in page.by_id("verdict").text and "ipykernel" not in html
    site = cells(page.by_id("site-1"))
    assert site[1:4] == ["Cell In[3], line 3", "offload(daxpy, y, x, 2.0)", "60 / 480 MB"]
    assert site[4] == "30 / 240 MB"
    codes = [page.by_id(i).attrs["data-code"] for i in page.ids("finding-")]
    assert codes[0] == "OFF501"
    first = cells(page.by_id("finding-1"))
    assert first[0].startswith("saves ") and first[2] == "Cell In[3], line 3" and first[3] == "keep resident"
    assert int(page.by_id("finding-1").attrs["data-saving-ns"]) > 0
    # the cell's value also prints as the text report, and -o saved the trace
    text = next(o["data"]["text/plain"] for o in outputs[2] if o.get("output_type") == "execute_result")
    assert text.startswith("trace    naive.json") and "findings (" in text
    trace = json.loads((folder / "naive.json").read_text())
    assert trace["meta"]["mode"] == "naive" and trace["meta"]["argv"] == ["In[3]"]


def test_a_batched_cell_copies_once_and_names_the_function_in_an_earlier_cell(executed: tuple[list[Any], Path]) -> None:
    outputs, _ = executed
    page = parse(_html(outputs[3]))
    assert not page.ids("finding-") and "no findings" in page.by_id("site-1").text + _html(outputs[3])
    site = cells(page.by_id("site-1"))
    assert site[1] == "Cell In[4], line 2" and site[3] == "2 / 16 MB" and site[4] == "1 / 8 MB"
    assert "30 launches in 1 region" in page.by_id("wall").text


def test_a_cell_that_raises_shows_its_traceback_and_what_ran(executed: tuple[list[Any], Path]) -> None:
    outputs, _ = executed
    errors = _errors(outputs[4])
    assert [e["ename"] for e in errors] == ["ValueError"]
    page = parse(_html(outputs[4]))
    assert "it raised: the report covers what ran" in page.tags("h3")[0].text
    site = cells(page.by_id("site-1"))
    assert site[1] == "Cell In[2], line 9 in step" and site[3] == "2 / 16 MB"


@pytest.mark.parametrize("index, message", [(5, "--top must be at least 1, got 0"), (6, "argument --source: invalid choice"),
                                            (10, "folder: is a directory; give a file name for the trace")])
def test_bad_options_are_one_line_usage_errors(executed: tuple[list[Any], Path], index: int, message: str) -> None:
    outputs, _ = executed
    # IPython shows a UsageError as one line on stderr, without a traceback
    text = _only_stderr(outputs[index])
    assert text.startswith("UsageError: ") and message in text and text.count("\n") == 1


def test_the_mode_is_restored_and_the_cells_variables_stay(executed: tuple[list[Any], Path]) -> None:
    outputs, _ = executed
    # a kernel may deliver one print in several stream messages: the cell's standard output, joined
    assert not _errors(outputs[7]) and _stdout(outputs[7]) == "batched 30\n"
    assert _stdout(outputs[11]) == "0\n", "a trace that cannot be written stops the cell before it runs"


@pytest.mark.skipif(importlib.util.find_spec("cupti") is not None, reason="cupti-python is installed here")
def test_cupti_without_its_extra_says_what_is_missing(executed: tuple[list[Any], Path]) -> None:
    outputs, _ = executed
    text = _only_stderr(outputs[8])
    assert text.startswith("UsageError: --source cupti needs the cupti extra") and text.count("\n") == 1


CUPY_CELLS = [
    "%load_ext profiler",
    "import cupy as cp\nimport numpy as np\nx = np.ones(1 << 20)",
    "%%offload_prof --source cupti\nfor _ in range(10):\n    d = cp.asarray(x)\n    s = float(d.sum())",
]


@pytest.mark.gpu
def test_cupti_records_plain_cupy_copies_in_a_cell(tmp_path: Path) -> None:
    """On NVIDIA with the cupti extra: `pytest -m gpu tests/profiler/notebook`."""
    outputs = execute(CUPY_CELLS, tmp_path)
    assert not _errors(outputs[2])
    page = parse(_html(outputs[2]))
    site = cells(page.by_id("site-1"))
    assert site[1] == "Cell In[3], line 3" and site[3] == "10 / 83.9 MB"
    assert "OFF502" in [page.by_id(i).attrs["data-code"] for i in page.ids("finding-")]


GUARD_CELLS = [
    "%load_ext profiler",
    SETUP,
    "%offload_prof_guard\noffload(daxpy, y, x, 2.0)\nprint('this cell is not guarded')",
    "offload(daxpy, y, x, 2.0)",
    "z = x * 2\nprint('no copy, no error')",
    "%offload_prof_guard off",
    "offload(daxpy, y, x, 2.0)\nprint('copied after off')",
    "%offload_prof_guard --mode nonsense",
    "%offload_prof_guard --mode warn --allow-d2h\nprint('warn mode on')",
    "offload(daxpy, y, x, 2.0)\nprint('warned, went on')",
]


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    return execute(GUARD_CELLS, tmp_path_factory.mktemp("guard"), OFFLOAD_BACKEND="numpy", OFFLOAD_MODE="batched")


def test_the_guard_starts_with_the_next_cell_and_raises_at_its_line(guarded: list[Any]) -> None:
    turned_on = _stdout(guarded[2])
    assert turned_on.startswith("offload-prof: the transfer guard is on for the cells after this one: "
                                "no_transfers(h2d=True, d2h=True, syncs=False, mode='raise')")
    assert turned_on.endswith("this cell is not guarded\n") and not _errors(guarded[2])
    errors = _errors(guarded[3])
    assert [e["ename"] for e in errors] == ["TransferGuardError"]
    assert "`offload(daxpy, y, x, 2.0)`" in errors[0]["evalue"] and "H2D" in errors[0]["evalue"]
    assert errors[0]["evalue"].startswith("Cell In[4], line 1: "), "the cell as Jupyter names it, not its temp file"
    assert "forbidden by no_transfers(h2d=True, d2h=True, syncs=False, mode='raise')" in errors[0]["evalue"]
    assert _stdout(guarded[4]) == "no copy, no error\n" and not _errors(guarded[4])


def test_off_ends_the_guard_after_its_cell(guarded: list[Any]) -> None:
    assert _stdout(guarded[5]) == "offload-prof: the transfer guard is off after this cell\n"
    assert _stdout(guarded[6]) == "copied after off\n" and not _errors(guarded[6])


def test_bad_guard_options_are_one_line_and_warn_mode_goes_on(guarded: list[Any]) -> None:
    assert _only_stderr(guarded[7]).startswith("UsageError: argument --mode: invalid choice: 'nonsense'")
    assert "mode='warn'" in _stdout(guarded[8]) and "d2h=False" in _stdout(guarded[8])
    assert _stdout(guarded[9]) == "warned, went on\n" and not _errors(guarded[9])
    warned = "".join(o["text"] for o in guarded[9] if o.get("name") == "stderr")
    assert "TransferGuardWarning" in warned and "`offload(daxpy, y, x, 2.0)`" in warned
    assert "Cell In[10], line 1: `offload(daxpy, y, x, 2.0)`" in warned
