"""Human units in both directions: bytes and durations printed, sizes and tolerances parsed.

Reports, the gate and the budget files all speak the same units, so the
formatting and parsing live in one place. Sizes accept SI (`kB`, `MB`,
`GB`) and binary (`KiB`, `MiB`, `GiB`) suffixes, as people write both;
printed sizes are SI, as bandwidths in GB/s are.
"""

from __future__ import annotations

import re

_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": 1000, "kb": 1000, "m": 10**6, "mb": 10**6, "g": 10**9, "gb": 10**9, "t": 10**12, "tb": 10**12,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
}
_TIME_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
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
        return text
    m = _NUMBER.match(str(text))
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _SIZE_UNITS:
        raise ValueError(f"{what} {text!r} is not a size; write e.g. 4096, 64KiB or 8MB")
    return int(round(float(m.group(1)) * _SIZE_UNITS[unit]))


def parse_duration(text: object, what: str = "duration") -> int:
    """Nanoseconds from `250us`, `2ms`, `1.5s` (a bare number is seconds)."""
    if isinstance(text, bool):
        raise ValueError(f"{what} must be a duration, got {text!r}")
    if isinstance(text, (int, float)):
        return int(round(float(text) * 1e9))
    m = _NUMBER.match(str(text))
    unit = (m.group(2) or "s").lower() if m else ""
    if not m or unit not in _TIME_UNITS:
        raise ValueError(f"{what} {text!r} is not a duration; write e.g. 250us, 2ms or 1.5s")
    return int(round(float(m.group(1)) * _TIME_UNITS[unit]))
