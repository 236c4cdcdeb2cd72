"""The table model: filtering by text per side, sorting with absent entities last, stable ties; column fitting."""

from __future__ import annotations

import numpy as np

from profiler.tui.grid import Column, Scope, Side, Table, ranks, text_match
from profiler.tui.grid import SEPARATOR, fit_columns


def _table() -> Table:
    names = ["beta", "Alpha", "gamma"]
    key_side = Side("", (Column("name", "name", lambda e: names[e], ranks(names), 6, align="left", flex=True,
                                priority=0),), np.arange(3), text_match(names, np.arange(3)), shared=True)
    a_vals = np.array([5, 9, 5])
    a = Side("A", (Column("n", "n", lambda e: str(a_vals[e]), a_vals, 3, priority=0),), np.arange(3), name="A")
    b_vals = np.array([7, 1])
    b = Side("B", (Column("n", "n", lambda e: str(b_vals[e]), b_vals, 3, priority=0),), np.array([1, -1, 0]), name="B")
    return Table((key_side, a, b), 3)


def test_sort_numbers_largest_first_then_reverse_with_stable_ties() -> None:
    t = _table()
    t.sort_by(1, 0)
    assert t.order.tolist() == [1, 0, 2] and t.sort is not None and t.sort.descending
    t.sort_by(1, 0)
    assert t.order.tolist() == [0, 2, 1], "ties keep key order in both directions"
    assert t.describe_sort() == "sorted by n (A) ▲"


def test_absent_entities_sort_last_either_way() -> None:
    t = _table()
    t.sort_by(2, 0, descending=True)
    assert t.order.tolist() == [2, 0, 1]
    t.sort_by(2, 0, descending=False)
    assert t.order.tolist() == [0, 2, 1]
    assert t.cells(2) == [["Alpha"], ["9"], None]


def test_text_columns_sort_case_insensitively() -> None:
    t = _table()
    t.sort_by(0, 0)
    assert [t.cells(r)[0][0] for r in range(3)] == ["Alpha", "beta", "gamma"]  # type: ignore[index]


def test_filter_matches_substrings_case_insensitively_and_keeps_the_sort() -> None:
    t = _table()
    t.sort_by(1, 0)
    t.set_filter(" A ")
    assert t.filter_text == "A" and t.order.tolist() == [1, 0, 2]  # every name contains an a
    t.set_filter("MM")
    assert t.order.tolist() == [2] and t.row_of(2) == 0 and t.row_of(0) is None
    t.set_filter("")
    assert len(t) == 3
    t.unsort()
    assert t.order.tolist() == [0, 1, 2]


def test_a_scope_and_the_text_filter_both_narrow_and_each_is_undone_alone() -> None:
    t = _table()
    t.sort_by(1, 0)
    t.set_scope(Scope("not gamma", np.array([True, True, False])))
    assert t.order.tolist() == [1, 0]
    t.set_filter("et")
    assert t.order.tolist() == [0], "beta is the one kept row with 'et'"
    t.set_filter("mm")
    assert len(t) == 0, "gamma matches the text but is out of scope"
    t.set_filter("")
    assert t.order.tolist() == [1, 0] and t.scope is not None
    t.set_scope(None)
    assert t.order.tolist() == [1, 0, 2]


def test_column_names_for_menus() -> None:
    assert [n for _, _, n in _table().column_names()] == ["name", "n (A)", "n (B)"]


def test_fit_drops_least_important_columns_and_mirrors_run_sides() -> None:
    def col(key: str, width: int, priority: int, flex: bool = False) -> Column:
        return Column(key, key, str, np.zeros(1), width, priority=priority, flex=flex, min_width=4)

    cols = (col("a", 6, 0), col("b", 6, 1), col("c", 6, 2), col("site", 30, 3, flex=True))
    key = Side("", (col("#", 3, 0),), np.arange(1), shared=True)
    t = Table((key, Side("x", cols, np.arange(1)), Side("y", cols, np.arange(1))), 1)
    wide = fit_columns(t, 200)
    assert {(p.side, p.column) for p in wide} == {(0, 0)} | {(s, c) for s in (1, 2) for c in range(4)}
    assert [p.width for p in wide if p.side == 1] == [6, 6, 6, 30]
    narrow = fit_columns(t, 40)
    assert sorted({p.column for p in narrow if p.side == 1}) == [0, 1]
    assert [p.column for p in narrow if p.side == 1] == [p.column for p in narrow if p.side == 2]
    assert max(p.x + p.width for p in narrow) <= 40
    middle = fit_columns(t, 3 + 2 * len(SEPARATOR) + 2 * (6 * 3 + 4 + 3) + 10)
    site = [p.width for p in middle if p.column == 3]
    assert len(site) == 2 and site[0] == site[1] > 4, "a flex column grows the same on both sides"
