"""The trace model: one recorded run, `Run`, as `meta` plus frozen `records` in issue order.

Everything downstream (analyses, outputs, the gate, the TUI) reads a `Run`
and nothing else, so the model is the contract between the sources of
events and their consumers. It imports nothing from the offload_core
runtime: a trace recorded on a GPU machine loads anywhere.

The record types live in `profiler.trace.records`; the file format, and with it every
byte of I/O, in `profiler.trace.tracefile`, which `save`/`load` and
`to_json`/`from_json` hand the run to. Call sites are interned: records
that share a source line share one `Site`.

A loaded run's `records` is a `profiler.trace.columns.RecordTable`, which
builds `Record`s only when they are asked for, and `run.columns` gives
analyses the NumPy arrays directly; NumPy is imported only then, so code
that never touches a trace's columns (the pytest plugin) does not load it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from ..errors import TraceError
from . import tracefile
from .records import Kind, Meta, Record, Site

if TYPE_CHECKING:
    from .columns import Columns


@dataclass(frozen=True)
class Run:
    """A recorded run: `meta` and its `records` in issue order.

    `records` is a tuple when the run was recorded or built by hand, and a
    `profiler.trace.columns.RecordTable` (a sequence of the same records,
    built on demand) when it was loaded from a file.
    """

    meta: Meta
    records: Sequence[Record] = field(default=())

    # ------------------------------------------------------------- queries
    def of_kind(self, *kinds: Kind) -> Iterator[Record]:
        """The records of the given kinds, in order."""
        return (r for r in self.records if r.kind in kinds)

    def copies(self) -> Iterator[Record]:
        """H2D and D2H records, in order."""
        return (r for r in self.records if r.is_copy)

    @property
    def sites(self) -> tuple[Site, ...]:
        """Distinct call sites, in the order they first appear."""
        if _is_table(self.records):
            import numpy as np

            c = self.columns
            codes, first = np.unique(c.site, return_index=True)
            return tuple(c.sites[int(code)] for _, code in sorted(zip(first.tolist(), codes.tolist())) if code >= 0)
        seen: dict[Site, None] = {}
        for r in self.records:
            if r.site is not None and r.site not in seen:
                seen[r.site] = None
        return tuple(seen)

    @property
    def label(self) -> str:
        """A short name for headings: the target command, or the mode."""
        return " ".join(self.meta.argv) or self.meta.mode

    @cached_property
    def columns(self) -> Columns:
        """The records as NumPy columns (`profiler.trace.columns.Columns`), built once per run."""
        if _is_table(self.records):
            return self.records.columns  # type: ignore[attr-defined, no-any-return]
        from .columns import Columns

        return Columns.from_records(self.records)

    # --------------------------------------------------------- persistence
    def to_json(self, schema: int | None = None) -> dict[str, Any]:
        """A JSON-ready dict (`profiler.trace.tracefile.to_document`): columns (schema 2 or 3) or rows (schema 1).

        Without `schema`, the oldest that holds the run (3 only for several processes).
        """
        return tracefile.to_document(self, schema)

    @classmethod
    def from_json(cls, data: Any, source: str = "trace") -> Run:
        """Rebuild a run from `to_json()` output; `TraceError` naming `source` on any problem."""
        return cls(*tracefile.from_document(data, source))

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the trace (gzip-compressed when the name ends in .gz), atomically."""
        return tracefile.save(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Run:
        """Read a trace written by `save`; `TraceError` with one line naming the file otherwise."""
        return cls(*tracefile.load(path))


def require_columns(run: Run, source: str) -> Run:
    """`run`, once its columns are built; a `TraceError` when it holds an integer they cannot (beyond 64 bits).

    Every analysis reads the columns, so a schema 1 trace holding such a
    number loads (nothing recorded is lost) but cannot be reported, compared
    or gated; the commands call this to say so in one line.
    """
    try:
        run.columns
    except OverflowError:
        raise TraceError(f"{source}: holds an integer beyond 64 bits, which offload-prof cannot analyse") from None
    return run


def _is_table(records: Sequence[Record]) -> bool:
    # Only a loaded trace holds a RecordTable, and loading imports the module:
    # when it is not imported, nothing can be one (and NumPy stays unloaded).
    module = sys.modules.get(f"{__package__}.columns")
    return module is not None and isinstance(records, module.RecordTable)
