"""Timeline arithmetic: binning launches into columns and drawing one stacked bar."""

from __future__ import annotations

import numpy as np

from profiler.tui.timeline import binned, column_cells


def test_binned_means_and_stretching() -> None:
    assert binned(np.arange(10), 5).tolist() == [0.5, 2.5, 4.5, 6.5, 8.5]
    assert binned(np.arange(10), 3).tolist() == [1.0, 4.0, 7.5]
    assert binned(np.array([1, 2]), 5).tolist() == [1.0, 1.0, 2.0, 2.0], "few launches fill the width"
    assert binned(np.array([], dtype=np.int64), 5).size == 0


def test_column_cells_stack_copy_under_kernel() -> None:
    cells = column_cells(1.5, 1.0, 4)
    chars = [c for c, _ in cells]
    assert chars == ["█", "▄", "▄", " "]
    assert str(cells[0][1].color.name) == "red" and str(cells[1][1].bgcolor.name) == "green"
    assert str(cells[2][1].color.name) == "green"
    tiny = column_cells(0.01, 0.0, 3)
    assert tiny[0][0] == "▁" and [c for c, _ in tiny[1:]] == [" ", " "], "something that ran always shows"
    assert [c for c, _ in column_cells(0.0, 0.0, 2)] == [" ", " "]
