"""Why a fix saves nothing although its records took time: said in words, never printed as "saves 0".

A finding adds up the time its records took ("16 ms lost"); the replay
prices the fix by the wall time it saves, and that is nothing when none
of the records lay on the critical path. "saves 0 ns ... 16 ms lost"
reads as a contradiction, so a finding whose fix the replay prices at
nothing carries the reason instead (`Finding.unsaved`), read off the
replayed schedule of the unchanged run:

* the changed device operations ran **beside other device work** on
  another stream (a copy under a kernel): the run waited for that work
  anyway;
* or they ran **while the host was busy**, with nothing else on the
  device: the host issued the work that needed them only after they had
  finished (JAX uploads that its runtime thread issues while the
  program dispatches the step);
* the changed records are **waits** the device had already finished
  (nothing was waited for);
* none of these: the replay simply finds the run no shorter.
"""

from __future__ import annotations

from bisect import bisect_left

from .schedule import Fix, replay
from .timeline import DEVICE, WAIT, Timeline

#: other device operations looked at before a changed one, for overlap (enough for a kernel stream's neighbours)
_NEIGHBOURS = 64


def why_nothing_saved(timeline: Timeline, fix: Fix) -> str:
    """Why the records `fix` changes cost the run no wall time (a clause, for `saves nothing (...)`)."""
    touched = fix.records
    changed = sorted(touched)
    schedule = replay(timeline)
    start, end = schedule.start, schedule.end
    role, stream = timeline.role, timeline.stream
    others = sorted((start[i], end[i], stream[i]) for i in range(len(role))
                    if role[i] == DEVICE and i not in touched)
    starts = [s for s, _, _ in others]
    device_ns = beside_ns = waits = 0
    for i in changed:
        if role[i] == WAIT:
            waits += 1
            continue
        if role[i] != DEVICE:
            continue
        s, e = start[i], end[i]
        device_ns += e - s
        covered = 0
        at = bisect_left(starts, e)
        for s2, e2, st in others[max(at - _NEIGHBOURS, 0):at]:
            if st != stream[i] and e2 > s:
                covered = max(covered, min(e, e2) - max(s, s2))
        beside_ns += covered
    if device_ns:
        if 2 * beside_ns >= device_ns:
            return "they ran beside other device work on another stream, which the run waited for anyway"
        return "they ran while the host was busy, and finished before it issued the work that needed them"
    if waits:
        return "the device had finished by then: the waits cost nothing"
    return "the replay finds the run no shorter without them"
