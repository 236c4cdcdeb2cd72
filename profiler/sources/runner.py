"""Running a target script or module in this process, as `python script.py` / `python -m mod` would.

The target must not be able to tell that it is profiled: it gets its own
`sys.argv`, `sys.path[0]` (the script's folder, or the current folder for
`-m`) and a fresh `__main__` module, and whatever it raises or exits with
becomes an `Ending` instead of ending the profiler, so that the trace is
written in every case and the exit code is passed on. SIGTERM is turned
into an exception for the same reason (a CI runner that times a job out
still gets a trace). Everything is restored afterwards.
"""

from __future__ import annotations

import builtins
import importlib.util
import os
import runpy
import signal
import sys
import threading
import traceback
import types
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from ..errors import ProfilerError
from ..trace.records import Outcome


@dataclass(frozen=True)
class Target:
    """What to run: a script path or a module name, and its arguments."""

    kind: str  # "script" or "module"
    name: str
    args: tuple[str, ...] = ()

    @property
    def argv(self) -> list[str]:
        return [self.name, *self.args]

    def command(self) -> list[str]:
        """The target as offload-prof's own arguments (`-m mod ...` or `script ...`)."""
        return (["-m", self.name] if self.kind == "module" else ["--", self.name]) + list(self.args)

    def check(self) -> None:
        """Fail before anything runs when the target does not exist (exit 2, as python does)."""
        if self.kind == "script":
            path = Path(self.name)
            if not path.exists():
                raise ProfilerError(f"{self.name}: no such file; give a Python script or -m MODULE")
            if path.is_dir():
                raise ProfilerError(f"{self.name}: is a directory; give a Python script or -m MODULE")
        else:
            try:
                spec = importlib.util.find_spec(self.name)
            except (ImportError, ValueError) as exc:
                raise ProfilerError(f"-m {self.name}: cannot import ({exc})") from None
            if spec is None:
                raise ProfilerError(f"-m {self.name}: no module named {self.name!r}")


@dataclass(frozen=True)
class Ending:
    """How the target ended: `outcome` (`ok`, `exit` for SystemExit, `exception`, `interrupted`), its exit code."""

    outcome: Outcome
    exit_code: int


class Terminated(BaseException):
    """SIGTERM, raised in the target so that the trace is still written."""


def exit_code_of(code: Any) -> int:
    """What `sys.exit(code)` makes the process return (printing non-int codes, as Python does)."""
    if code is None:
        return 0
    if isinstance(code, int) and not isinstance(code, bool):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def run_target(target: Target) -> Ending:
    """Run the target to its end; never raises for anything the target does."""
    with _sys_state(target), _sigterm_as_exception():
        try:
            if target.kind == "script":
                _exec_script(target.name)
            else:
                runpy.run_module(target.name, run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            return Ending("exit", exit_code_of(exc.code))
        except KeyboardInterrupt:
            _print_target_traceback()
            return Ending("interrupted", 130)
        except Terminated:
            return Ending("interrupted", 128 + signal.SIGTERM)
        except BaseException:
            _print_target_traceback()
            return Ending("exception", 1)
    return Ending("ok", 0)


def _exec_script(path: str) -> None:
    source = Path(path).read_bytes()
    full = os.path.abspath(path)
    main = types.ModuleType("__main__")
    main.__file__ = full
    main.__builtins__ = builtins  # type: ignore[attr-defined]
    main.__cached__ = None  # type: ignore[attr-defined]
    main.__spec__ = None
    sys.modules["__main__"] = main
    code = compile(source, full, "exec", dont_inherit=True)
    exec(code, main.__dict__)


@contextmanager
def _sys_state(target: Target) -> Iterator[None]:
    saved_argv = sys.argv[:]
    saved_path = sys.path[:]
    saved_main = sys.modules.get("__main__")
    sys.argv = target.argv
    first = os.path.dirname(os.path.abspath(target.name)) if target.kind == "script" else os.getcwd()
    if sys.path:
        sys.path[0] = first
    else:
        sys.path.append(first)
    try:
        yield
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        if saved_main is not None:
            sys.modules["__main__"] = saved_main


@contextmanager
def _sigterm_as_exception() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise Terminated()

    previous = signal.getsignal(signal.SIGTERM)
    # what a fork of the target restores (`profiler.sources.children`): this handler is for the target alone
    handler.offload_prof_previous = previous  # type: ignore[attr-defined]
    signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def signals_deferred() -> Iterator[None]:
    """Ignore SIGINT and SIGTERM while the trace is written, so that it is written whole."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _print_target_traceback() -> None:
    """The target's traceback, as Python would print it, without the profiler's own frames.

    Frames that ask to be hidden as pytest's are (`__tracebackhide__`: the
    transfer guard's, which raises at the user's line) are left out too.
    """
    etype, value, tb = sys.exc_info()
    here = os.path.abspath(__file__)
    runpy_file = os.path.abspath(runpy.__file__)
    while tb is not None and os.path.abspath(tb.tb_frame.f_code.co_filename) in (here, runpy_file):
        tb = tb.tb_next
    link = tb
    while link is not None and link.tb_next is not None:
        if link.tb_next.tb_frame.f_locals.get("__tracebackhide__") is True:
            link.tb_next = link.tb_next.tb_next
        else:
            link = link.tb_next
    traceback.print_exception(etype, value, tb, file=sys.stderr)
