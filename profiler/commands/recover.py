"""`offload-prof recover FOLDER`: a trace of what a killed `offload-prof run` had written before it died.

`run` writes the target's records, and each child's, to a folder beside
its trace as they come (`profiler.sources.spool`), and makes the trace
of them when the target ends. A run killed outright (SIGKILL, the OOM
killer) leaves that folder behind (`.t.json.offload-prof-run-XXXX`); the
next `run` writing the same trace names it. This command makes the trace
the run would have written, of what it had written by then, with outcome
`interrupted` (so that the gate refuses it unless told
`--allow-failed-target`), beside the trace the run was writing
(`t.recovered.json`: the next run may have written `t.json` since), and
removes the folder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import ProfilerError
from .common import DEFAULT_TRACE, check_writable, save_trace

NAME = "recover"
HELP = "make a trace of what a killed `offload-prof run` wrote before it died (the folder it left)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", help="the folder a killed run left beside its trace (.NAME.offload-prof-run-XXXX)")
    p.add_argument("-o", "--output", help="trace file (default: NAME.recovered.json beside the trace NAME.json the run "
                                          "was writing, so that a trace written there since is kept)")
    p.add_argument("--keep", action="store_true", help="keep the folder once the trace is written")


def execute(args: argparse.Namespace) -> int:
    from ..sources.gathering import process_running, remove_folder
    from ..sources.spool import recoverable, recovered_run
    from ..trace.tracefile import recovered_path

    folder = Path(args.folder)
    if not folder.is_dir():
        raise ProfilerError(f"{folder}: no such folder; give the folder a killed `offload-prof run` left")
    try:
        info = recoverable(folder)
        pid = info.get("pid")
        if isinstance(pid, int) and process_running(pid):
            raise ProfilerError(f"{folder}: the run that writes it (pid {pid}) is still running; it writes its own "
                                "trace when its target ends")
        output = Path(args.output) if args.output else recovered_path(Path(str(info.get("output") or DEFAULT_TRACE)))
        check_writable(output)
        run = recovered_run(folder)
    except ValueError as exc:
        raise ProfilerError(str(exc)) from None
    except OSError as exc:
        raise ProfilerError(f"{folder}: cannot read the run's records ({exc.strerror or exc})") from None
    save_trace(run, output)
    if not args.keep:
        remove_folder(folder)
    launches = int(run.columns.kind_mask("launch").sum())
    dropped = f", {run.meta.dropped:,} more not kept (--max-records)" if run.meta.dropped else ""
    print(f"offload-prof: wrote {output} ({len(run.records)} records, {launches} launches{dropped}, from what the "
          f"killed run had written; outcome interrupted){'' if args.keep else f'; removed {folder}'}",
          file=sys.stderr)
    return 0
