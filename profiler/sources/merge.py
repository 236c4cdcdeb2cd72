"""One trace from the parts of a run: the target's own records plus every child's, each record naming its process.

Each process numbered its work as if it were alone: launch indices and
region ids start where its own counter stood, host buffers are addresses
in its own memory, and a forked child even starts with its parent's
addresses. The trace's consumers take a launch index to mean one launch
and an `array` to mean one buffer, so the merge keeps those meanings
across processes: a child's launches and regions are renumbered after the
ones already taken (keeping their order and gaps), and its buffer
addresses carry its process index above bit 52 (user-space addresses of
the platforms CUDA and ROCm run on lie below it), so that equal numbers
still mean the same memory. Times become relative to the run's start.
Records keep each process's own order and are interleaved by start time
(`heapq.merge` never reorders within one input).
"""

from __future__ import annotations

import heapq
from dataclasses import replace
from typing import Iterable, Sequence

from ..trace.model import Run
from ..trace.records import Process, Record
from .parts import Part, Row, Unrecorded
from .sitecache import SiteCache

#: a child's process index sits above this bit of its buffer addresses
ADDRESS_BITS = 52


class _Renumber:
    """Launch or region numbers made unique across processes, each process's in order after those taken."""

    def __init__(self, taken: Iterable[int | None]) -> None:
        self.next = max((n for n in taken if n is not None), default=-1) + 1

    def block(self, numbers: Iterable[int | None]) -> int:
        """The offset for a process whose numbers are `numbers`; reserves them."""
        present = [n for n in numbers if n is not None]
        if not present:
            return 0
        low, high = min(present), max(present)
        offset = self.next - low
        self.next = high + offset + 1
        return offset


def renumbered() -> _Renumber:
    """A fresh renumbering of launch or region numbers, for merging runs that each counted from 0."""
    return _Renumber(())


def part_note(part: Part) -> str:
    """How a child ended, when that is worth saying: not a plain exit with status 0."""
    end = part.end
    if part.torn:
        return (f"its last write was cut short ({part.torn} bytes): killed while writing; what it recorded after its "
                "last whole write is missing")
    if end is None:
        if part.running:
            return "still running when the target ended: recorded up to then"
        return ("no end: killed before it finished writing its records; what it recorded after its last write "
                "(every 0.2 s) is missing")
    if end.how == "signal":
        return f"ended by {_signal_name(end.code)} (its records written first)"
    if end.how == "os._exit":
        return f"os._exit({end.code})"
    if end.how == "exec":
        return "replaced itself with another program (os.exec*)"
    return f"exit {end.code}" if end.code else ""  # None: an exit through atexit, whose status it cannot see


def _signal_name(number: int | None) -> str:
    import signal

    try:
        return signal.Signals(number or 0).name
    except ValueError:
        return f"signal {number}"


def merge(main: Run, main_process: Process, t0_ns: int, parts: Sequence[Part],
          unrecorded: Sequence[Unrecorded] = ()) -> Run:
    """`main` (times relative to `t0_ns`, its records process 0) with the children's `parts` and notes.

    Parts that hold no records are children that never recorded anything
    (a Python child that never used offload_core or CUDA), left out; one
    that started a recording and died before writing any is listed as not
    recorded. Children in `unrecorded` are listed with why.
    """
    processes: list[Process] = [main_process]
    streams: list[Iterable[Record]] = [main.records]
    order = sorted(parts, key=lambda p: (p.rows[0][1] if p.rows else float("inf"), p.hello.pid))
    recorded = any(part.rows for part in order)
    # the main process's records are read only to be merged with a child's (a CUPTI run's are built on demand)
    sites = SiteCache(main.sites if recorded else ())
    launches = _Renumber(r.launch for r in main.records) if recorded else _Renumber(())
    regions = _Renumber(r.region for r in main.records) if recorded else _Renumber(())
    listed: list[Process] = []
    for part in order:
        h = part.hello
        if not part.rows:
            if not part.complete:
                listed.append(Process(h.pid, h.parent, h.start, h.argv, recorded=False, name=h.name,
                                      note="started recording and ended before writing any record: killed; what "
                                      "it recorded is missing", rank=part.rank, complete=False))
            continue
        index = len(processes)
        note = part_note(part)
        if part.dropped:
            kept = f"kept its first {len(part.rows):,} records, {part.dropped:,} more not kept (--max-records)"
            note = f"{note}; {kept}" if note else kept
        processes.append(Process(h.pid, h.parent, h.start, h.argv, True, note, h.name, part.rank, part.complete))
        launch_offset = launches.block(row[6] for row in part.rows)
        region_offset = regions.block(row[10] for row in part.rows)
        streams.append(_records(part.rows, index, t0_ns, launch_offset, region_offset, sites))
    processes += listed
    processes += [Process(u.pid, u.parent, u.start, u.argv, recorded=False, note=u.why) for u in unrecorded]
    if len(streams) > 1:
        records: Sequence[Record] = tuple(heapq.merge(*streams, key=lambda r: r.start_ns))
    else:  # kept as it is (a CUPTI run's `RecordTable` stays unbuilt); a list made immutable
        records = tuple(main.records) if isinstance(main.records, list) else main.records
    dropped = main.meta.dropped + sum(p.dropped for p in parts)
    return Run(replace(main.meta, processes=tuple(processes), dropped=dropped), records)


def _records(rows: Sequence[Row], process: int, t0_ns: int, launch_offset: int, region_offset: int,
             sites: SiteCache) -> list[Record]:
    tag = process << ADDRESS_BITS
    out = []
    for (kind, start, duration, nbytes, pinned, kernel, launch, param, array, site, region, mode, fp, *devices) in rows:
        device, peer = devices if devices else (None, None)  # rows of CUPTI parts name devices; offload_core's do not
        out.append(Record(kind, start - t0_ns, duration, nbytes, pinned, kernel,
                          None if launch is None else launch + launch_offset, param,
                          None if array is None else array | tag, sites.get(site),
                          None if region is None else region + region_offset, mode, fp, process, device, peer))
    return out

