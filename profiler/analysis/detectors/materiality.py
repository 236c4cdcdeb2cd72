"""When a runtime finding is worth a warning: it must save real time, and it must recur.

A pattern can be a mistake in kind and still not matter in a given run:
three one-time 29 MB model copies at the start of an 11 s training run,
a checkpoint saved and reloaded once at the end. Warning about those
buries the findings that do matter. So a finding of a warning rule is
reported as info when

* its expected saving (the replay's, `profiler.analysis.replay`) is below
  the larger of `min_saving_fraction` of the run's wall time and
  `min_saving` (a duration), or
* the records it would change lie in fewer than `min_repeats` launch
  intervals (the stretches between two kernel launches): it happened
  once, at start-up or at the end, not in the loop that repeats.

The three are catalog options of every runtime rule, overridable per
call like the rules' other thresholds. A saving that cannot be estimated
(None) is not held against the finding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np

from offload_core.catalog import Severity

from ...trace.model import Run
from ...trace.records import KINDS
from ...units import parse_duration


@dataclass(frozen=True)
class Materiality:
    """The thresholds of one rule."""

    fraction: float
    floor_ns: int
    min_repeats: int

    @classmethod
    def of(cls, code: str, option: Callable[[str, str], Any]) -> Materiality:
        """The rule's thresholds through `option(code, name)` (catalog defaults or overrides)."""
        fraction = float(option(code, "min_saving_fraction"))
        floor = parse_duration(option(code, "min_saving"), f"{code} min_saving")
        repeats = int(option(code, "min_repeats"))
        if not 0 <= fraction <= 1 or repeats < 0:
            raise ValueError(f"{code}: min_saving_fraction must be within 0..1 and min_repeats not negative")
        return cls(fraction, floor, repeats)

    def threshold_ns(self, wall_ns: int) -> int:
        """The smallest saving that makes a warning in a run of `wall_ns`."""
        return max(self.floor_ns, int(self.fraction * wall_ns))

    def severity(self, severity: Severity, saving_ns: int | None, wall_ns: int, repeats: int) -> Severity:
        """`severity` when the finding is material, else info."""
        if severity != "warning":
            return severity
        if saving_ns is not None and saving_ns < self.threshold_ns(wall_ns):
            return "info"
        if repeats < self.min_repeats:
            return "info"
        return severity


class Intervals:
    """Which launch interval each record lies in: the number of kernel launches before it."""

    def __init__(self, run: Run) -> None:
        c = run.columns
        launches = c.kind == KINDS.index("launch")
        self._before = (np.cumsum(launches) - launches).tolist()

    def count(self, records: Iterable[int]) -> int:
        """In how many distinct launch intervals `records` lie."""
        before = self._before
        return len({before[i] for i in records})
