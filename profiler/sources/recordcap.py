"""How many records `offload-prof run` keeps by default: sized from the memory available when the run starts.

A module of the standard library only, so that `offload-prof run --help`
can say what the default is on this machine without loading offload_core.
The figure per record is what `benchmarks/recording_memory.py` measured
at the end of a run (the columns of the records kept, the trace encoded in
memory, and the pieces of both alive at once); docs/profiler.md gives the
table.
"""

from __future__ import annotations

import os

#: what one record kept costs at the end of `run`, in bytes of peak memory (`benchmarks/recording_memory.py`):
#: the columns, the encoded file in memory, and the parts of both alive at once
PEAK_BYTES_PER_RECORD = 256
#: the share of the memory available when the run starts that the records kept may take at the end
MEMORY_SHARE = 0.5
#: the least default cap (a machine short of memory still keeps a useful trace)
MIN_DEFAULT_RECORDS = 100_000


def available_memory() -> int | None:
    """Bytes of memory available to new work (Linux's MemAvailable), or None where it cannot be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def default_max_records(available: int | None = None) -> int:
    """`run --max-records`'s default: `MEMORY_SHARE` of the memory available over `PEAK_BYTES_PER_RECORD`, at least
    `MIN_DEFAULT_RECORDS` (and that where the memory available cannot be read)."""
    free = available_memory() if available is None else available
    if free is None:
        return MIN_DEFAULT_RECORDS
    return max(MIN_DEFAULT_RECORDS, int(free * MEMORY_SHARE) // PEAK_BYTES_PER_RECORD)
