"""Whose regions a launch sees: a region belongs to the thread or task that opened it.

The present table (which host memory is resident) describes the device and
so is one per backend, but a region is a lexical promise of the code that
opened it: "inside this block these arrays live on the device". Another
thread that launches on the same array knows nothing of that promise; if
it silently used the resident copy, its own host array would not change
(the result lands on the device, copied back only when the other thread's
region ends). So every mapping records its *owner*, and a launch, region
or `update_host` that touches a mapping of another owner is refused with
`BorrowError`, unless the region was opened `shared=True`.

The owner lives in a `contextvars.ContextVar`, so the rule follows
Python's own notion of "the same flow of control": a thread started with
`threading.Thread` or a `ThreadPoolExecutor` begins with a fresh context
(its own owner), each asyncio task runs in a copy of the context it was
created in, so a task created inside a region shares that region (like
OpenMP tasks share the data environment they are created in), and tasks
created outside it do not. `asyncio.to_thread` and `copy_context().run`
carry the context to another thread on purpose; launches there are
serialised with the owner's (see `claims`).
"""

from __future__ import annotations

import sys
import threading
from contextvars import ContextVar, Token
from dataclasses import dataclass


@dataclass(frozen=True, eq=False)
class Owner:
    """One flow of control that opened regions; compared by identity."""

    name: str  # "thread 'MainThread'" or "task 'Task-2' on thread 'MainThread'", for messages


@dataclass(frozen=True)
class Scope:
    """The regions a context has entered, innermost last, and whose they are."""

    owner: Owner
    regions: tuple[int, ...]


_SCOPE: ContextVar[Scope | None] = ContextVar("offload_core_scope", default=None)

#: the scope of the calling context (None: it has entered no region)
current = _SCOPE.get


def here() -> str:
    """The calling thread, and asyncio task if there is one, in words."""
    thread = f"thread '{threading.current_thread().name}'"
    asyncio = sys.modules.get("asyncio")  # never imported for this: no asyncio, no task
    if asyncio is not None:
        try:
            task = asyncio.current_task()
        except RuntimeError:  # no running loop in this thread
            task = None
        if task is not None:
            return f"task '{task.get_name()}' on {thread}"
    return thread


def enter(region_id: int) -> tuple[Scope, Token[Scope | None]]:
    """Push a region on the calling context's scope, making an owner for its first region."""
    scope = _SCOPE.get()
    inner = Scope(scope.owner if scope is not None else Owner(here()), (scope.regions if scope else ()) + (region_id,))
    return inner, _SCOPE.set(inner)


def leave(token: Token[Scope | None], region_id: int) -> None:
    """Pop the region entered with `token`.

    A region left in another context than it was entered in (its
    `__exit__` called by hand from elsewhere) cannot reset the variable;
    it drops its id from that context's scope instead.
    """
    try:
        _SCOPE.reset(token)
    except (ValueError, RuntimeError):  # another context's token, or one used already
        scope = _SCOPE.get()
        if scope is not None and region_id in scope.regions:
            _SCOPE.set(Scope(scope.owner, tuple(r for r in scope.regions if r != region_id)))
