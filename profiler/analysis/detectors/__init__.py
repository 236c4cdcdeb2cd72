"""Runtime detectors: the catalog's OFF5xx rules applied to a recorded `Run`.

`detect(run)` runs every detector in `ORDER` over the run and returns the
findings, the largest expected saving first. The order matters because records are claimed
(see `base`): the most specific explanation of a wasted copy comes first,
so that each copy is blamed once. Thresholds are the rules' `options` in
the catalog, overridable per call (`options={"OFF501": {"min_launches": 5}}`).
Fingerprint-based rules (OFF502, OFF503) stay silent on runs recorded
without fingerprints; `needs_fingerprints` names them so reports can say so.
"""

from __future__ import annotations

from functools import cache
from typing import Any, Callable, Iterable, Mapping

from offload_core.catalog import Catalog, load_catalog

from ...trace.model import Run
from ...trace.records import Link
from ..replay import Timeline
from .base import Context, Finding
from .copies import large_pageable_copy, many_small_copies
from .repeats import per_launch_transfer, reupload_unchanged
from .roundtrips import round_trip, write_back_never_read
from .syncs import sync_per_launch

Detector = Callable[[Context], None]

#: (rule id, detector), in claiming order
ORDER: tuple[tuple[str, Detector], ...] = (
    ("OFF501", per_launch_transfer),
    ("OFF503", round_trip),
    ("OFF502", reupload_unchanged),
    ("OFF506", write_back_never_read),
    ("OFF505", many_small_copies),
    ("OFF504", large_pageable_copy),
    ("OFF507", sync_per_launch),
)
RULES = tuple(sorted(code for code, _ in ORDER))
needs_fingerprints = ("OFF502", "OFF503")

__all__ = ["Finding", "ORDER", "RULES", "detect", "needs_fingerprints"]

@cache
def _catalog() -> Catalog:
    """The shipped catalog, read once per process (it is immutable data)."""
    return load_catalog()


def detect(
    run: Run,
    *,
    link: Link | None = None,
    catalog: Catalog | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    select: Iterable[str] | None = None,
    timeline: Timeline | None = None,
) -> list[Finding]:
    """Findings of the runtime rules on `run`, largest expected saving first; `link` adds modelled times lost.

    `timeline` is the run's, when the caller inferred it already (the verdict needs it too).
    """
    cat = catalog or _catalog()
    chosen = set(select) if select is not None else {c for c in RULES if cat.rules[c].default_enabled}
    unknown = chosen - set(RULES)
    if unknown:
        raise KeyError(f"no runtime detector for {', '.join(sorted(unknown))} (known: {', '.join(RULES)})")
    ctx = Context(run, cat.rules, options or {}, link, timeline)
    for code, detector in ORDER:
        if code == "OFF507":
            ctx.attach_forced_syncs()  # after every copy rule has claimed, before the sync rule
        if code in chosen:
            detector(ctx)
    return ctx.finish()
