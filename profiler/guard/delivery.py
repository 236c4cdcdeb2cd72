"""Making a finding surface at the user's line, from a callback that cannot raise into the program.

A source learns of a forbidden copy inside a callback: CUPTI's API
callback (a C function pointer CUPTI calls on the thread making the CUDA
call) or offload_core's event watcher (in the middle of `offload()`).
An exception raised there never reaches the user: ctypes prints and
drops it, and offload_core drops a watcher that raises. So the finding
is recorded in the callback, and raised from a Python-level check that
runs in the user's own frame the moment the offending call returns:

1. the callback sets a one-shot trace function on the user's frame
   (`frame.f_trace`, with `f_trace_opcodes` so that it fires on the
   next *instruction*, not the next line) and turns tracing on for this
   thread (`sys.settrace`, whose global function traces no other frame);
2. the library call returns; before the user's frame executes its next
   instruction (the `STORE_FAST` of `y = cp.asarray(x)`, the `POP_TOP`
   of `t.item()`), the interpreter calls the trace function, which
   restores the previous tracing and raises;
3. an exception raised by a trace function is raised in the traced
   frame at its current instruction, so the traceback ends at the user's
   line, exactly as if the library call had raised.

Nothing else would do: `PyThreadState_SetAsyncExc` surfaces at the next
"eval breaker" check, which may fall inside the library's own Python
code (CuPy's memory pool, in a `finally`) or several lines later, and
takes only an exception class; a `sys.setprofile` `c_return` hook sees
only builtin functions (not Cython's, CuPy's) and costs every call of
the guarded scope, violation or not. The trace costs nothing until a
violation and is gone as soon as it has fired. CPython clears tracing
when a trace function raises, so a tracer that was already on
(a debugger, coverage) is put back when the scope ends
(`restore_tracing`).

Warnings need none of this: `warnings.warn_explicit` names any file and
line. When a filter turns the warning into an error (pytest's
`filterwarnings = error`), that error is raised at the line the same way.
"""

from __future__ import annotations

import sys
import threading
import warnings
from types import FrameType
from typing import Any

from .records import TransferGuardWarning, Violation


class _Armed(threading.local):
    #: the exception waiting for its frame on this thread, the frame, and what tracing to put back
    error: BaseException | None = None
    frame: FrameType | None = None
    previous: Any = None
    restore: list[Any]  # tracers to put back when the scope ends

    def __init__(self) -> None:  # threading.local runs it once per thread
        self.restore = []


_ARMED = _Armed()


def pending() -> BaseException | None:
    """The exception this thread is about to raise at a user frame, if any (more findings join it)."""
    return _ARMED.error


def raise_at(frame: FrameType, error: BaseException) -> None:
    """Raise `error` in `frame` before it executes its next instruction (see the module docstring)."""
    armed = _ARMED
    if armed.error is not None:
        return
    previous = sys.gettrace()
    previous_local, previous_opcodes = frame.f_trace, frame.f_trace_opcodes

    def fire(f: FrameType, event: str, arg: Any) -> Any:
        __tracebackhide__ = True  # noqa: F841 - pytest leaves this frame out of failure reports
        _disarm()
        f.f_trace, f.f_trace_opcodes = previous_local, previous_opcodes
        if previous is not None:
            armed.restore.append(previous)
        raise error

    def trace_calls(f: FrameType, event: str, arg: Any) -> Any:
        # the global function: other frames keep whatever tracing they had (none, or the previous tracer's)
        return previous(f, event, arg) if previous is not None else None

    error.__traceback__ = None  # a warning a filter made an error was raised once already, inside the callback
    armed.error, armed.frame, armed.previous = error, frame, previous
    frame.f_trace = fire
    frame.f_trace_opcodes = True  # before settrace: on 3.12 settrace reads it to turn on instruction events
    sys.settrace(trace_calls)


def _disarm() -> None:
    armed = _ARMED
    sys.settrace(armed.previous)
    armed.error = armed.frame = armed.previous = None


def cancel() -> BaseException | None:
    """Disarm this thread's pending raise without raising (its frame is gone); returns the exception."""
    armed = _ARMED
    error, frame = armed.error, armed.frame
    if error is None:
        return None
    if frame is not None:
        frame.f_trace = None
        frame.f_trace_opcodes = False
    _disarm()
    return error


def prune(error: BaseException) -> None:
    """Cut the trace function's own frame off the end of `error`'s traceback: it ends at the user's line."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        code = tb.tb_next.tb_frame.f_code
        if code.co_name == "fire" and code.co_filename == __file__:
            tb.tb_next = tb.tb_next.tb_next
        else:
            tb = tb.tb_next


def restore_tracing() -> None:
    """Put back a tracer that CPython cleared when the guard raised through a trace function."""
    armed = _ARMED
    if armed.restore and sys.gettrace() is None:
        sys.settrace(armed.restore[-1])
    armed.restore.clear()


def warn_at(frame: FrameType | None, violation: Violation, message: str) -> BaseException | None:
    """A `TransferGuardWarning` attributed to the violation's line; raised there if a filter makes it an error.

    Returns the error a filter made of it when there is no frame to raise
    it in (the scope raises it when it ends).
    """
    site = violation.site
    filename, lineno = (site.file, site.line) if site is not None else ("<unknown>", 0)
    globals_ = frame.f_globals if frame is not None else None
    module = globals_.get("__name__") if globals_ is not None else None
    registry = globals_.setdefault("__warningregistry__", {}) if globals_ is not None else None
    try:  # no module_globals: a script run as __main__ has no __spec__.loader, which 3.12 would refuse
        warnings.warn_explicit(TransferGuardWarning(message), TransferGuardWarning, filename, lineno, module,
                               registry)
    except Warning as exc:  # a filter turned it into an error: that error belongs at the line too
        if frame is None:
            return exc
        raise_at(frame, exc)
    return None


__all__ = ["cancel", "pending", "prune", "raise_at", "restore_tracing", "warn_at"]
