""""Keep resident" on a naive loop: every buffer is allocated once and freed once, inputs and outputs alike.

The naive path allocates each argument's device twin and frees it in
every launch. On the NumPy backend an allocation commits fresh pages (the
first-touch page faults of memory the C library took from the operating
system) and a free may hand them back, and those records are most of
what the batched twin saves beside the copies; the fix used to drop an
input's allocations but not its frees, and an output's frees but not its
allocations.
"""

from __future__ import annotations

from pathlib import Path

from profiler.analysis.detectors import detect
from profiler.analysis.replay import Timeline, keep_resident, saving

from ..kit import record

COPY_LOOP = """\
import numpy as np
from offload_core import In, Out, kernel, offload

@kernel
def copy(c: Out, a: In) -> None:
    c[...] = a

a = np.ones(1 << 14)
c = np.zeros(1 << 14)
for step in range(10):
    offload(copy, c, a)
"""


def test_inputs_and_outputs_are_allocated_once_and_freed_once(tmp_path: Path) -> None:
    run = record(COPY_LOOP, tmp_path)
    (f,) = [f for f in detect(run) if f.code == "OFF501"]
    fix = keep_resident(run, f.records)
    records = run.records
    for param in ("a", "c"):
        allocs = [i for i, r in enumerate(records) if r.kind == "alloc" and r.param == param]
        frees = [i for i, r in enumerate(records) if r.kind == "free" and r.param == param]
        assert len(allocs) == len(frees) == 10
        assert [i for i in allocs if i not in fix.drop] == allocs[:1], f"'{param}' allocated in the first launch only"
        assert [i for i in frees if i not in fix.drop] == frees[-1:], f"'{param}' freed in the last launch only"
    dropped = sum(records[i].duration_ns for i in fix.drop)
    assert saving(Timeline.of(run), fix) >= dropped, "the records' own time at least, allocations and frees included"
