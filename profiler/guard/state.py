"""The guard scopes active in the current thread or task, and the one check every source calls.

Scopes live in a `ContextVar` holding a tuple (innermost last): each
thread starts with an empty context, and each asyncio task runs in a
copy of the context that created it, so a copy made by another thread,
or by a task started outside the scope, is never blamed on it. The
innermost entry decides: a `Scope` checks with its own `Rules` (an inner
`no_transfers` replaces the outer one's settings while it runs, as an
inner `jax.transfer_guard` does), and a `Hole` (`allow(reason=...)`)
lets everything through.

`report` runs inside the sources' callbacks, on the thread that made the
copy, for every copy and sync of the process while any scope is open
anywhere, so it returns after one `ContextVar.get` when this context has
none.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from types import FrameType

from offload_core.sites import Site

from . import delivery
from .records import SCALAR_BYTES, Rules, TransferGuardError, Violation


class Scope:
    """One entered `no_transfers` scope: its rules and what it has caught (mutable, owned by the scope)."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.violations: list[Violation] = []
        #: caught where no frame could take the exception (or the warning-made error): raised at the scope's end
        self.undelivered: list[BaseException] = []
        #: (file, line) already warned about (`mode="warn"` warns once per line)
        self.warned: set[tuple[str, int]] = set()
        #: the instruction of the last scalar read let through, whose sync is part of it (`allow_scalars`)
        self.scalar_at: tuple[int, int] | None = None
        #: whether this scope turned JAX's own transfer guard on (`scopes`)
        self.jax = False
        self._lock = threading.Lock()

    def add(self, violation: Violation) -> None:
        with self._lock:
            self.violations.append(violation)


class Hole:
    """An `allow(reason=...)` inside a scope: copies and syncs pass, and are counted."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.passed = 0


Entry = Scope | Hole
STACK: ContextVar[tuple[Entry, ...]] = ContextVar("offload_guard_scopes", default=())


def current() -> Scope | None:
    """The innermost open scope of this thread or task (None outside any, or inside a hole)."""
    stack = STACK.get()
    if not stack or isinstance(stack[-1], Hole):
        return None
    return stack[-1]


def report(kind: str, nbytes: int | None, frame: FrameType | None, call: str, api: str, source: str) -> None:
    """A source saw a copy (`h2d`/`d2h`) or `sync` made on this thread; act on it if a scope forbids it.

    `frame` is the user's frame that made it (the first one outside the
    GPU libraries), or None where there is none.
    """
    stack = STACK.get()
    if not stack:
        return
    top = stack[-1]
    if isinstance(top, Hole):
        top.passed += 1
        return
    rules = top.rules
    if not rules.forbids(kind):
        return
    if kind != "sync" and nbytes is not None and nbytes < rules.min_bytes:
        return
    if rules.allow_scalars:
        instr = (id(frame), frame.f_lasti) if frame is not None else None
        if kind == "d2h" and nbytes is not None and nbytes <= SCALAR_BYTES:
            top.scalar_at = instr
            return
        if kind == "sync" and instr is not None and instr == top.scalar_at:
            return
    site = None if frame is None else Site(frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name)
    violation = Violation(kind, nbytes, site, call, api, source)
    top.add(violation)
    if rules.mode == "raise":
        _raise(top, frame, violation)
    elif rules.mode == "warn" and site is not None:
        key = (site.file, site.line)
        root = next(e for e in stack if isinstance(e, Scope))
        if key in root.warned:
            return
        root.warned.add(key)
        error = delivery.warn_at(frame, violation, violation.describe(rules))
        if error is not None:
            top.undelivered.append(error)


def _raise(scope: Scope, frame: FrameType | None, violation: Violation) -> None:
    waiting = delivery.pending()
    if isinstance(waiting, TransferGuardError):  # the same call made more than one: they travel together
        waiting.violations.append(violation)
        return
    error = TransferGuardError(violation.describe(scope.rules), [violation])
    if frame is None:
        scope.undelivered.append(error)
    else:
        delivery.raise_at(frame, error)
