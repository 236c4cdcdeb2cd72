"""Units: sizes and durations printed and parsed the same way everywhere."""

from __future__ import annotations

import pytest

from profiler.units import fmt_bytes, fmt_ns, fmt_ratio, parse_duration, parse_size


def test_formatting() -> None:
    assert [fmt_bytes(n) for n in (0, 999, 1000, 8_388_608, 2.5e9)] == ["0 B", "999 B", "1 kB", "8.39 MB", "2.5 GB"]
    assert [fmt_ns(n) for n in (None, 850, 12_300, 4_560_000, 2e9)] == ["-", "850 ns", "12.3 µs", "4.56 ms", "2 s"]
    assert [fmt_ratio(*p) for p in ((10, 4), (0, 0), (3, 0))] == ["2.5x", "1x", "-"]


def test_parse_size() -> None:
    assert [parse_size(s) for s in (4096, "4096", "64 KiB", "1.5MB", "8MiB", "2gb")] == [
        4096, 4096, 65536, 1_500_000, 8 * 2**20, 2 * 10**9]
    for bad in ("lots", "-1", "5 parsecs", True, -3):
        with pytest.raises(ValueError, match="size|bytes|negative"):
            parse_size(bad, "limit")


def test_parse_duration() -> None:
    assert [parse_duration(s) for s in ("250us", "2ms", "1.5s", "3", 0.5, "7 ns", "4µs")] == [
        250_000, 2_000_000, 1_500_000_000, 3_000_000_000, 500_000_000, 7, 4000]
    with pytest.raises(ValueError, match="'soon' is not a duration"):
        parse_duration("soon")
