"""Waits that are the program's own measurement: the CUDA event timing idiom and its host-clock twin.

A benchmark times a kernel by recording an event before and after it,
waiting for the second (`end.synchronize()`, or a device-wide
`torch.cuda.synchronize()` before a host clock is read) and reading the
interval (`start.elapsed_time(end)`, `cupy.cuda.get_elapsed_time(s, e)`,
`time.perf_counter()`). That wait is what makes the figure true; telling
the user to drop it (OFF507) would break the measurement, and the
project's own timing code (offload_core's suite baseline, its launch
timer) would be reported on every profile of it.

The trace holds the line of each sync (`Site.text`); the lines after it
come from the file when it is still there (`linecache`, as the recorders
read the site's own line). A sync is a measurement when its own line reads
an elapsed time, or when it is a `synchronize()` call and one of the next
`LOOKAHEAD` lines of the same file reads an elapsed time or a host clock.
A file that is gone (a trace read on another machine) leaves only the
first test: such syncs stay findings, as before.
"""

from __future__ import annotations

import linecache
import re

from ..trace.records import Site

#: how many lines after a `synchronize()` may read the interval it waited for
LOOKAHEAD = 3
#: reading an interval measured on the device or a host clock
_READS_TIME = re.compile(r"\b(?:get_)?elapsed_time\s*\(|\belapsed\s*\(|\btime\.(?:perf_counter|monotonic|time)(?:_ns)?\s*\("
                         r"|\b(?:perf_counter|monotonic)(?:_ns)?\s*\(|\btimeit\.default_timer\s*\(")
_SYNCHRONIZE = re.compile(r"\.synchronize\s*\(")


def is_measurement(site: Site | None) -> bool:
    """Whether the sync made at `site` is the wait of a timing idiom (see the module's docstring)."""
    if site is None:
        return False
    if _READS_TIME.search(site.text):
        return True
    if not _SYNCHRONIZE.search(site.text):
        return False
    indent = len(linecache.getline(site.file, site.line)) - len(linecache.getline(site.file, site.line).lstrip())
    for line in range(site.line + 1, site.line + 1 + LOOKAHEAD):
        raw = linecache.getline(site.file, line)
        text = raw.strip()
        if not text:
            continue
        if len(raw) - len(raw.lstrip()) < indent:  # the block ended: what follows is not this wait's reading
            return False
        if _READS_TIME.search(text):
            return True
    return False
