"""What several commands share: the default trace name, trace loading, the link to model costs on, file checks.

`tui` and `demo` also share how they show runs: in the TUI where a
terminal can run one, else as the text the TUI would open on.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ..errors import ProfilerError

if TYPE_CHECKING:
    from ..trace.model import Run
    from ..trace.records import Link

DEFAULT_TRACE = "offload-prof.json"


def load_trace(path: str) -> Run:
    from ..trace.model import Run

    return Run.load(path)


def model_link(run: Run, spec: str | None, no_model: bool) -> Link | None:
    """The link a report models copy costs on: none with `--no-model`, else `--link` or the default for the run."""
    from ..trace.link import model_for

    return None if no_model else model_for(run, spec)[0]


def check_writable(path: Path) -> None:
    """A one-line error unless `path` can be created as a file (its folder exists, it is no folder itself)."""
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ProfilerError(f"{path}: folder {parent} does not exist")
    if path.is_dir():
        raise ProfilerError(f"{path}: is a directory; give a file name for the trace")


def save_trace(run: Run, output: Path) -> None:
    """Write `run` to `output`; a one-line error if the file cannot be written."""
    try:
        run.save(output)
    except OSError as exc:
        raise ProfilerError(f"{output}: cannot write trace ({exc.strerror or exc})") from None


# ----------------------------------------------------------- tui and demo
def add_view_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--link", help="model copy costs on this link profile (name or file; default on NumPy runs: pcie5-x16)")
    p.add_argument("--no-model", action="store_true", help="show measured figures only")
    p.add_argument("--no-tui", action="store_true", help="print the comparison as text instead of opening the TUI")


def interactive() -> bool:
    """Whether a TUI can run here: both ends of the terminal are a TTY."""
    return sys.stdout.isatty() and sys.stdin.isatty()


def show(runs: Sequence[Run], paths: Sequence[str], args: argparse.Namespace) -> int:
    """Open the TUI on `runs` (each the trace file at its path), or print their text report where no TUI can run.

    Textual is imported only when a TUI is about to start, so the text
    mode (`--no-tui`, a pipe, CI) never loads it.
    """
    from ..outputs.report import render_runs

    link = model_link(runs[0], args.link, args.no_model)
    if args.no_tui or not interactive():
        if not args.no_tui:
            print("offload-prof: no terminal, printing the comparison as text (open it with `offload-prof tui "
                  + " ".join(paths) + "`)", file=sys.stderr)
        sys.stdout.write(render_runs(runs, paths, link))
        return 0
    from ..tui.app import run_app
    from ..tui.session import Session

    return run_app(Session.build(runs, paths, link, from_files=True))
