"""The check registry: rule codes to the functions that report them.

A check is a function of a CheckedFile that reports through `file.report`.
One function may serve several codes when they share their work (the
transfer check classifies each call once for OFF101, OFF105-OFF108); the
engine runs it once when any of its codes is enabled. One code may have
several functions when its cases read different records (OFF104: syncs
among the calls, tests among the branches, masks among the subscripts). The tool diagnostics
(OFF9xx: a file that cannot be read, parsed or is too large never reaches a
check) are the engine's own, listed in `engine.DIAGNOSTICS`.

The registry lives apart from the package's `__init__`, which imports the
check modules: each module imports `check` from here, so nothing imports
the package that imports it.
"""

from __future__ import annotations

from typing import Callable

from .file import CheckedFile

Check = Callable[[CheckedFile], None]
CHECKS: dict[str, list[Check]] = {}


def check(*codes: str) -> Callable[[Check], Check]:
    def register(fn: Check) -> Check:
        for code in codes:
            functions = CHECKS.setdefault(code, [])
            if fn in functions:
                raise RuntimeError(f"{fn.__name__} registered twice for {code}")
            functions.append(fn)
        return fn

    return register


def checks_for(enabled: frozenset[str]) -> list[Check]:
    """Each check function once, in registration order, if any of its codes is enabled."""
    out: list[Check] = []
    for code, functions in CHECKS.items():
        if code in enabled:
            out.extend(fn for fn in functions if fn not in out)
    return out
