"""The suite recording behind `offload-prof demo`: the RAJAPerf suite on the naive and the batched path.

The suite's offload variant (`offload_core.suite.run_suite`) runs the same
launches twice, once with `mode="naive"` (every launch copies its
arguments) and once batched (one region per kernel), under the profiler's
`Recorder`. Both recordings happen in this process, after one unrecorded
warm-up pass of the same kernels and sizes, so that neither run pays for
compilation, first-touch page faults or memory pools the other got for
free; each run gets its own recorder, so the traces hold exactly their
own events. Both runs must compute the same checksums.

Counts and bytes are exact, but one timing of each path follows whatever
else the machine is doing (one busy loop once turned "1.2x faster" into
"1.06x slower"). So each path is recorded `repeats` times, the two paths
taking turns (and turns about which goes first) so that a change of load
falls on both; the trace kept for each path is its median repeat, and its
`meta.wall_samples_ns` holds every repeat's wall time, from which the
headline shows the range. Every repeat must make the same copies.

Copy fingerprints are off by default: computing them is a pass over every
copied byte, which the naive path does far more often, so they would
inflate the naive run's wall time and the ratio; `--fingerprints` turns
them on (for OFF502/OFF503) and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

from ..errors import ProfilerError
from ..trace.model import Run


@dataclass(frozen=True)
class SuiteRecording:
    """Both paths of one suite recording: the runs, the trace files they were saved to, the kernels."""

    naive: Run
    batched: Run
    paths: tuple[Path, Path]
    kernels: tuple[str, ...]


def record_suite(kernels: Sequence[str], size_factor: float, reps: int, *, repeats: int = 1,
                 fingerprints: bool = False, output: Path, command: Sequence[str] = (),
                 progress: Callable[[str], None] = lambda m: None) -> SuiteRecording:
    """Warm up, record both paths `repeats` times, check the results agree, save the median runs as `output`'s traces."""
    import offload_core
    from offload_core.errors import OffloadError
    from offload_core.suite import run_suite, select
    from offload_core.suite.registry import UnknownKernel

    from ..trace.link import calibrated
    from ..trace.tracefile import both_paths
    from .recorder import Recorder

    if repeats < 1:
        raise ProfilerError(f"repeats must be at least 1, got {repeats}")
    try:
        chosen = tuple(b.name for b in select(list(kernels)))
    except UnknownKernel as exc:
        raise ProfilerError(str(exc)) from None
    paths = both_paths(output)
    modes = ("naive", "batched")
    try:
        backend = offload_core.get_backend()
        progress(f"backend {backend.name} ({backend.device}); kernels {', '.join(chosen)}; "
                 f"size factor {size_factor:g}; {reps} reps; {repeats} repeat{'s' if repeats != 1 else ''} per path")
        progress("warming up (unrecorded) ...")
        run_suite(chosen, size_factor=size_factor, mode="batched", reps=1)
        link = calibrated(backend.name)
        argv = ("offload_core.suite", "--kernels", *chosen, "--size-factor", f"{size_factor:g}", "--reps", str(reps))
        runs: dict[str, list[Run]] = {mode: [] for mode in modes}
        sums: dict[str, list[object]] = {}
        for n in range(repeats):
            for mode in (modes if n % 2 == 0 else modes[::-1]):
                progress(f"recording the {mode} path" + (f" ({n + 1} of {repeats})" if repeats > 1 else "") + " ...")
                previous = offload_core.get_mode()
                offload_core.set_mode(mode)  # before the recorder starts, so its metadata names this mode
                recorder = Recorder(fingerprints=fingerprints).start()
                try:
                    results = run_suite(chosen, size_factor=size_factor, mode=mode, reps=reps)
                finally:
                    recorder.stop()
                    offload_core.set_mode(previous)
                runs[mode].append(recorder.run(command=command, argv=argv, link=link))
                sums.setdefault(mode, [r.checksum for r in results])
    except OffloadError as exc:
        raise ProfilerError(str(exc)) from None
    differ = [k for k, a, b in zip(chosen, sums["naive"], sums["batched"]) if a != b]
    if differ:
        raise ProfilerError(f"the naive and batched paths computed different results for {', '.join(differ)}")
    kept = {mode: median_run(runs[mode]) for mode in modes}
    for mode, path in zip(modes, paths):
        try:
            kept[mode].save(path)
        except OSError as exc:
            raise ProfilerError(f"{path}: cannot write trace ({exc.strerror or exc})") from None
    return SuiteRecording(kept["naive"], kept["batched"], paths, chosen)


def median_run(runs: Sequence[Run]) -> Run:
    """The repeat of median wall time (the lower of the two middle ones for an even count), with every repeat's wall.

    One repeat alone is returned as it is.
    """
    if len(runs) == 1:
        return runs[0]
    walls = tuple(r.meta.wall_ns for r in runs)
    middle = sorted(range(len(runs)), key=lambda i: walls[i])[(len(runs) - 1) // 2]
    chosen = runs[middle]
    return Run(replace(chosen.meta, wall_samples_ns=walls), chosen.records)
