"""Write a run's report in the chosen format, and the one-line summaries around it.

The report goes to stdout or `--output-file`; in text format the summary
follows it ("Found 3 findings. [*] 2 fixable with the `--fix` option.").
Internal errors (a check that failed on a file) always go to stderr, one
line per file, so they are never mistaken for findings.

A report that cannot be written (no such folder, no permission, a full
disk) is an `OutputError`: the command exits 2, whatever the findings, so
that CI never passes without its report, and a half-written file is
removed rather than left for the next step to upload. The file is created
with the usual permissions (0666 less the umask), like any other tool's
output.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from offload_core import outfiles

from .. import __version__
from . import formats


class OutputError(OSError):
    """The report could not be written; the message is one line naming the file."""

if TYPE_CHECKING:
    from ..run.runner import RunResult
    from ..run.session import Session


def emit(session: Session, run: RunResult) -> int:
    """Print the report; returns the number of findings that count for the exit code."""
    args = session.args
    items = session.items(run)
    rules = session.rules
    unsafe = session.unsafe
    if args.statistics:
        report = formats.statistics(items, rules, unsafe, as_json_list=args.format == "json")
    elif args.format == "json":
        report = formats.as_json(items, rules, unsafe, {path: session.context_of(path) for path, _ in items})
    elif args.format == "sarif":
        sources = {path: job.text for path, job in run.jobs.items()}
        report = formats.sarif(items, rules, __version__, sources, run.notebooks)
    elif args.format == "github":
        report = formats.github(items, rules, unsafe, run.notebooks)
    else:
        report = formats.text(items, rules, unsafe)
    summary = ""
    if args.format == "text":
        summary = formats.summary(items, unsafe)
        if session.applied is not None and session.applied.fixed:
            n = session.applied.fixed
            summary = f"Fixed {n} finding{'s' if n != 1 else ''} in {session.applied.files} file{'s' if session.applied.files != 1 else ''}.\n" + summary
    if args.output_file:
        write_report(Path(args.output_file), report)
        if summary:
            sys.stderr.write(summary + "\n")
    else:
        write_stdout(report + (summary + "\n" if summary else ""))
    for result in session.errors(run):
        sys.stderr.write(f"offload-lint: internal error while checking {result.path}: {result.error} (please report it)\n")
    return sum(1 for _, f in items if not f.suppressed)


def write_stdout(text: str) -> None:
    """Print to stdout now; a full disk or a closed terminal behind it is an `OutputError`.

    A reader that went away (`offload-lint | head`) stays a BrokenPipeError:
    the CLI ends quietly on that, as other Unix tools do.
    """
    outfiles.write_stdout(text, lambda why: OutputError(f"cannot write the report to standard output: {why}"))


def write_report(path: Path, report: str) -> None:
    """Write `report` to `path` whole (in place: a device or FIFO works), or raise `OutputError` with no partial file."""
    outfiles.write_report(path, report, lambda why: OutputError(f"cannot write {path}: {why}"), in_place=True)
