"""The headline: the ratio sentence in every case, and columns that fit the width."""

from __future__ import annotations

from profiler.analysis.summary import Flow, Totals
from profiler.outputs.report import modelled_clause, percent, ratio_sentence, times
from profiler.tui.headline import headline

from .kit import NAIVE, session


def totals(wall: int, copy: int, modelled: int | None = None) -> Totals:
    z = Flow()
    return Totals(wall, Flow(1, 8, copy, modelled), z, z, z, z, 0)


def test_ratio_sentence() -> None:
    assert ratio_sentence([("naive", totals(139_000, 138_000)), ("batched", totals(1_000, 10))]) == \
        "batched is 139x faster; 99% of the naive run was copies"
    assert ratio_sentence([("naive", totals(2_000, 500)), ("batched", totals(3_000, 0))]) == \
        "batched is 1.50x slower; 25% of the naive run was copies"
    assert ratio_sentence([("first", totals(0, 0)), ("second", totals(5, 0))]) == \
        "second and first have no wall time to compare; - of the first run was copies"
    assert ratio_sentence([("naive", totals(100, 63))]) == "63% of the naive run was copies"


def test_number_formats() -> None:
    assert (times(139.4), times(23.71), times(4.214)) == ("139x", "23.7x", "4.21x")
    assert percent(999, 1000) == "99%" and percent(1000, 1000) == "100%" and percent(1, 0) == "-"


def test_modelled_clause_names_the_link() -> None:
    s = session()
    assert modelled_clause([(t.name, t.totals) for t in s.traces], s.link) == \
        "modelled on pcie5-x16: copies 7.37 ms vs 399 µs"
    assert modelled_clause([(t.name, t.totals) for t in s.traces], None) == ""


def test_headline_fits_80_columns_and_grows_with_the_width() -> None:
    s = session()
    narrow = headline(s, 78).plain.splitlines()
    assert all(len(line) <= 78 for line in narrow)
    assert narrow[0].split() == ["wall", "copies", "kernels", "H2D", "D2H"]
    assert narrow[1].split()[:5] == ["naive", "28.6", "ms", "21", "ms"]
    assert "31" in narrow[1].split() and "12.4" in narrow[1]
    assert narrow[3] == "batched is 8.41x faster; 73% of the naive run was copies"
    assert narrow[4] == "modelled on pcie5-x16: copies 7.37 ms vs 399 µs"
    wide = headline(s, 160).plain.splitlines()
    assert "copies (pcie5-x16)" in wide[0] and "launches" in wide[0] and "syncs" in wide[0]
    assert wide[3].endswith("; modelled on pcie5-x16: copies 7.37 ms vs 399 µs"), "one line when it fits"


def test_one_run_headline() -> None:
    s = session(NAIVE, modelled=False)
    lines = headline(s, 100).plain.splitlines()
    assert len(lines) == 4 and lines[2] == "73% of the naive run was copies"
    assert lines[3] == "verdict: judging the run…", "until the detectors have judged it"
    s.set_findings(s.detect())
    assert headline(s, 100).plain.splitlines()[3] == "verdict: transfer-bound (copies 73%)"


def test_the_verdict_of_each_run_closes_the_headline() -> None:
    s = session()
    s.set_findings(s.detect())
    last = headline(s, 120).plain.splitlines()[-1]
    assert last == "verdict: naive transfer-bound (copies 73%) · batched host-bound (idle 51%)"
    assert headline(s, 40).plain.splitlines()[-1] == "verdict: naive transfer-bound (copies 7…"


def test_names_follow_the_modes() -> None:
    s = session()
    assert [t.name for t in s.traces] == ["naive", "batched"]
    same = session(NAIVE, NAIVE)
    assert [t.name for t in same.traces] == ["first", "second"]
