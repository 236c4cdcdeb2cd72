"""Merging the parts of a run: one clock, each process's order kept, launch and region numbers and buffers unique."""

from __future__ import annotations

from pathlib import Path

from profiler.model import Meta, Process, Record, Run, Site
from profiler.sources.merge import ADDRESS_BITS, merge, part_note
from profiler.sources.parts import End, Hello, Part, Unrecorded

SITE = Site("/w/app.py", 3, "f", "offload(k, y)", 5)
MAIN = Process(10, 1, "main", ("app.py",))


def row(kind: str, start: int, launch: int | None = None, array: int | None = None, region: int | None = None) -> tuple:
    return (kind, start, 5, 8, False, "k", launch, None, array, ("/w/app.py", 3, "f"), region, "batched", None)


def part(pid: int, rows: list[tuple], end: End | None = End("exit", 0), start: str = "fork") -> Part:
    return Part(Path(f"{pid}-0.part"), Hello(pid, 10, start, ("app.py",)), tuple(rows), end)  # type: ignore[arg-type]


def main_run() -> Run:
    records = (Record("launch", 100, 5, kernel="k", launch=0, site=SITE),
               Record("h2d", 300, 5, 8, array=0x7F00_0000_1000, launch=1, region=0, site=SITE),
               Record("launch", 500, 5, kernel="k", launch=1, site=SITE))
    return Run(Meta("numpy", "host", "batched", "", 1000), records)


def test_times_order_numbers_and_buffers() -> None:
    t0 = 1_000_000
    child = part(11, [row("launch", t0 + 400, launch=1), row("h2d", t0 + 200, launch=2, array=0x7F00_0000_1000, region=0),
                      row("launch", t0 + 600, launch=5)])
    run = merge(main_run(), MAIN, t0, [child])
    assert run.meta.processes == (MAIN, Process(11, 10, "fork", ("app.py",), True, ""))
    kids = [r for r in run.records if r.process == 1]
    assert [r.start_ns for r in kids] == [400, 200, 600], "a process's own order is kept, even where its times are not"
    assert [r.launch for r in kids] == [2, 3, 6], "after the target's launches 0-1, gaps kept"
    assert kids[1].region == 1 and kids[1].array == 0x7F00_0000_1000 | 1 << ADDRESS_BITS
    assert kids[0].site is SITE, "the target's interned site, with its text"
    assert [r.process for r in run.records] == [0, 0, 1, 1, 0, 1]


def test_children_that_recorded_nothing_and_notes() -> None:
    silent = part(12, [], end=End("exit", 0))
    died = part(13, [], end=None, start="exec")
    note = Unrecorded(10, ("python", "-I", "w.py"), "started with -I", pid=14)
    run = merge(main_run(), MAIN, 0, [silent, died], [note])
    assert [(p.pid, p.recorded) for p in run.meta.processes] == [(10, True), (13, False), (14, False)]
    assert run.meta.processes[1].note.startswith("started recording and ended before writing any record")
    assert run.meta.processes[2].note == "started with -I" and run.records == main_run().records


def test_how_a_child_ended() -> None:
    assert part_note(part(1, [], End("exit", None))) == "" and part_note(part(1, [], End("exit", 3))) == "exit 3"
    assert part_note(part(1, [], End("os._exit", 0))) == "os._exit(0)"
    assert part_note(part(1, [], None)).startswith("no end: killed before it finished writing its records")


def test_a_run_without_recorded_children_keeps_its_records_unbuilt() -> None:
    """A CUPTI run's records are columns built into records on demand; merging nothing must not build them."""
    from profiler.trace.columns import Columns, RecordTable

    table = RecordTable(Columns.from_records(main_run().records))
    run = merge(Run(main_run().meta, table), MAIN, 0, [part(12, [])])
    assert run.records is table and table._built is None
    assert run.records == main_run().records
