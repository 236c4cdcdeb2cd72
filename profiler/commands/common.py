"""What several commands share: the default trace name, trace loading, the link to model costs on, file checks.

`tui` and `demo` also share how they show runs: in the TUI where a
terminal can run one, else as the text the TUI would open on.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from ..errors import ProfilerError

if TYPE_CHECKING:
    from ..analysis.detectors import Finding
    from ..analysis.verdict import Verdict
    from ..trace.model import Run
    from ..trace.records import Link

DEFAULT_TRACE = "offload-prof.json"


def positive_int(text: str) -> int:
    """An option value of 1 or more (`--top`): argparse's `type`, so a bad one is argparse's one-line error."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def load_trace(path: str) -> Run:
    """The trace at `path`, ready for any analysis; a one-line `TraceError` for any bad file."""
    from ..trace.model import Run, require_columns

    return require_columns(Run.load(path), path)


def model_link(run: Run, spec: str | None, no_model: bool) -> Link | None:
    """The link a report models copy costs on: none with `--no-model`, else `--link` or the default for the run."""
    from ..trace.link import model_for

    return None if no_model else model_for(run, spec)[0]


def check_writable(path: Path, what: str = "trace") -> None:
    """A one-line error unless `path` can be created as a file; its missing folders are created when it is written.

    Every command that writes a file (`run`, `demo`, `export`,
    `import-rocprof`, `gate --update-baseline`, `calibrate`) creates the
    folders it names, as `mkdir -p` would, so the check is that no folder
    stands at `path` and that the nearest folder that exists above it is
    one the profiler may write into; it runs before any work is done. A
    symlink is checked where it leads (its target is written), a character
    device (`/dev/null`) is written to in place, and what cannot be written
    safely (a FIFO, a folder, a socket) is refused here
    (`offload_core.outfiles.output_problem`).
    """
    from offload_core.outfiles import is_device, output_problem, resolved

    problem = output_problem(path)
    if problem is not None:
        raise ProfilerError(f"{path}: {problem}; give a file name for the {what}")
    if is_device(path):
        if not os.access(path, os.W_OK):
            raise ProfilerError(f"{path}: cannot write the {what} to this device (permission denied)")
        return
    if path.is_symlink():
        path = resolved(path)
    folder = path.parent
    while not folder.exists() and not folder.is_symlink() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise ProfilerError(f"{path}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ProfilerError(f"{path}: cannot create the {what} in {folder} (permission denied)")


def save_trace(run: Run, output: Path) -> None:
    """Write `run` to `output`; a one-line error if the file cannot be written."""
    try:
        run.save(output)
    except OSError as exc:
        raise ProfilerError(f"{output}: cannot write trace ({exc.strerror or exc})") from None


def write_stdout(text: str) -> None:
    """Print a command's result; a full disk or a closed terminal behind stdout is a one-line error.

    A reader that went away (`offload-prof report x | head`) stays a
    `BrokenPipeError`, which `profiler.cli` ends on quietly.
    """
    from offload_core.outfiles import encoded
    from offload_core.outfiles import write_stdout as write

    def failed(why: str) -> ProfilerError:
        return ProfilerError(f"cannot write to standard output ({why})")

    try:
        write(text, failed)
    except UnicodeEncodeError:  # a file name that is not UTF-8 (a lone surrogate) on a strict stdout
        write(encoded(text, sys.stdout.encoding or "utf-8"), failed)


@dataclass(frozen=True)
class Shown:
    """What `report` and `compare` render, in any format: the runs, their files, their findings and verdicts."""

    runs: tuple[Run, ...]
    paths: tuple[str, ...]
    #: each run's (findings, verdict), as `profiler.analysis.diagnosis.analyse` gives them
    diagnoses: tuple[tuple[list[Finding], Verdict | None], ...]
    link: Link | None
    top: int


#: a `--format` of `report` or `compare`: the text of what is shown
ShownWriter = Callable[[Shown], str]


def html_page(shown: Shown) -> str:
    """`--format html` of `report` and `compare`: one self-contained page, with the timeline."""
    from ..outputs.html.page import named, render_page

    return render_page(named(shown.runs, shown.paths, shown.diagnoses), link=shown.link, top=shown.top)


def add_output_arguments(p: argparse.ArgumentParser, formats: Mapping[str, ShownWriter]) -> None:
    """`--format` (a key of `formats`, text by default) and `-o FILE`, as `report` and `compare` take them."""
    p.add_argument("--format", choices=tuple(formats), default="text",
                   help="output format (default: %(default)s); html: one self-contained page with the timeline")
    p.add_argument("-o", "--output", help="write to this file, its missing folders created (default: standard output)")


def write_output(text: str, output: str | None, what: str = "report") -> None:
    """A command's result to `output` (atomically: a failed write leaves no half page), or to stdout without one."""
    if output is None:
        write_stdout(text)
        return
    from offload_core.outfiles import encoded, write_report

    target = Path(output)
    check_writable(target, what)
    write_report(target, encoded(text), lambda why: ProfilerError(f"{target}: cannot write the {what} ({why})"))
    print(f"offload-prof: wrote {what} {target}", file=sys.stderr)


def abandon_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush cannot fail on the closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real descriptor behind stdout (a test's capture)
        pass


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
        write_stdout(render_runs(runs, paths, link))
        return 0
    from ..tui.app import run_app
    from ..tui.session import Session

    return run_app(Session.build(runs, paths, link, from_files=True))
