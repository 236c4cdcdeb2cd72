"""Write a run's report in the chosen format, and the one-line summaries around it.

The report goes to stdout or `--output-file`; in text format the summary
follows it ("Found 3 findings. [*] 2 fixable with the `--fix` option.").
Internal errors (a check that failed on a file) always go to stderr, one
line per file, so they are never mistaken for findings.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from . import __version__, reporters

if TYPE_CHECKING:
    from .runner import RunResult
    from .session import Session


def emit(session: Session, run: RunResult) -> int:
    """Print the report; returns the number of findings that count for the exit code."""
    args = session.args
    items = session.items(run)
    rules = session.rules
    unsafe = session.unsafe
    if args.statistics:
        report = reporters.statistics(items, rules, unsafe, as_json_list=args.format == "json")
    elif args.format == "json":
        report = reporters.as_json(items, rules, unsafe, {path: session.context_of(path) for path, _ in items})
    elif args.format == "sarif":
        sources = {path: job.text for path, job in run.jobs.items()}
        report = reporters.sarif(items, rules, __version__, sources)
    elif args.format == "github":
        report = reporters.github(items, rules, unsafe)
    else:
        report = reporters.text(items, rules, unsafe)
    summary = ""
    if args.format == "text":
        summary = reporters.summary(items, unsafe)
        if session.fixed is not None and session.fixed.fixed:
            n = session.fixed.fixed
            summary = f"Fixed {n} finding{'s' if n != 1 else ''} in {session.fixed.files} file{'s' if session.fixed.files != 1 else ''}.\n" + summary
    if args.output_file:
        try:
            Path(args.output_file).write_text(report, encoding="utf-8")
        except OSError as exc:
            sys.stderr.write(f"offload-lint: cannot write {args.output_file}: {exc.strerror or exc}\n")
            return len(items)
        if summary:
            sys.stderr.write(summary + "\n")
    else:
        sys.stdout.write(report)
        if summary:
            sys.stdout.write(summary + "\n")
    for result in session.errors(run):
        sys.stderr.write(f"offload-lint: internal error while checking {result.path}: {result.error} (please report it)\n")
    return sum(1 for _, f in items if not f.suppressed)
