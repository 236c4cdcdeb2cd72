"""Runtime detectors: every catalog example of a runtime rule is a real program run under the recorder.

An invalid example must produce its rule's finding at each expected
position (the call site's line and the column where its statement
starts); a valid one must produce none of that rule. Further tests pin
down claims (a wasted copy is blamed once), thresholds and messages.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from offload_core.catalog import load_catalog
from profiler.analysis.detectors import ORDER, RULES, detect
from profiler.analysis.summary import totals
from profiler.trace.link import resolve

from .kit import record

CATALOG = load_catalog()
RUNTIME = tuple(r for r in CATALOG.rules.values() if r.kind == "runtime")
PCIE = resolve("pcie5-x16")
CASES = [(rule, kind, n, ex) for rule in RUNTIME for kind, exs in (("invalid", rule.invalid), ("valid", rule.valid))
         for n, ex in enumerate(exs)]


def test_every_runtime_rule_has_a_detector_and_every_detector_a_rule() -> None:
    assert {r.id for r in RUNTIME} == set(RULES) == {f"OFF50{i}" for i in range(1, 8)}
    assert len(ORDER) == len(RULES)
    for rule in RUNTIME:
        for other in rule.related:
            assert CATALOG[other].kind == "static", f"{rule.id} relates to a static rule"


@pytest.mark.parametrize("rule, kind, n, example", CASES, ids=[f"{r.id}-{k}{n}" for r, k, n, _ in CASES])
def test_catalog_example(tmp_path: Path, rule, kind: str, n: int, example) -> None:  # type: ignore[no-untyped-def]
    run = record(example.code, tmp_path, name=f"{rule.id}_{kind}{n}.py")
    findings = [f for f in detect(run, link=PCIE, options={rule.id: dict(example.options)}) if f.code == rule.id]
    got = [(f.line, f.column) for f in findings]
    assert got == [(p.line, p.column) for p in example.expect], [f.message for f in findings]
    for f in findings:
        assert f.site is not None and f.site.file == str(tmp_path / f"{rule.id}_{kind}{n}.py")
        assert f.count > 0 and f.related == rule.related and f.severity == rule.severity
        assert f.nbytes > 0 or rule.id == "OFF507"
        assert f.link == "pcie5-x16" or f.modelled_lost_ns is None
        assert "lost" in f.message or "not measurable" in f.message


NAIVE_LOOP = """\
import numpy as np
from offload_core import In, InOut, kernel, offload

@kernel
def daxpy(y: InOut, x: In, a: float) -> None:
    y += a * x

x = np.ones(1 << 14)
y = np.zeros(1 << 14)
for step in range(20):
    offload(daxpy, y, x, 2.0)
"""


def test_a_naive_loop_is_one_finding_with_exact_counts(tmp_path: Path) -> None:
    run = record(NAIVE_LOOP, tmp_path)
    findings = detect(run, link=PCIE)
    assert [f.code for f in findings] == ["OFF501"], "round trips and re-uploads of the loop are not reported twice"
    f = findings[0]
    assert (f.line, f.column, f.count) == (11, 5, 20)
    assert f.nbytes == 20 * 3 * 8 * (1 << 14)  # y up and down, x up, on each launch
    claimed = [run.records[i] for i in f.records]
    kinds = [r.kind for r in claimed]
    assert kinds.count("h2d") == 2 * 19 and kinds.count("d2h") == 19, "all but the first upload and last download"
    assert kinds.count("sync") == 19, "the syncs those downloads forced are blamed too"
    assert f.lost_ns == sum(r.duration_ns for r in claimed)
    assert "offload(daxpy) copies 'y' (H2D+D2H), 'x' (H2D) on each of 20 launches" in f.message
    assert f.related == ("OFF102", "OFF101")


def test_times_lost_never_exceed_what_the_run_spent(tmp_path: Path) -> None:
    run = record(NAIVE_LOOP + "for step in range(5):\n    x[0] = step\n    offload(daxpy, y, x, 1.0)\n", tmp_path)
    findings = detect(run)
    blamed = [i for f in findings for i in f.records]
    assert len(blamed) == len(set(blamed)), "no record is blamed by two findings"
    t = totals(run)
    assert sum(f.lost_ns or 0 for f in findings) <= t.copies.ns + t.syncs.ns


def test_fingerprint_rules_are_silent_without_fingerprints(tmp_path: Path) -> None:
    code = next(r for r in RUNTIME if r.id == "OFF503").invalid[0].code
    assert [f.code for f in detect(record(code, tmp_path, fingerprints=True))] == ["OFF503"]
    assert [f.code for f in detect(record(code, tmp_path, fingerprints=False))] == []


def test_thresholds_come_from_the_catalog_and_can_be_overridden(tmp_path: Path) -> None:
    run = record(NAIVE_LOOP.replace("range(20)", "range(3)"), tmp_path)
    assert CATALOG["OFF501"].options["min_launches"] == 3
    assert [f.code for f in detect(run)] == ["OFF501"]
    assert "OFF501" not in [f.code for f in detect(run, options={"OFF501": {"min_launches": 4}})]


def test_select_and_unknown_rules(tmp_path: Path) -> None:
    run = record(NAIVE_LOOP, tmp_path)
    only = detect(run, select=["OFF507"])
    assert [(f.code, f.count) for f in only] == [("OFF507", 19)], "no copy rule ran, so the syncs are nobody else's"
    assert "the host waits for the device 19 times between launches (after 100% of the 20 launches" in only[0].message
    with pytest.raises(KeyError, match="no runtime detector for OFF101"):
        detect(run, select=["OFF101"])


def test_unselected_claiming_rules_leave_records_to_the_others(tmp_path: Path) -> None:
    run = record(NAIVE_LOOP, tmp_path)
    found = {f.code: f for f in detect(run, select=["OFF503", "OFF502", "OFF507"])}
    assert set(found) == {"OFF503", "OFF502"}, "without OFF501 the same waste shows as round trips and re-uploads"
    assert found["OFF503"].count == 19 and found["OFF502"].count == 19
    assert sum(run.records[i].kind == "sync" for i in found["OFF503"].records) == 19, "syncs go with the round trips"


def test_large_pageable_copy_is_skipped_on_numpy_by_default(tmp_path: Path) -> None:
    rule = CATALOG["OFF504"]
    run = record(rule.invalid[0].code, tmp_path)
    assert [f.code for f in detect(run, options={"OFF504": {"min_bytes": "1 MiB"}})] == []
    found = detect(run, link=PCIE, options={"OFF504": dict(rule.invalid[0].options)})
    assert [f.code for f in found] == ["OFF504"]
    f = found[0]
    assert f.lost_ns is None, "pinned vs pageable cannot be measured on the NumPy backend"
    nbytes = 8 << 18
    assert f.modelled_lost_ns == PCIE.copy_ns("h2d", nbytes, False) - PCIE.copy_ns("h2d", nbytes, True)
    assert "from pinned memory they would run at 54 GB/s" in f.message and "modelled on pcie5-x16" in f.message


def test_many_small_copies_counts_runs_between_launches(tmp_path: Path) -> None:
    run = record(CATALOG["OFF505"].invalid[0].code, tmp_path)
    f = next(f for f in detect(run, link=PCIE) if f.code == "OFF505")
    assert (f.count, f.nbytes) == (64, 64 * 16 * 8)
    assert f.modelled_lost_ns == int(63 * PCIE.latency_us * 1000)
    assert "64 small H2D copies of 'x' (at most 64 KiB each" in f.message and "in 1 run(s)" in f.message


@pytest.mark.parametrize("kernels_per_step, fires", [(1, True), (3, True), (4, True), (5, False), (12, False)])
def test_a_scalar_read_per_step_of_a_few_kernels_is_a_sync_per_launch(kernels_per_step: int, fires: bool) -> None:
    """A CUPTI trace of `for step: a few kernels; total += x.sum().item()`: one wait per step, every few launches."""
    from profiler.model import Meta, Record, Run, Site

    loop, item = Site("/w/train.py", 12, "main", "acc += d * 0.5", 9), Site("/w/train.py", 13, "main", "x.item()", 9)
    records, t, launch = [], 0, 0
    for _ in range(20):
        for _ in range(kernels_per_step):
            records.append(Record("launch", t, 3000, kernel="k", launch=launch, site=loop, mode="batched"))
            launch, t = launch + 1, t + 5000
        records.append(Record("d2h", t, 2000, 4, site=item, mode="batched"))
        records.append(Record("sync", t, 8000, site=item, mode="batched"))
        t += 10000
    run = Run(Meta(backend="cupti", device="gpu", mode="batched", started_at="2026-12-03T00:00:00+00:00", wall_ns=t),
              tuple(records))
    found = [f for f in detect(run) if f.code == "OFF507"]
    assert bool(found) == fires
    if fires:
        assert found[0].site == item and found[0].count == 19, "the last wait has no launch after it"
