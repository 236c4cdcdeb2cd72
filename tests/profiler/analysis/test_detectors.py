"""Runtime detectors: every catalog example of a runtime rule is a real program run under the recorder.

An invalid example must produce its rule's finding at each expected
position (the call site's line and the column where its statement
starts); a valid one must produce none of that rule. Further tests pin
down claims (a wasted copy is blamed once), thresholds and messages.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from offload_core.catalog import load_catalog
from profiler.analysis.detectors import JOB_RULES, ORDER, RULES, detect
from profiler.analysis.summary import totals
from profiler.model import Run
from profiler.trace.link import resolve

from ..kit import record

CATALOG = load_catalog()
RUNTIME = tuple(r for r in CATALOG.rules.values() if r.kind == "runtime")
PCIE = resolve("pcie5-x16")
#: examples of one process; those of several ranks run under torchrun (test_distributed_rules.py)
CASES = [(rule, kind, n, ex) for rule in RUNTIME for kind, exs in (("invalid", rule.invalid), ("valid", rule.valid))
         for n, ex in enumerate(exs) if ex.ranks == 1]
#: every finding keeps its rule's severity (the examples are tiny: by default they are not material)
ALWAYS_MATERIAL = {"min_saving_fraction": 0, "min_saving": 0, "min_repeats": 0}


def test_every_runtime_rule_has_a_detector_and_every_detector_a_rule() -> None:
    assert {r.id for r in RUNTIME} == set(RULES) | set(JOB_RULES) == {f"OFF5{i:02}" for i in range(1, 11)}
    assert not set(RULES) & set(JOB_RULES) and len(ORDER) == len(RULES)
    for rule in RUNTIME:
        for other in rule.related:
            assert CATALOG[other].kind == "static", f"{rule.id} relates to a static rule"


@pytest.mark.parametrize("rule, kind, n, example", CASES, ids=[f"{r.id}-{k}{n}" for r, k, n, _ in CASES])
def test_catalog_example(tmp_path: Path, rule, kind: str, n: int, example) -> None:  # type: ignore[no-untyped-def]
    run = record(example.code, tmp_path, name=f"{rule.id}_{kind}{n}.py")
    options = {rule.id: {**ALWAYS_MATERIAL, **example.options}}
    findings = [f for f in detect(run, link=PCIE, options=options) if f.code == rule.id]
    got = [(f.line, f.column) for f in findings]
    assert got == [(p.line, p.column) for p in example.expect], [f.message for f in findings]
    for f in findings:
        assert f.site is not None and f.site.file == str(tmp_path / f"{rule.id}_{kind}{n}.py")
        assert f.count > 0 and f.related == rule.related and f.severity == rule.severity
        assert f.nbytes > 0 or rule.id == "OFF507"
        assert f.link == "pcie5-x16" or f.modelled_lost_ns is None
        assert "lost" in f.message or "not measurable" in f.message
        assert f.wall_ns == run.meta.wall_ns and f.fix
        # every fix is priced on this backend except page-locking, which a host memcpy cannot use
        assert (f.expected_saving_ns is None) == (rule.id == "OFF504")
        assert f.expected_saving_ns is None or 0 <= f.expected_saving_ns <= run.meta.wall_ns


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
    assert "the host waits for the device 19 times between launches, once every 1 launches (20 in all" in only[0].message
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


def scalar_read_per_step(kernels_per_step: int) -> "Run":
    """A CUPTI trace of `for step: a few kernels; total += x.sum().item()`: one wait per step.

    The host issues a launch every 5 µs and each kernel takes 3 µs, so the
    device is idle whenever the host waits: each 8 µs wait is lost time.
    """
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
    return Run(Meta(backend="cupti", device="gpu", mode="batched", started_at="2026-12-03T00:00:00+00:00", wall_ns=t),
               tuple(records))


@pytest.mark.parametrize("kernels_per_step, every", [(1, "1"), (3, "2.9"), (12, "11"), (70, "66")])
def test_a_scalar_read_per_step_is_found_however_many_kernels_a_step_has(kernels_per_step: int, every: str) -> None:
    """One wait per training step of 70 kernels is the same mistake as one per kernel; the replay prices it."""
    found = [f for f in detect(scalar_read_per_step(kernels_per_step)) if f.code == "OFF507"]
    assert len(found) == 1
    f = found[0]
    assert f.site is not None and f.site.line == 13 and f.count == 19, "the last wait has no launch after it"
    assert f"once every {every} launches" in f.message
    # the device idles through every wait; the read goes with it: its call (2 µs: the least host time seen
    # between a kernel's end and such a read) and the 8 µs wait (its 2 µs copy lies within it). The host's other
    # 3 µs between the last launch and the read stay: the host was busy then, the device idle
    assert f.expected_saving_ns == 19 * (2000 + 8000)
    assert f.severity == "info", "0.23 ms is below the 5 ms materiality floor"


def test_a_raised_min_fraction_keeps_only_waits_every_few_launches() -> None:
    opts = {"OFF507": {"min_fraction": 0.25}}
    assert [f.code for f in detect(scalar_read_per_step(3), options=opts)] == ["OFF507"]
    assert [f.code for f in detect(scalar_read_per_step(5), options=opts)] == []


# ------------------------------------------------------------------ materiality and ranking
def per_launch_uploads(copy_us: float) -> Run:
    """A NumPy-backend loop of 10 launches, each uploading the same 1 MB buffer first (`copy_us` each)."""
    from ..timelines import Timeline as Hand

    h = Hand(backend="numpy")
    t = 0.0
    for n in range(10):
        h.copy("h2d", t, copy_us, line=12, array=0xA000, param="x", launch=n, pinned=False)
        h.kernel(t + copy_us, 100, line=12, launch=n)
        t += copy_us + 200  # 100 µs of the program's own work between launches
    return h.run(t)


def test_a_finding_that_saves_little_is_info() -> None:
    run = per_launch_uploads(300)
    f = detect(run)[0]
    assert (f.code, f.fix, f.expected_saving_ns) == ("OFF501", "keep resident", 9 * 300_000)
    assert f.severity == "info", "2.7 ms: below the 5 ms floor"
    assert detect(run, options={"OFF501": {"min_saving": 0, "min_saving_fraction": 0}})[0].severity == "warning"
    share = {"OFF501": {"min_saving": 0, "min_saving_fraction": 0.5}}  # 2.7 ms of a 5 ms run is 54%
    assert detect(run, options=share)[0].severity == "warning"
    share = {"OFF501": {"min_saving": 0, "min_saving_fraction": 0.6}}
    assert detect(run, options=share)[0].severity == "info", "below the share of the wall time"
    big = detect(per_launch_uploads(3_000))[0]
    assert big.expected_saving_ns == 27_000_000 and big.severity == "warning"


def test_a_pattern_that_happened_once_is_info(tmp_path: Path) -> None:
    code = CATALOG["OFF503"].invalid[0].code  # one round trip, as a checkpoint saved and reloaded is
    free = {"min_saving": 0, "min_saving_fraction": 0}
    once = [f for f in detect(record(code, tmp_path), options={"OFF503": free}) if f.code == "OFF503"]
    assert [f.severity for f in once] == ["info"]
    anyway = detect(record(code, tmp_path), options={"OFF503": {**free, "min_repeats": 1}})
    assert [f.severity for f in anyway if f.code == "OFF503"] == ["warning"]


def startup_then_loop(copies: int = 3) -> Run:
    """A CUPTI trace: `copies` 29 MB pageable uploads at start-up (a model to the GPU), then a 1 s loop of kernels."""
    from ..timelines import Timeline as Hand

    h = Hand()
    t = 0.0
    for _ in range(copies):
        h.copy("h2d", t, 4_800, line=5, nbytes=29_000_000, pinned=False)  # about 6 GB/s
        t += 4_900
    for _ in range(1_000):
        h.kernel(t, 900, line=9)
        t += 1_000
    return h.run(t)


def test_one_time_start_up_copies_do_not_warn() -> None:
    run = startup_then_loop()
    f = next(f for f in detect(run) if f.code == "OFF504")
    assert f.expected_saving_ns is not None and f.expected_saving_ns > max(5_000_000, run.meta.wall_ns // 100), \
        "material by its saving alone"
    assert f.severity == "info", "but made once, before the loop"


def test_on_cupti_traces_the_pageable_copies_time_lost_is_measured_against_the_pinned_rate() -> None:
    run = startup_then_loop()
    f = next(f for f in detect(run) if f.code == "OFF504")
    pinned = PCIE.copy_ns("h2d", 29_000_000, True)  # no pinned copy in the run: the shipped profile's rate
    assert f.lost_ns == 3 * (4_800_000 - pinned)
    assert "not measurable" not in f.message
    assert "from pinned memory they would run at 54 GB/s (modelled on pcie5-x16)" in f.message
    assert f.expected_saving_ns == f.lost_ns, "each copy held the host; nothing overlapped them"


def hidden_reuploads_and_draining_syncs() -> Run:
    """Pinned re-uploads of one buffer under long kernels (hidden), and a scalar read per step that drains the queue."""
    from ..timelines import Timeline as Hand

    h = Hand()
    t = 0.0
    for _ in range(20):
        h.kernel(t, 5_000, line=8)
        h.copy("h2d", t + 100, 3_000, line=7, array=0xA000, fingerprint="same")  # on a side stream, hidden
        h.copy("d2h", t + 5_000, 10, line=9, nbytes=4)  # .item(): an asynchronous copy to pinned memory ...
        h.sync(t + 4_500, 510, line=9)  # ... and, after 4.4 ms of host work, a wait for the kernel and the copy
        t += 5_010 + 1_000  # then 1 ms of host work before the next step
    return Run(replace(h.run(t).meta, fingerprints=True), tuple(h.records))


def test_findings_are_ranked_by_expected_saving_not_by_time_lost() -> None:
    found = detect(hidden_reuploads_and_draining_syncs())
    assert [f.code for f in found] == ["OFF507", "OFF502"]
    syncs, uploads = found
    assert uploads.lost_ns is not None and syncs.lost_ns is not None and uploads.lost_ns > syncs.lost_ns
    assert uploads.expected_saving_ns == 0, "copies hidden behind compute cost nothing"
    assert syncs.expected_saving_ns == 19 * 510_000, "the host no longer waits: the next kernel comes 0.51 ms sooner"
    assert (syncs.severity, uploads.severity) == ("warning", "info")
