"""`offload-prof export TRACE...`: Chrome Trace Event JSON for Perfetto (the default), or the records as plain JSON.

`--format chrome|json` picks the output; `--chrome`, the option this
command once required, still means `--format chrome`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import ProfilerError
from .common import check_writable, load_trace, model_link

NAME = "export"
HELP = "convert traces to Chrome Trace Event JSON for Perfetto (default) or to plain JSON records"

#: the default output name's suffix, per format
SUFFIXES = {"chrome": ".chrome.json", "json": ".records.json"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("traces", nargs="+", metavar="TRACE", help="one or more traces (several become separate processes)")
    p.add_argument("--format", choices=tuple(SUFFIXES), default=None,
                   help="chrome: Chrome Trace Event JSON (opens in Perfetto and chrome://tracing); "
                        "json: every record as a JSON object, with each run's metadata (default: chrome)")
    p.add_argument("--chrome", action="store_true", help="the same as --format chrome")
    p.add_argument("-o", "--output", help="output file (default: the first trace's name with "
                                          + " or ".join(SUFFIXES.values()) + ")")


def execute(args: argparse.Namespace) -> int:
    if args.chrome and args.format not in (None, "chrome"):
        raise ProfilerError(f"--chrome and --format {args.format} contradict each other; give one")
    fmt = args.format or "chrome"
    runs = [load_trace(t) for t in args.traces]
    out = Path(args.output) if args.output else Path(args.traces[0]).with_suffix("").with_suffix(SUFFIXES[fmt])
    check_writable(out, "export")
    try:
        if fmt == "chrome":
            from ..analysis.diagnosis import analyse
            from ..outputs.chrome import export

            analysed = [analyse(run, model_link(run, None, False)) for run in runs]
            export(runs, out, findings=[f for f, _ in analysed], verdicts=[v for _, v in analysed])
        else:
            from ..outputs.flat import export_flat

            export_flat(runs, list(args.traces), out)
    except OSError as exc:
        raise ProfilerError(f"{out}: cannot write the export ({exc.strerror or exc})") from None
    where = "; open it at https://ui.perfetto.dev" if fmt == "chrome" else ""
    print(f"offload-prof: wrote {out} ({len(runs)} run{'s' if len(runs) != 1 else ''}){where}", file=sys.stderr)
    return 0
