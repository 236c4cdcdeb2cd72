"""Runtime detectors: the catalog's OFF5xx rules applied to a recorded `Run`.

`detect(run)` runs every detector in `ORDER` over the run and returns the
findings, the largest expected saving first; `detect_job_rules(job)` runs
the rules that need a distributed job's ranks side by side
(`distributed.JOB_RULES`). The order matters because records are claimed
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

from ...trace.job import Job
from ...trace.model import Run
from ...trace.records import Link
from ..replay import Timeline
from .base import Context, Finding
from .copies import large_pageable_copy, many_small_copies
from .distributed import JOB_RULES, detect_job, logging_collective
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
    ("OFF509", logging_collective),
)
RULES = tuple(sorted(code for code, _ in ORDER))
needs_fingerprints = ("OFF502", "OFF503", "OFF508")

__all__ = ["Finding", "JOB_RULES", "ORDER", "RULES", "detect", "detect_job_rules", "needs_fingerprints"]

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
    unknown = chosen - set(RULES) - set(JOB_RULES)
    if unknown:
        raise KeyError(f"no runtime detector for {', '.join(sorted(unknown))} (known: {', '.join(RULES)})")
    ctx = Context(run, cat.rules, options or {}, link, timeline)
    chosen -= set(JOB_RULES)  # they read a job as a whole: `detect_job_rules`
    for code, detector in ORDER:
        if code == "OFF507":
            ctx.attach_forced_syncs()  # after every copy rule has claimed, before the sync rule
        if code in chosen:
            detector(ctx)
    return ctx.finish()


def detect_job_rules(job: Job, *, link: Link | None = None, catalog: Catalog | None = None,
                     options: Mapping[str, Mapping[str, Any]] | None = None, select: Iterable[str] | None = None,
                     claimed: frozenset[int] = frozenset()) -> list[Finding]:
    """The findings of the rules that read a distributed job as a whole (`JOB_RULES`) on `job`'s trace.

    `claimed` are the job's records that the ranks' own findings blame already.
    """
    cat = catalog or _catalog()
    chosen = set(select) if select is not None else {c for c in JOB_RULES if cat.rules[c].default_enabled}
    rules = {c: cat.rules[c] for c in JOB_RULES if c in chosen}
    return detect_job(job, rules, options or {}, link, claimed)
