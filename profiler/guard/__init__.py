"""Transfer guard: forbid host<->device copies and syncs in a scope, and name the line that made one.

    from profiler import guard

    with guard.no_transfers():               # H2D and D2H forbidden; syncs=True forbids syncs too
        for _ in range(steps):
            offload(step, state, params)     # fine while both stay resident in a region
            with guard.allow(reason="logging"):
                print(float(loss))           # a named hole

    @guard.no_transfers(mode="warn", min_bytes="64 KiB")
    def train_step(...): ...

Modes: `raise` (a `TransferGuardError` at the user's line that made the
copy, naming the line, the library call, direction and bytes), `warn` (a
`TransferGuardWarning` at that line, once per line), `log` (collected and
summarised on the `offload_guard` logger when the scope ends). Small copies
pass with `min_bytes`, one-element reads for control flow with
`allow_scalars=True`. Scopes are per thread and per asyncio task.

Sources: offload_core's events on every backend (a machine without a GPU
included) and CUPTI on NVIDIA for plain CuPy, PyTorch, Numba and JAX code
(`source="auto"|"offload"|"cupti"`). How a finding made inside a CUPTI
callback surfaces at the user's line is told in `profiler.guard.delivery`
and docs/profiler.md. `offload-prof run` reads `OFFLOAD_GUARD=raise|warn|log`
(and `OFFLOAD_GUARD_KINDS=h2d,d2h,sync`); the pytest plugin offers
`@pytest.mark.no_transfers(...)`.
"""

from __future__ import annotations

from .records import GuardSourceWarning, Rules, Summary, TransferGuardError, TransferGuardWarning, Violation
from .scopes import Allow, NoTransfers
from .watchers import GuardSourceError

for _public in (TransferGuardError, TransferGuardWarning, GuardSourceWarning, GuardSourceError):
    _public.__module__ = __name__  # tracebacks and warnings name the public module


def no_transfers(*, h2d: bool = True, d2h: bool = True, syncs: bool = False, mode: str = "raise",
                 min_bytes: int | str = 0, allow_scalars: bool = False, source: str = "auto") -> NoTransfers:
    """A scope (`with`) or decorator in which the named copies and syncs are mistakes.

    `min_bytes` (an int or "64 KiB") lets smaller copies through;
    `allow_scalars` lets through one-element reads (a D2H of at most 16
    bytes, and the sync that completes it: `if x.item() > 0:`). Bad
    arguments raise `ValueError`/`TypeError` with a one-line message.
    """
    return NoTransfers(Rules.make(h2d=h2d, d2h=d2h, syncs=syncs, mode=mode, min_bytes=min_bytes,
                                  allow_scalars=allow_scalars, source=source))


def allow(*, reason: str) -> Allow:
    """A named hole inside a guarded scope (`with` or decorator): copies and syncs pass and are counted."""
    return Allow(reason)


__all__ = ["Allow", "GuardSourceError", "GuardSourceWarning", "NoTransfers", "Rules", "Summary",
           "TransferGuardError", "TransferGuardWarning", "Violation", "allow", "no_transfers"]
