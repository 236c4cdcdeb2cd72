"""The timeline's data: a run's copies, kernels and syncs as a binned overview and packed per-event columns.

A page that embeds 10^6 events as JSON objects takes seconds to parse and
more to draw; this module gives the browser two things instead, both
built with NumPy reductions:

* **the overview**: for each lane (H2D copies, D2H copies, kernels,
  syncs), the share of each of `OVERVIEW_BINS` equal slices of the wall
  time that the lane was busy (the union of its operations, so two
  overlapping copies count once), as one byte per bin, and how many
  operations started in each slice. The page draws its first picture
  from these alone, whatever the size of the trace.
* **the events**: each lane's operations sorted by start, as
  little-endian columns (start and duration in ticks of `tick_ns`, an
  unsigned 32-bit number each; the call site as an index into the run's
  site labels in the narrowest unsigned type that holds it; bytes for
  copies as 32-bit or, past 4 GB, 64-bit floats), each base64-encoded.
  The page draws from them directly when the run has at most
  `EXACT_LIMIT` operations (decoding that many costs milliseconds), and
  otherwise only when the reader zooms in past the overview's slices or
  points at an operation; it then bins the visible window per pixel.

The tick is the smallest whole number of nanoseconds that fits the wall
time into 32 bits (1 ns for runs up to 4.29 s), so every start and end
is exact to a tick; durations round to the nearest tick.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any, Callable, Final, Sequence

import numpy as np

from ...trace.model import Run
from ...trace.records import KINDS, Kind, Site

#: the lanes, top to bottom, and their labels
LANES: Final[tuple[tuple[Kind, str], ...]] = (
    ("h2d", "H2D copies"), ("d2h", "D2H copies"), ("launch", "kernels"), ("sync", "syncs"))
#: slices of the wall time in the overview (the page resamples them to its width; finer than a wide screen's pixels)
OVERVIEW_BINS: Final = 4096
#: runs with at most this many operations are drawn from their operations from the start
EXACT_LIMIT: Final = 200_000
_U32: Final = 2**32 - 1


@dataclass(frozen=True)
class LaneData:
    """One lane of one run: its overview and its packed events (base64 strings, see the module's docstring)."""

    kind: Kind
    label: str
    count: int
    #: busy share of each overview bin, 0-255
    busy: str
    #: operations started in each overview bin, uint32
    starts: str
    #: the longest operation, in ticks (the page looks back this far for operations reaching into a window)
    longest: int
    start: str
    duration: str
    site: str
    site_type: str
    nbytes: str
    nbytes_type: str


@dataclass(frozen=True)
class TimelineData:
    """A run's timeline: its wall time, the tick, its lanes, the labels their site indices point at, marks."""

    name: str
    wall_ns: int
    tick_ns: int
    bins: int
    lanes: tuple[LaneData, ...]
    #: index 0 is "no call site"; index i + 1 is the run's site i
    sites: tuple[str, ...]
    #: (time ns, label) of each finding, at its first blamed record
    marks: tuple[tuple[int, str], ...]

    def as_json(self) -> dict[str, Any]:
        """The object the page's script reads (field names as the script spells them)."""
        return {
            "name": self.name, "wall": self.wall_ns, "tick": self.tick_ns, "bins": self.bins,
            "sites": list(self.sites), "marks": [[t, label] for t, label in self.marks],
            "lanes": [{"kind": ln.kind, "label": ln.label, "count": ln.count, "busy": ln.busy, "starts": ln.starts,
                       "longest": ln.longest, "start": ln.start, "duration": ln.duration, "site": ln.site,
                       "siteType": ln.site_type, "nbytes": ln.nbytes, "nbytesType": ln.nbytes_type}
                      for ln in self.lanes],
        }


def tick_for(wall_ns: int) -> int:
    """The smallest whole number of ns per tick that fits `wall_ns` into an unsigned 32-bit count."""
    return max(1, -(-max(wall_ns, 0) // _U32))


def timeline_data(run: Run, name: str, label: Callable[[Site | None], str],
                  marks: Sequence[tuple[int, str]] = (), bins: int = OVERVIEW_BINS) -> TimelineData:
    """The timeline of `run` (sites labelled by `label`), with `marks` (time ns, text) drawn above it."""
    c = run.columns
    wall = max(int(run.meta.wall_ns), 1)
    tick = tick_for(wall)
    lanes = []
    for kind, text in LANES:
        idx = np.flatnonzero(c.kind == KINDS.index(kind))
        start = np.clip(c.start_ns[idx], 0, wall)
        end = np.clip(c.start_ns[idx] + c.duration_ns[idx], 0, wall)
        order = np.argsort(start, kind="stable")
        idx, start, end = idx[order], start[order], end[order]
        edges = np.linspace(0, wall, bins + 1)
        busy = _busy_per_bin(start, end, edges)
        width = np.diff(edges)
        share = np.clip(np.round(255 * busy / np.where(width > 0, width, 1)), 0, 255).astype(np.uint8)
        # an operation too short to fill a 255th of its bin still shows as one step
        share[(share == 0) & (busy > 0)] = 1
        started = np.bincount(np.minimum((start * bins // wall).astype(np.int64), bins - 1), minlength=bins)
        t0 = start // tick
        t1 = end // tick
        dur = np.maximum(t1 - t0, 0)
        site = c.site[idx].astype(np.int64) + 1
        site_type = _narrowest(int(site.max()) if site.size else 0)
        copies = kind in ("h2d", "d2h")
        nbytes = c.nbytes[idx]
        big = bool(nbytes.size) and int(nbytes.max()) > _U32
        lanes.append(LaneData(
            kind=kind, label=text, count=int(idx.size), busy=_b64(share), starts=_b64(started.astype("<u4")),
            longest=int(dur.max()) if dur.size else 0, start=_b64(t0.astype("<u4")), duration=_b64(dur.astype("<u4")),
            site=_b64(site.astype(f"<{site_type}")), site_type=site_type,
            nbytes=_b64(nbytes.astype("<f8" if big else "<u4")) if copies else "", nbytes_type=("f8" if big else "u4")
            if copies else ""))
    labels = ("(no call site)", *(label(s) for s in c.sites))
    return TimelineData(name, wall, tick, bins, tuple(lanes), labels, tuple((int(t), m) for t, m in marks))


def _busy_per_bin(start: np.ndarray, end: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Nanoseconds of each bin [edges[k], edges[k+1]) covered by the union of the intervals [start, end)."""
    if start.size == 0:
        return np.zeros(edges.size - 1)
    # merge overlapping intervals (start is sorted): a new one begins past everything before it
    reach = np.maximum.accumulate(end)
    fresh = np.concatenate(([True], start[1:] > reach[:-1]))
    group = np.cumsum(fresh) - 1
    s = start[fresh].astype(np.float64)
    e = np.zeros(int(group[-1]) + 1)
    np.maximum.at(e, group, reach.astype(np.float64))
    length = e - s
    before = np.concatenate(([0.0], np.cumsum(length)))
    # covered(t): the length of the union before t
    k = np.searchsorted(s, edges, side="right") - 1
    inside = np.where(k >= 0, np.clip(edges - s[np.maximum(k, 0)], 0, length[np.maximum(k, 0)]), 0.0)
    covered = np.where(k >= 0, before[np.maximum(k, 0)] + inside, 0.0)
    return np.diff(covered)


def _narrowest(top: int) -> str:
    """The smallest unsigned type code (`u1`, `u2`, `u4`) that holds `top`."""
    return "u1" if top < 2**8 else "u2" if top < 2**16 else "u4"


def _b64(values: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(values).tobytes()).decode("ascii")
