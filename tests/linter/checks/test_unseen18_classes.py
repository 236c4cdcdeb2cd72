"""Classes the linter missed on unseen-18 (issue 31), one small self-written example each.

Unseen-18's JAX repository keeps each environment's state in a record
(`@dataclass class State: board: chex.Array`) and draws it in viewers that
import no GPU library: `def render(self, state: State)` walks the board
cell by cell and tests each element on the host (`"" if v == -1 else ...`),
one wait per cell per frame. The first run (65d6fff) never linted those
files. The examples keep that shape without any of the repository's code;
each failed on 65d6fff, and the silent cases guard what is not a device
record (a record of host arrays, an element test of a host array).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from ..kit import codes, run_cli

TYPES = """\
    import chex
    from dataclasses import dataclass


    @dataclass
    class State:
        board: chex.Array
        step_count: int
    """

VIEWER = """\
    from typing import Optional

    from game.types import State


    class Viewer:
        def render(self, state: State, n: int) -> list:
            cells = []
            for i in range(n):
                for j in range(n):
                    v = state.board[i, j]
                    cells.append("" if v == -1 else "x")
            return cells
    """


def _project(tmp_path: Path, files: dict[str, str]) -> list[tuple[str, str, int]]:
    for name, code in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code))
    proc = run_cli("--format", "json", "--no-cache", "--select", "OFF302", ".", cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    return [(f["path"], f["code"], f["line"]) for f in json.loads(proc.stdout)]


def test_a_viewer_importing_no_gpu_library_reads_the_projects_device_record_element_by_element(
        tmp_path: Path) -> None:
    found = _project(tmp_path, {"game/__init__.py": "", "game/types.py": TYPES, "game/viewer.py": VIEWER})
    assert found == [("game/viewer.py", "OFF302", 12)]


def test_a_record_of_host_arrays_hands_nothing(tmp_path: Path) -> None:
    host_types = TYPES.replace("import chex", "import numpy as np").replace("chex.Array", "np.ndarray")
    found = _project(tmp_path, {"game/__init__.py": "", "game/types.py": host_types, "game/viewer.py": VIEWER})
    assert found == []


def test_a_record_defined_in_the_same_file_types_its_parameters() -> None:
    code = """
import jax
import jax.numpy as jnp
from flax import struct


class Board(struct.PyTreeNode):
    cells: jax.Array


def count_marked(board: Board, n: int) -> int:
    marked = 0
    for i in range(n):
        if board.cells[i] > 0:
            marked += 1
    return marked
"""
    assert codes(code, select=["OFF302"]) == [("OFF302", 14, 12)]


def test_an_element_test_of_a_host_array_is_no_read() -> None:
    code = """
import numpy as np
import jax.numpy as jnp


def draw(board: np.ndarray, n: int) -> list:
    out = []
    for i in range(n):
        v = board[i]
        out.append("" if v == -1 else str(v))
    return out
"""
    assert codes(code, select=["OFF302"]) == []


def test_a_configuration_holding_arrays_and_host_fields_is_no_record() -> None:
    """`link_types: str` beside `dt: jax.Array`: the class is a system description, not a record of arrays; its
    string fields are the host's (`for t in sys.link_types: order = kinds.index(t)`)."""
    code = """
import jax
from flax import struct


class System(struct.PyTreeNode):
    dt: jax.Array
    link_types: str


def orders(sys: System, kinds: list) -> list:
    out = []
    for t in sys.link_types:
        order = kinds.index(t)
        while order >= len(out):
            out.append([])
    return out
"""
    assert codes(code, select=["OFF104", "OFF302"]) == []


def test_an_element_compared_with_a_string_is_a_host_value() -> None:
    code = """
import jax


def on_device(keys: jax.Array, tensors: list) -> list:
    out = []
    for t in tensors:
        if keys[t] == "device":
            out.append(t)
    return out
"""
    assert codes(code, select=["OFF302"]) == []


def test_a_warm_run_reads_the_viewer_from_the_cache_and_says_the_same(tmp_path: Path) -> None:
    files = {"game/__init__.py": "", "game/types.py": TYPES, "game/viewer.py": VIEWER}
    for name, code in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code))
    cache = tmp_path / ".cache"
    runs = [run_cli("--format", "json", "--cache-dir", str(cache), "--select", "OFF302", ".", cwd=tmp_path)
            for _ in range(2)]
    found = [[(f["path"], f["line"]) for f in json.loads(p.stdout)] for p in runs]
    assert found[0] == found[1] == [("game/viewer.py", 12)]
