"""The trace model under its public name: `from profiler.model import Run`.

The model lives in the trace room (`profiler.trace.model` for `Run`,
`profiler.trace.records` for what a run holds); tools built on traces
import it from here, so this module keeps those names where users found
them.
"""

from __future__ import annotations

from .trace.model import Run
from .trace.records import (COPY_KINDS, DIRECTION_NAMES, KINDS, SCHEMA_VERSION, Link, Meta, Process, Rank, Record, Site,
                            relative_file)
from .trace.tracefile import FORMAT

__all__ = [
    "COPY_KINDS", "DIRECTION_NAMES", "FORMAT", "KINDS", "SCHEMA_VERSION", "Link", "Meta", "Process", "Rank", "Record", "Run",
    "Site", "relative_file",
]
