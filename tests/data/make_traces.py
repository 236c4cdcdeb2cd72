"""Regenerate the TUI's test traces: `python tests/data/make_traces.py` (from the repository root).

Records `stencil.py` on the naive and the batched path (NumPy backend,
with fingerprints) and normalises what would differ between machines:
the start time, host, folders and Python version, and call-site paths,
which become relative to this folder, so the TUI's snapshots are the same
everywhere. The durations are those of the recording machine, fixed once
committed. Regenerating changes the snapshots: review them and run
`pytest tests/profiler/tui --snapshot-update`.
"""

from __future__ import annotations

import runpy
import sys
from dataclasses import replace
from pathlib import Path

import offload_core
from profiler.model import Run, Site
from profiler.sources.recorder import Recorder

HERE = Path(__file__).resolve().parent


def normalised(run: Run, mode: str) -> Run:
    sites: dict[Site, Site] = {}

    def site(s: Site | None) -> Site | None:
        if s is None:
            return None
        if s not in sites:
            sites[s] = replace(s, file=Path(s.file).name if Path(s.file).parent == HERE else s.file)
        return sites[s]

    meta = replace(run.meta, started_at="2026-01-01T00:00:00.000+00:00", host="", cwd="", python="CPython 3.11",
                   tool_version="0.1.0", command=("offload-prof", "run", "--mode", mode, "--", "stencil.py"),
                   argv=("stencil.py",))
    return Run(meta, tuple(replace(r, site=site(r.site)) for r in run.records))


def main() -> None:
    offload_core.set_backend("numpy")
    namespace = runpy.run_path(str(HERE / "stencil.py"), run_name="stencil")
    namespace["main"]()  # warm-up, unrecorded
    for mode in ("naive", "batched"):
        offload_core.set_mode(mode)
        with Recorder(fingerprints=True) as rec:
            namespace["main"]()
        path = normalised(rec.run(), mode).save(HERE / f"stencil.{mode}.json")
        print(f"wrote {path}", file=sys.stderr)
    offload_core.set_mode("batched")


if __name__ == "__main__":
    main()
