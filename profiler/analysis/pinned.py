"""What a copy would take from page-locked (pinned) host memory: the rate a page-lock fix is priced at.

The best witness is the run itself: when it made pinned copies of one
direction, their bytes over their time is what this machine's link does
from pinned memory, measured under the same load. Only large copies count
(at least `MIN_WITNESS_BYTES` each), where the fixed cost per copy does
not hide the bandwidth. Without such copies the link profile stands in:
the one the run was recorded with (a calibration of its machine), else
(or where that one has no pinned figure) the shipped default, and the
rate says which it is, so a report can label the figure measured or
modelled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ..trace.link import DEFAULT_MODEL, resolve
from ..trace.model import Run
from ..trace.records import KINDS, Direction, Link

#: pinned copies at least this large witness the pinned bandwidth
MIN_WITNESS_BYTES: Final = 1 << 20


@dataclass(frozen=True)
class PinnedRate:
    """Pinned-copy bandwidth of one direction, and where the figure comes from.

    `measured` is True when it is the run's own pinned copies; then
    `source` says how many, else it names the link profile.
    """

    kind: Direction
    gbps: float
    latency_ns: int
    measured: bool
    source: str

    def copy_ns(self, nbytes: int) -> int:
        """How long a pinned copy of `nbytes` would take."""
        return int(self.latency_ns + nbytes / self.gbps)

    def describe(self) -> str:
        """`54 GB/s (measured on this run's 12 pinned H2D copies)` or `54 GB/s (pcie5-x16)`."""
        return f"{self.gbps:.3g} GB/s ({self.source})"


def pinned_rate(run: Run, kind: Direction, link: Link | None = None) -> PinnedRate | None:
    """The pinned rate of `kind` copies: measured on the run, else `link`'s, else the default profile's.

    None where no figure can be had (a link with no pinned bandwidth).
    """
    c = run.columns
    large = (c.kind == KINDS.index(kind)) & c.pinned & (c.nbytes >= MIN_WITNESS_BYTES) & (c.duration_ns > 0)
    count = int(large.sum())
    if count:
        gbps = float(c.nbytes[large].sum()) / float(c.duration_ns[large].sum())
        return PinnedRate(kind, gbps, 0, True, f"measured on this run's {count} pinned {kind.upper()} "
                                               f"cop{'y' if count == 1 else 'ies'}")
    for profile in (link or run.meta.link, resolve(DEFAULT_MODEL)):
        # a calibration made where pinned memory could not be had says nothing of the pinned rate: the default does
        pinned = None if profile is None else profile.h2d_pinned_gbps if kind == "h2d" else profile.d2h_pinned_gbps
        if profile is not None and pinned:
            return PinnedRate(kind, pinned, int(profile.latency_us * 1e3), False, f"modelled on {profile.name}")
    return None

