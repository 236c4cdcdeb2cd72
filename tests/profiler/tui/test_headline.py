"""The headline: columns that fit the width, then the exact copies, the modelled link time and the measured ratio."""

from __future__ import annotations

from profiler.analysis.summary import Flow, Totals
from profiler.phrases import exact_sentence, modelled_clause, percent, ratio_sentence, times
from profiler.tui.headline import headline

from .kit import BATCHED, NAIVE, session


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
    # exact first (copies, bytes), then the modelled link time, then what was measured
    assert narrow[3] == "batched: 20.7x fewer copies (3 vs 62), 20.7x fewer bytes (1.2 MB vs 24.8 MB)"
    assert narrow[4] == "modelled on pcie5-x16: copies 7.37 ms vs 399 µs"
    assert narrow[5] == "measured: batched is 8.41x faster; 73% of the naive run was copies"
    wide = headline(s, 160).plain.splitlines()
    assert "copies (pcie5-x16)" in wide[0] and "launches" in wide[0] and "syncs" in wide[0]
    assert wide[3].endswith("; modelled on pcie5-x16: copies 7.37 ms vs 399 µs"), "one line when it fits"
    assert wide[4].startswith("measured: ")
    tiny = headline(s, 40).plain.splitlines()
    assert all(len(line) <= 40 for line in tiny[3:]), "sentences wrap at spaces, whole"
    assert " ".join(tiny[3:]) == " ".join(narrow[3:])


def test_one_run_headline() -> None:
    s = session(NAIVE, modelled=False)
    lines = headline(s, 100).plain.splitlines()
    assert lines[2:] == ["naive: 62 copies, 24.8 MB", "measured: 73% of the naive run was copies",
                         "verdict: judging the run…"], "the verdict until the detectors have judged the run"
    s.set_findings(s.detect())
    assert headline(s, 100).plain.splitlines()[-1] == "verdict: transfer-bound (copies 75%)", \
        "copies are the story: no idle line to name"


def test_one_host_bound_run_names_the_line_behind_its_idle_time() -> None:
    s = session(BATCHED, modelled=False)
    s.set_findings(s.detect())
    v = s.verdicts[0] if s.verdicts else None
    assert v is not None and v.kind == "host-bound"
    assert headline(s, 300).plain.splitlines()[-1] == f"verdict: {v.short()}; {v.idle_text(s.traces[0].run.meta.cwd)}"
    assert v.idle_text().startswith("most after the last device operation (630 µs), then before stencil.py:30")


def test_the_verdict_of_each_run_closes_the_headline() -> None:
    s = session()
    s.set_findings(s.detect())
    last = headline(s, 120).plain.splitlines()[-1]
    assert last == "verdict: naive transfer-bound (copies 75%) · batched host-bound (idle 51%)"
    assert headline(s, 40).plain.splitlines()[-2:] == ["verdict: naive transfer-bound (copies", "75%) · batched host-bound (idle 51%)"]


def test_exact_sentence() -> None:
    def t(count: int, nbytes: int) -> Totals:
        z = Flow()
        return Totals(1, Flow(count, nbytes), z, z, z, z, 0)

    assert exact_sentence([("naive", t(1150, 1_400_000_000)), ("batched", t(17, 23_100_000))]) == \
        "batched: 67.6x fewer copies (17 vs 1,150), 60.6x fewer bytes (23.1 MB vs 1.4 GB)"
    assert exact_sentence([("first", t(2, 16)), ("second", t(4, 16))]) == \
        "second: 2.00x more copies (4 vs 2), as many bytes (16 B vs 16 B)"
    assert exact_sentence([("naive", t(1, 8)), ("batched", t(0, 0))]) == "batched: no copies (naive: 1 copy, 8 B)"
    assert exact_sentence([("naive", t(0, 0)), ("batched", t(0, 0))]) == "no copies in either run (naive, batched)"
    assert exact_sentence([("naive", t(1, 8))]) == "naive: 1 copy, 8 B"


def test_ratio_sentence_shows_the_range_over_repeats() -> None:
    naive, batched = ("naive", totals(3_000, 1_000)), ("batched", totals(1_000, 10))
    samples = [(3_000, 2_800, 3_300), (1_000, 1_100, 900)]
    assert ratio_sentence([naive, batched], samples) == \
        "batched is 3.00x faster (median of 3 repeats, range 2.55x-3.67x); 33% of the naive run was copies"
    slower = [(1_000, 1_000, 1_000), (3_000, 900, 3_300)]
    assert ratio_sentence([("naive", totals(1_000, 0)), ("batched", totals(3_000, 0))], slower) == \
        "batched is 3.00x slower (median of 3 repeats, range 0.90x-3.30x); 0% of the naive run was copies"
    assert "median" not in ratio_sentence([naive, batched], [(3_000,), (1_000,)]), "one repeat has no range"
    assert "median" not in ratio_sentence([naive, batched], [(3_000, 2_000), (1_000,)]), "unpaired repeats"


def test_names_follow_the_modes() -> None:
    s = session()
    assert [t.name for t in s.traces] == ["naive", "batched"]
    same = session(NAIVE, NAIVE)
    assert [t.name for t in same.traces] == ["first", "second"]
