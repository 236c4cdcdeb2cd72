"""`no_transfers(...)` and `allow(reason=...)`: the scopes a user writes, as context managers and decorators.

Entering a scope pushes it on this thread's or task's stack (`state`),
starts the sources if it is the first open scope of the process
(`watchers`), and says once what the guard cannot see here. Leaving it
pops it, stops the sources after the last one, and finishes by mode:
`raise` raises what could not be raised at a user line (a copy made with
no user frame on the stack), `log` writes the summary (one logging
record on the `offload_guard` logger: lines, counts, bytes), `warn` has
already warned at each line.

As a decorator each call of the function opens a fresh scope with the
same settings (recursion and threads each get their own); on an `async
def` the scope spans the coroutine's whole run, not only its creation.

JAX copies on its own threads (the upload of `jax.device_put` runs when
XLA dispatches it), out of reach of a check on the calling thread; so in
`mode="raise"` a scope also turns on JAX's own transfer guard for the
forbidden directions (where its refusal matches the rules: no
`min_bytes`, and no `allow_scalars` for reads), which refuses the
transfer at the calling line, and turns JAX's error into a
`TransferGuardError` naming that line and the refused array's bytes.
"""

from __future__ import annotations

import functools
import inspect
import logging
import math
import re
import sys
from contextlib import ExitStack
from types import TracebackType
from typing import Any, Callable, TypeVar

import numpy as np

from offload_core.sites import Site

from . import delivery
from .records import Rules, Summary, TransferGuardError, Violation
from .state import STACK, Hole, Scope
from . import watchers
from .watchers import SOURCES

F = TypeVar("F", bound=Callable[..., Any])
LOG = logging.getLogger("offload_guard")


class NoTransfers:
    """A `no_transfers(...)` scope (see `profiler.guard.no_transfers`); `violations` after it ends."""

    def __init__(self, rules: Rules, *, summary: bool = True) -> None:
        self.rules = rules
        self.summary = summary
        self.scope: Scope | None = None
        self._token: Any = None
        self._cupti = False
        self._jax: ExitStack | None = None
        #: the GPU libraries this scope guards without CUPTI ("jax" where JAX's own guard covers all it forbids)
        self._covered: tuple[str, ...] = ()
        #: whether JAX's guard in force inside is the guard's (this scope's or an enclosing one's), not the user's
        self._jax_ours = False

    @property
    def violations(self) -> list[Violation]:
        """What the scope caught (so far, while it is open)."""
        return list(self.scope.violations) if self.scope is not None else []

    def __enter__(self) -> NoTransfers:
        if self._token is not None:
            raise RuntimeError("this no_transfers scope is already open; open a new one (or use it as a decorator)")
        cupti, notes = SOURCES.acquire(self.rules)
        try:
            self.scope = Scope(self.rules)
            self._token = STACK.set(STACK.get() + (self.scope,))
            self._cupti = cupti
            enclosing = _jax_set_by_a_scope()
            self._jax = _jax_guard(self.rules, enclosing)
            self.scope.jax = self._jax is not None
            self._jax_ours = self.scope.jax or enclosing
            if self.rules.mode == "raise" and self.scope.jax and _jax_covers(self.rules):
                self._covered = ("jax",)
            for note in notes + SOURCES.blind_spots(self.rules, cupti, self._covered):
                SOURCES.say(note)
        except BaseException:
            if self._jax is not None:
                self._jax.close()
                self._jax = None
            if self._token is not None:
                STACK.reset(self._token)
                self._token = None
            SOURCES.release(cupti)
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        scope = self.scope
        assert scope is not None and self._token is not None
        try:
            if self._jax is not None:
                self._jax.close()
                self._jax = None
            STACK.reset(self._token)
        except ValueError:  # left in another context than it was entered in (a task that moved): pop ours
            STACK.set(tuple(e for e in STACK.get() if e is not scope))
        self._token = None
        SOURCES.release(self._cupti)
        waiting = delivery.cancel()  # a raise whose frame ended without executing again (never in practice)
        if waiting is not None:
            scope.undelivered.append(waiting)
        delivery.restore_tracing()
        if exc is not None:
            delivery.prune(exc)
        if exc is not None and self._jax_ours and not isinstance(exc, TransferGuardError) and _jax_refusal(exc):
            raise _from_jax(exc, self.rules, scope) from exc  # the innermost scope converts it, once
        if self.rules.mode == "log" and self.summary and scope.violations:
            LOG.warning("%s", Summary(self.rules, tuple(scope.violations)).describe())
        if scope.undelivered and exc is None:
            raise scope.undelivered[0]
        if exc is None:
            for note in SOURCES.blind_spots(self.rules, self._cupti, self._covered):
                SOURCES.say(note)
        return False

    def __call__(self, func: F) -> F:
        """The decorator form: every call runs inside a fresh scope with these settings."""
        rules, summary = self.rules, self.summary
        if inspect.iscoroutinefunction(func):
            @functools.wraps(func)
            async def guarded_async(*args: Any, **kwargs: Any) -> Any:
                with NoTransfers(rules, summary=summary):
                    return await func(*args, **kwargs)
            return guarded_async  # type: ignore[return-value]

        @functools.wraps(func)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            with NoTransfers(rules, summary=summary):
                return func(*args, **kwargs)
        return guarded  # type: ignore[return-value]


class Allow:
    """An `allow(reason=...)` hole (see `profiler.guard.allow`); `passed` counts what went through."""

    def __init__(self, reason: str) -> None:
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError("allow() needs a reason, e.g. allow(reason='one upload of the weights')")
        self.reason = reason
        self.hole: Hole | None = None
        self._token: Any = None
        self._jax: ExitStack | None = None

    @property
    def passed(self) -> int:
        return self.hole.passed if self.hole is not None else 0

    def __enter__(self) -> Allow:
        self.hole = Hole(self.reason)
        jax = sys.modules.get("jax")
        if jax is not None and _jax_set_by_a_scope():
            self._jax = ExitStack()  # the hole is a hole for JAX too
            self._jax.enter_context(jax.transfer_guard("allow"))
        self._token = STACK.set(STACK.get() + (self.hole,))
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        try:
            STACK.reset(self._token)
        except ValueError:
            STACK.set(tuple(e for e in STACK.get() if e is not self.hole))
        self._token = None
        if self._jax is not None:
            self._jax.close()
            self._jax = None
        return False

    def __call__(self, func: F) -> F:
        reason = self.reason
        if inspect.iscoroutinefunction(func):
            @functools.wraps(func)
            async def allowed_async(*args: Any, **kwargs: Any) -> Any:
                with Allow(reason):
                    return await func(*args, **kwargs)
            return allowed_async  # type: ignore[return-value]

        @functools.wraps(func)
        def allowed(*args: Any, **kwargs: Any) -> Any:
            with Allow(reason):
                return func(*args, **kwargs)
        return allowed  # type: ignore[return-value]


# -------------------------------------------------------------------------- JAX
def _jax_set_by_a_scope() -> bool:
    """Whether JAX's guard in force on this thread was set by an open scope (not by the user, nor left off)."""
    return any(isinstance(e, Scope) and e.jax for e in STACK.get())


def _jax_guard(rules: Rules, enclosing: bool) -> ExitStack | None:
    """JAX's own transfer guard as `rules` ask (None where JAX is not loaded, or the user's guard decides).

    A `raise` scope refuses its forbidden directions through it, only
    where JAX's refusal is what the rules ask for: JAX's guard has no size
    threshold and refuses one-element reads too, so a direction is left to
    the CUPTI source when `min_bytes` is set, and D2H when `allow_scalars`
    is (JAX uploads every Python scalar an operation mixes in: `y + 1` is
    a 4-byte H2D copy, refused under `min_bytes=0`). Inside a scope that
    set it (`enclosing`), the innermost scope decides, as for every other
    copy: the directions it does not refuse are set back to `allow`.
    """
    jax = sys.modules.get("jax")
    if jax is None:
        return None
    from .watchers import INTERPLAY

    if INTERPLAY.jax_guard and not enclosing:
        return None  # the user's own JAX guard is on: left to it
    h2d, d2h = _jax_directions(rules) if rules.mode == "raise" else (False, False)
    levels = [(name, "disallow_explicit" if refuse else "allow")
              for name, refuse in (("transfer_guard_host_to_device", h2d), ("transfer_guard_device_to_host", d2h))
              if refuse or enclosing]
    if not levels:
        return None
    stack = ExitStack()
    try:
        for name, level in levels:
            stack.enter_context(getattr(jax, name)(level))
    except Exception:  # a JAX without these: the CUPTI source is all there is
        stack.close()
        return None
    return stack


def _jax_directions(rules: Rules) -> tuple[bool, bool]:
    """(H2D, D2H): the directions whose refusal by JAX's guard is what `rules` ask for."""
    exact = not rules.min_bytes
    return rules.h2d and exact, rules.d2h and exact and not rules.allow_scalars


def _jax_covers(rules: Rules) -> bool:
    """Whether JAX's guard, turned on for `_jax_directions`, refuses all that `rules` forbid of JAX (syncs it cannot)."""
    return _jax_directions(rules) == (rules.h2d, rules.d2h) and not rules.syncs


#: JAX's refusal, e.g. `INVALID_ARGUMENT: Disallowed host-to-device transfer: aval=ShapedArray(float32[8]), ...`
_JAX_REFUSAL = re.compile(r"Disallowed (host-to-device|device-to-host) transfer")
_JAX_AVAL = re.compile(r"aval=ShapedArray\((?P<dtype>\w+)\[(?P<shape>[\d,\s]*)\]")


def _jax_refusal(exc: BaseException) -> bool:
    """Whether `exc` is JAX's transfer guard refusing (raised by its C++ as `jax.errors.JaxRuntimeError`)."""
    return _JAX_REFUSAL.search(str(exc)) is not None


def _jax_bytes(text: str) -> int | None:
    """The size of the refused array, from the aval JAX names (None where its dtype is not NumPy's)."""
    aval = _JAX_AVAL.search(text)
    if aval is None:
        return None
    try:
        itemsize = np.dtype(aval["dtype"]).itemsize
    except TypeError:  # bfloat16, float8_*: ml_dtypes' types have no NumPy name
        return None
    return itemsize * math.prod(int(n) for n in aval["shape"].split(",") if n.strip())


def _from_jax(exc: BaseException, rules: Rules, scope: Scope) -> TransferGuardError:
    """JAX's refusal as the guard's error, naming the user's line the traceback passes through."""
    text = str(exc)
    refusal = _JAX_REFUSAL.search(text)
    kind = "d2h" if refusal is not None and refusal[1] == "device-to-host" else "h2d"
    frame = None
    tb = exc.__traceback__
    while tb is not None:  # the innermost user frame of the traceback
        if not watchers.FRAMES.filter.is_library(tb.tb_frame.f_code):
            frame, line = tb.tb_frame, tb.tb_lineno
        tb = tb.tb_next
    site = None if frame is None else Site(frame.f_code.co_filename, line, frame.f_code.co_name)
    first = text.split("\n", 1)[0]
    violation = Violation(kind, _jax_bytes(first), site, f"jax ({first})", "", "jax.transfer_guard")
    scope.add(violation)
    return TransferGuardError(violation.describe(rules), [violation])
