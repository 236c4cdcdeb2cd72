"""`OFFLOAD_GUARD=raise|warn|log` and `OFFLOAD_GUARD_KINDS=h2d,d2h,sync`: a guard around a whole program.

`offload-prof run` reads these before the target starts, so that a CI job
can run an unmodified script under a guard: with `raise` the first
forbidden copy raises at its line and the run exits non-zero; with `log`
the summary is printed when the target ends. A bad value is refused
before anything runs, in one line (exit 2).
"""

from __future__ import annotations

from typing import Mapping

from ..errors import ProfilerError
from .records import KINDS, MODES, Rules
from .scopes import NoTransfers

DEFAULT_KINDS = "h2d,d2h"


def from_environment(environ: Mapping[str, str]) -> NoTransfers | None:
    """The scope `OFFLOAD_GUARD` asks for (not yet entered), or None when it is unset, empty or `off`."""
    mode = environ.get("OFFLOAD_GUARD", "").strip().lower()
    if mode in ("", "off", "0"):
        return None
    if mode not in MODES:
        raise ProfilerError(f"OFFLOAD_GUARD={environ['OFFLOAD_GUARD']!r}: use {', '.join(MODES)} (or off)")
    raw = environ.get("OFFLOAD_GUARD_KINDS", DEFAULT_KINDS)
    kinds = {k.strip().lower() for k in raw.split(",") if k.strip()}
    unknown = sorted(kinds - set(KINDS))
    if unknown or not kinds:
        what = ", ".join(unknown) if unknown else "nothing"
        raise ProfilerError(f"OFFLOAD_GUARD_KINDS={raw!r}: {what} is not a kind; use a comma-separated list of "
                            f"{', '.join(KINDS)}")
    rules = Rules.make(h2d="h2d" in kinds, d2h="d2h" in kinds, syncs="sync" in kinds, mode=mode)
    return NoTransfers(rules, summary=False)
