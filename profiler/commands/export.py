"""`offload-prof export TRACE...`: Chrome Trace Event JSON for Perfetto (the default), or the records as plain JSON.

`--format chrome|json` picks the output; `--chrome`, the option this
command once required, still means `--format chrome`.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from ..errors import ProfilerError
from .common import check_writable, load_trace, model_link

if TYPE_CHECKING:
    from ..trace.model import Run

NAME = "export"
HELP = "convert traces to Chrome Trace Event JSON for Perfetto (default) or to plain JSON records"


def _chrome(runs: Sequence[Run], paths: Sequence[str], out: Path) -> None:
    from ..analysis.diagnosis import analyse
    from ..outputs.chrome import export

    analysed = [analyse(run, model_link(run, None, False)) for run in runs]
    export(runs, out, findings=[f for f, _ in analysed], verdicts=[v for _, v in analysed])


def _flat(runs: Sequence[Run], paths: Sequence[str], out: Path) -> None:
    from ..outputs.flat import export_flat

    export_flat(runs, list(paths), out)


@dataclass(frozen=True)
class Export:
    """One `--format` of `export`: what it writes (for `--help`), its writer, the default file name's suffix."""

    help: str
    #: (the runs, their trace files, the output file) -> None; an `OSError` when the file cannot be written
    write: Callable[[Sequence[Run], Sequence[str], Path], None]
    suffix: str
    #: added to the message that names the file written
    note: str = ""


#: `--format` -> its export, in the order `--help` lists them (the option's choices are this table's keys)
FORMATS: dict[str, Export] = {
    "chrome": Export("Chrome Trace Event JSON (opens in Perfetto and chrome://tracing)", _chrome, ".chrome.json",
                     "; open it at https://ui.perfetto.dev"),
    "json": Export("every record as a JSON object, with each run's metadata", _flat, ".records.json"),
}
#: what `export` writes without `--format`
DEFAULT = "chrome"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("traces", nargs="+", metavar="TRACE", help="one or more traces (several become separate processes)")
    p.add_argument("--format", choices=tuple(FORMATS), default=None,
                   help="; ".join(f"{name}: {e.help}" for name, e in FORMATS.items()) + f" (default: {DEFAULT})")
    p.add_argument("--chrome", action="store_true", help="the same as --format chrome")
    p.add_argument("-o", "--output", help="output file (default: the first trace's name with "
                                          + " or ".join(e.suffix for e in FORMATS.values()) + ")")


def execute(args: argparse.Namespace) -> int:
    if args.chrome and args.format not in (None, "chrome"):
        raise ProfilerError(f"--chrome and --format {args.format} contradict each other; give one")
    chosen = FORMATS[args.format or ("chrome" if args.chrome else DEFAULT)]
    runs = [load_trace(t) for t in args.traces]
    out = Path(args.output) if args.output else Path(args.traces[0]).with_suffix("").with_suffix(chosen.suffix)
    check_writable(out, "export")
    try:
        chosen.write(runs, args.traces, out)
    except OSError as exc:
        raise ProfilerError(f"{out}: cannot write the export ({exc.strerror or exc})") from None
    print(f"offload-prof: wrote {out} ({len(runs)} run{'s' if len(runs) != 1 else ''}){chosen.note}", file=sys.stderr)
    return 0
