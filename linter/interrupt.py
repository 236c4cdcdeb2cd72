"""Ctrl-C in `offload-lint`: one line, exit 130, nothing half-written, nothing invented.

Python turns SIGINT into a KeyboardInterrupt wherever the interpreter is,
and three places took it for something else: the first tenth of a second,
while the command's modules still load (a traceback of 15 to 40 lines);
LibCST's native parser and a check's `except Exception`, which read an
interruption inside them as a file that does not parse or as a bug of the
tool ("a fix produced code that does not parse", an internal error); and
the interpreter's exit after the message, which sometimes died of the
signal itself (status -2, not 130).

So the command takes SIGINT before it imports anything heavy (`install`:
while loading, Ctrl-C ends it at once) and, once inside `main`, hands it to
`handle` (`arm`), which records the request and raises KeyboardInterrupt
as usual; code that
catches broad exceptions asks `check()` first and lets the interruption
through; and `main` ends the process with `finish`, which writes the one
line and leaves with status 130 at once (`os._exit`): a report not yet
written stays unwritten, and files are written by rename, so none is
half-written. In-process callers (tests, the language server) are left
with Python's own handler.

Once `main` has its answer (`settle`), Ctrl-C is ignored: the work is done
and said. Without that, a SIGINT in the interpreter's last tenth of a
second killed it with status -2 (7 of 60 runs interrupted near the end): the
interpreter gives SIGINT back to the default action before it finishes
tearing down, and the default action is death by the signal. An ignored
signal stays ignored through that teardown.
"""

from __future__ import annotations

import _signal  # the C module alone: `signal` imports `enum`, long enough on a loaded machine for a Ctrl-C to land
import os
import sys

TYPE_CHECKING = False  # `typing` is not imported either: nothing before `install` may take time
if TYPE_CHECKING:
    from types import FrameType
    from typing import NoReturn

_requested = False


def handle(signum: int, frame: FrameType | None) -> None:
    global _requested
    _requested = True
    raise KeyboardInterrupt


def install() -> None:
    """Take over SIGINT for the command's process (never in a library caller's): while it loads, Ctrl-C ends it."""
    _signal.signal(_signal.SIGINT, lambda signum, frame: finish())


def arm() -> None:
    """From here on (inside `main`'s handlers) Ctrl-C is a KeyboardInterrupt, recorded for `check`."""
    _signal.signal(_signal.SIGINT, handle)


def settle() -> None:
    """The command has its exit status and has written its output: from here Ctrl-C changes nothing, so it is ignored."""
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)


def requested() -> bool:
    """Was Ctrl-C pressed (even if what it interrupted turned it into another exception)?"""
    return _requested


def check() -> None:
    """Raise KeyboardInterrupt if Ctrl-C was pressed: call it before treating an exception as a finding or a bug."""
    if _requested:
        raise KeyboardInterrupt


def as_command() -> bool:
    """Is this process `offload-lint` (the console script or `python -m linter`), not a program importing it?"""
    program = sys.argv[0] if sys.argv else ""
    if os.path.basename(program) == "offload-lint" or program.endswith(os.path.join("linter", "__main__.py")):
        return True
    original = list(getattr(sys, "orig_argv", ()))  # `python -m linter`, while the package itself loads
    return any(a == "-m" and b == "linter" for a, b in zip(original, original[1:]))


def finish() -> NoReturn:
    """The end of an interrupted command: one line on stderr, status 130, no exit handlers, no buffered output."""
    try:
        os.write(2, b"offload-lint: interrupted\n")
    finally:
        os._exit(130)
