"""The sources room: what turns a running program (or a vendor tool's output) into a `Run`.

`recorder` (offload_core's events; `spool`, the same streamed to a file
as they come, capped by `recordcap`, for `offload-prof run`), `cupti/`
(every CUDA call of the process, NVIDIA), `rocprof` (rocprofv3 output,
AMD), `runner` (the target script or module, run in this process),
`children` with `parts`, `gathering`, `merge` and `startup/` (the
target's child processes, each recording itself into a part of its own,
gathered and merged into one trace; `sigterm`, how a child's SIGTERM
handler gets to run), `suite` (the RAJAPerf suite on
both paths, for the demo), `calibrate` (this machine's link figures) and
`meta` (the one `Meta` of a run recorded here). They write the trace room's
records and read nothing above it. `Source` is what `offload-prof run`
asks of a recorder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Sequence

if TYPE_CHECKING:
    from ..trace.model import Run
    from ..trace.records import Link, Outcome


class Source(Protocol):
    """A recorder `offload-prof run` can drive: offload_core's `Recorder` or the CUPTI `CuptiRecorder`."""

    def stop(self) -> None: ...

    def origin_ns(self) -> int:
        """The `perf_counter_ns` value the run's record times count from (children's parts use that clock)."""
        ...

    def detach(self) -> None:
        """In a forked child: stop recording into the parent's recorder, at once and delivering nothing."""
        ...

    def run(self, *, command: Sequence[str] = (), argv: Sequence[str] = (), outcome: Outcome = "ok",
            exit_code: int = 0, link: Link | None = None) -> Run: ...

    def notes(self) -> list[str]:
        """Lines worth telling the user after the run (nothing when all went to the trace)."""
        ...
