"""Human units in both directions: bytes and durations printed, sizes and tolerances parsed.

Reports, the gate and the budget files all speak the same units, so the
formatting and parsing live in one place. Sizes accept SI (`kB`, `MB`,
`GB`) and binary (`KiB`, `MiB`, `GiB`) suffixes, as people write both;
printed sizes are SI, as bandwidths in GB/s are.
"""

from __future__ import annotations

import math
import re

_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9, "t": 10**12, "tb": 10**12,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
}
_TIME_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
#: the largest count, size or duration the profiler takes (what an int64 column holds)
INT64_MAX = 2**63 - 1
_NUMBER = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Zµ]*)\s*$")


def fmt_bytes(n: float) -> str:
    """`8.4 MB`, `512 B`: SI units, three significant digits."""
    n = float(n)
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


def fmt_ns(ns: float | None) -> str:
    """`12.3 ms`, `850 ns`, `-` for an unknown duration."""
    if ns is None:
        return "-"
    ns = float(ns)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.0f} ns"


def plural(n: int, word: str, words: str | None = None) -> str:
    """`1 copy`, `3 copies`, `1,200 launches`: a count with its noun in the right number."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def fmt_ratio(a: float, b: float) -> str:
    """`12.5x` (a / b), `-` when b is zero and a is not, `1x` for 0/0."""
    if b == 0:
        return "1x" if a == 0 else "-"
    r = a / b
    return f"{r:.3g}x"


def parse_size(text: object, what: str = "size") -> int:
    """A byte count from `4096`, `64 KiB`, `1.5MB`; `ValueError` naming `what` otherwise."""
    if isinstance(text, bool):
        raise ValueError(f"{what} must be a number of bytes, got {text!r}")
    if isinstance(text, int):
        if text < 0:
            raise ValueError(f"{what} must not be negative, got {text}")
        return _bounded(text, text, what)
    m = _NUMBER.match(str(text))
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _SIZE_UNITS:
        raise ValueError(f"{what} {text!r} is not a size; write e.g. 4096, 64KiB or 8MB")
    return _bounded(float(m.group(1)) * _SIZE_UNITS[unit], text, what)


def parse_duration(text: object, what: str = "duration") -> int:
    """Nanoseconds from `250us`, `2ms`, `1.5s` (a bare number is seconds)."""
    if isinstance(text, bool):
        raise ValueError(f"{what} must be a duration, got {text!r}")
    if isinstance(text, (int, float)):
        if text < 0:
            raise ValueError(f"{what} must not be negative, got {text!r}")
        if isinstance(text, int) and text > INT64_MAX:
            raise ValueError(f"{what} {shown(text)} is too large")
        return _bounded(float(text) * 1e9, text, what)
    m = _NUMBER.match(str(text))
    unit = (m.group(2) or "s").lower() if m else ""
    if not m or unit not in _TIME_UNITS:
        raise ValueError(f"{what} {text!r} is not a duration; write e.g. 250us, 2ms or 1.5s")
    return _bounded(float(m.group(1)) * _TIME_UNITS[unit], text, what)


def _bounded(value: float, text: object, what: str) -> int:
    """`value` as an int, or a `ValueError` for infinity, NaN or more than an int64 holds."""
    if isinstance(value, int):
        ok = value <= INT64_MAX
    else:
        ok = math.isfinite(value) and value <= INT64_MAX
    if not ok:
        raise ValueError(f"{what} {shown(text)} is too large")
    return int(round(value))


def shown(value: object, limit: int = 40) -> str:
    """`repr(value)`, cut to `limit` characters (a number of 400 digits is no use in a message)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
