"""`%%offload_prof`'s text report (the cell's plain-text value) names call sites as the HTML does: the cell as
Jupyter names it and the line as the editor counts it (the magic's line included), never the kernel's temporary
file or IPython's `<ipython-input-...>` name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .test_notebook import execute

SETUP = """\
import numpy as np
from offload_core import In, InOut, kernel, offload

@kernel
def daxpy(y: InOut, x: In, a: float) -> None:
    y += a * x

def step(y, x):
    offload(daxpy, y, x, 2.0)

x = np.ones(100_000)
y = np.zeros_like(x)"""

CELLS = [
    "%load_ext profiler",
    SETUP,
    "%%offload_prof --mode naive\nfor _ in range(3):\n    offload(daxpy, y, x, 2.0)",
    "%%offload_prof --mode naive\nstep(y, x)\nstep(y, x)",
]


def _text(outputs: list[Any]) -> str:
    return str(next(o["data"]["text/plain"] for o in outputs if o.get("output_type") == "execute_result"))


def test_the_text_report_names_the_cell_and_the_editors_line(tmp_path: Path) -> None:
    outputs = execute(CELLS, tmp_path, OFFLOAD_BACKEND="numpy", OFFLOAD_MODE="batched")
    in_cell = _text(outputs[2])
    assert "ipykernel" not in in_cell and "ipython-input" not in in_cell, in_cell
    sites = in_cell.split("top call sites by copy time\n")[1].splitlines()
    assert "Cell In[3]:3 in <module>" in sites[1], sites
    findings = in_cell.split("largest expected saving first\n")[1].splitlines()
    assert findings[0].startswith("  Cell In[3]:3:5: OFF501"), findings
    in_function = _text(outputs[3])
    assert "ipykernel" not in in_function and "ipython-input" not in in_function, in_function
    sites = in_function.split("top call sites by copy time\n")[1].splitlines()
    assert "Cell In[2]:9 in step" in sites[1], sites
