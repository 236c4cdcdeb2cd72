"""CuPy's functions that size their result by the data wait for the device: `nonzero`, `flatnonzero`, `argwhere`.

The pooled misses of unseen-2 to unseen-19 hold about a hundred boolean-mask
costs; among them per-row positions in CuPy code (`good =
cp.flatnonzero(row < 1.0)` for each detector row, then a fill through the
positions): CuPy counts the true entries on the host to allocate the result,
a wait per row, as boolean-mask indexing does (OFF104). A self-written
example; the advice names the mask forms that need no count.
"""

from __future__ import annotations

import pytest

from ..kit import codes, lint

ROWS = """
import cupy as cp


def fill(rows):
    out = cp.zeros_like(rows)
    for m in range(rows.shape[0]):
        good = POSITIONS
        out[m, good] = rows[m, good]
    return out
"""


@pytest.mark.parametrize("positions", ["cp.flatnonzero(rows[m] < 1.0)", "cp.nonzero(rows[m] < 1.0)[0]",
                                       "cp.argwhere(rows[m] < 1.0)[:, 0]"])
def test_positions_of_a_device_mask_per_iteration_wait(positions: str) -> None:
    code = ROWS.replace("POSITIONS", positions)
    assert [(c, line) for c, line, *_ in codes(code, select=["OFF104"])] == [("OFF104", 8)]
    (finding,) = lint(code, select=["OFF104"]).findings
    assert "counts the true entries on the host" in finding.message


def test_positions_once_before_the_loop_do_not() -> None:
    code = ROWS.replace("    for m in range(rows.shape[0]):\n        good = POSITIONS\n",
                        "    good = cp.flatnonzero(rows[0] < 1.0)\n    for m in range(rows.shape[0]):\n")
    assert codes(code, select=["OFF104"]) == []
