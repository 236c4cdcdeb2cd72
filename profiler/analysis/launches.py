"""Every launch of a run as columns: what a view of 10^6 launches scrolls through.

One object per launch would take seconds to build for a trace of 10^6
events. `LaunchTable` holds each launch's figures (kernel, call site,
start, kernel time, its copies each way, its syncs) as NumPy arrays, one
entry per launch in launch-index order, computed with a handful of
vectorised reductions over `run.columns`, so a viewer can sort, filter
and bin them and build text only for the rows on screen.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trace.columns import NULL, exact_group_sums
from ..trace.model import Run
from ..trace.records import KINDS, Link, Site
from ..units import INT64_MAX
from .summary import modelled_column


@dataclass(frozen=True, eq=False)
class LaunchTable:
    """Per launch, in index order, as arrays.

    A launch's records are those carrying its index; its kernel, site and
    region are those of its (last) launch record, else of its first record.
    `kernel` and `site` are codes into `kernels` and `sites` (-1: none;
    a launch with no kernel name shows as "?"), `region` is `NULL` outside
    a region. The `*_modelled` arrays are None without a link.
    """

    index: np.ndarray
    kernel: np.ndarray
    site: np.ndarray
    region: np.ndarray
    start_ns: np.ndarray
    kernel_ns: np.ndarray
    h2d_count: np.ndarray
    h2d_bytes: np.ndarray
    h2d_ns: np.ndarray
    d2h_count: np.ndarray
    d2h_bytes: np.ndarray
    d2h_ns: np.ndarray
    sync_ns: np.ndarray
    h2d_modelled: np.ndarray | None
    d2h_modelled: np.ndarray | None
    kernels: tuple[str, ...]
    sites: tuple[Site, ...]

    def __len__(self) -> int:
        return int(self.index.shape[0])

    @property
    def copy_ns(self) -> np.ndarray:
        return self.h2d_ns + self.d2h_ns

    @property
    def copy_modelled(self) -> np.ndarray | None:
        if self.h2d_modelled is None or self.d2h_modelled is None:
            return None
        return self.h2d_modelled + self.d2h_modelled

    def kernel_name(self, row: int) -> str:
        code = int(self.kernel[row])
        return "?" if code < 0 else self.kernels[code]

    def site_of(self, row: int) -> Site | None:
        code = int(self.site[row])
        return None if code < 0 else self.sites[code]


def launch_table(run: Run, link: Link | None = None) -> LaunchTable:
    """The `LaunchTable` of `run`; modelled copy times on `link` when one is given."""
    c = run.columns
    per_record = modelled_column(c, link)
    rows = np.flatnonzero(c.launch != NULL)
    ids, first, group = np.unique(c.launch[rows], return_index=True, return_inverse=True)
    group = group.reshape(-1)
    n = len(ids)
    kinds = c.kind[rows]
    # The head of a launch is its (last) launch record, else its first record.
    head = rows[first]
    is_launch = kinds == KINDS.index("launch")
    last_launch = np.full(n, -1, dtype=np.int64)
    np.maximum.at(last_launch, group[is_launch], rows[is_launch])
    has_launch = last_launch >= 0
    head = np.where(has_launch, last_launch, head)
    kernel_ns = np.where(has_launch, c.duration_ns[np.maximum(last_launch, 0)], 0)

    def total(kind: str, values: np.ndarray) -> np.ndarray:
        # one launch's copies: exact, and held at 2^63-1 where a launch's own sum passes int64
        m = kinds == KINDS.index(kind)
        sums = exact_group_sums(values[rows[m]], group[m], n)
        return np.array([min(v, INT64_MAX) for v in sums], dtype=np.int64)

    def count(kind: str) -> np.ndarray:
        return np.bincount(group[kinds == KINDS.index(kind)], minlength=n).astype(np.int64)

    return LaunchTable(
        index=ids.astype(np.int64), kernel=c.kernel[head], site=c.site[head], region=c.region[head],
        start_ns=c.start_ns[rows[first]], kernel_ns=kernel_ns.astype(np.int64),
        h2d_count=count("h2d"), h2d_bytes=total("h2d", c.nbytes), h2d_ns=total("h2d", c.duration_ns),
        d2h_count=count("d2h"), d2h_bytes=total("d2h", c.nbytes), d2h_ns=total("d2h", c.duration_ns),
        sync_ns=total("sync", c.duration_ns),
        h2d_modelled=None if per_record is None else total("h2d", per_record),
        d2h_modelled=None if per_record is None else total("d2h", per_record),
        kernels=c.kernels, sites=c.sites,
    )
