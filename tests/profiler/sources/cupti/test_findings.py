"""The runtime rules on CUPTI traces: the classic mistakes of plain CuPy and PyTorch code are found.

The captures are what the CUPTI source records for the statements named
in each test (the GPU tests record the real programs); the rules run on
the converted trace exactly as on an offload_core one.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from profiler.analysis.detectors import detect
from profiler.model import Meta, Run
from profiler.outputs.baseline import Baseline
from profiler.outputs.chrome import to_chrome
from profiler.outputs.gate import checks_for, evaluate
from profiler.outputs.report import render_report
from profiler.sources.cupti.convert import convert
from profiler.trace.link import resolve

from .captures import Builder

PCIE = resolve("pcie5-x16")
MiB = 1 << 20


def run_of(b: Builder, fingerprints: bool = True, backend: str = "cupti") -> Run:
    meta = Meta(backend=backend, device="NVIDIA H200 (test)", mode="batched", started_at="2026-01-01T00:00:00Z",
                wall_ns=b.t, fingerprints=fingerprints, cwd="/work")
    return Run(meta, convert(b.capture()).records)


def codes_at(findings, line: int) -> list[str]:  # type: ignore[no-untyped-def]
    return sorted(f.code for f in findings if f.site is not None and f.site.line == line)


def asarray_loop(steps: int = 20) -> Builder:
    """for step in range(20): d = cp.asarray(x)  (line 7); acc += d * 0.5  (line 8)

    CuPy stages the upload through pinned buffers of its pool, which it
    hands out again: two of them here, alternating.
    """
    b = Builder()
    for step in range(steps):
        b.h2d(7, MiB, host=0xA000 if step % 2 else 0xB000, fp="same-bytes", kind="pinned")
        b.kernel(8, "cupy_multiply")
        b.kernel(8, "cupy_add")
    return b


def test_per_iteration_asarray_of_an_invariant_array_is_a_reupload() -> None:
    run = run_of(asarray_loop())
    findings = detect(run, link=PCIE)
    assert codes_at(findings, 7) == ["OFF502"]
    f = next(f for f in findings if f.code == "OFF502")
    assert f.count == 18 and f.nbytes == 18 * MiB, "all but the first upload from each staging buffer"
    assert f.related == ("OFF101",) and "'pinned buffer' uploaded 18 more time(s)" in f.message
    assert not [f for f in findings if f.code == "OFF501"], "OFF501 is about offload() launches"


def test_changing_data_is_not_a_reupload() -> None:
    b = Builder()
    for step in range(20):
        b.h2d(7, MiB, host=0xA000, fp=f"batch-{step}", kind="pinned")
        b.kernel(8)
    assert detect(run_of(b), link=PCIE) == []


def test_without_fingerprints_the_content_rules_stay_silent() -> None:
    assert [f.code for f in detect(run_of(asarray_loop(), fingerprints=False), link=PCIE)] == []


def item_loop(backend: str = "cupti") -> Run:
    """for step in range(20): loss = step_fn(w)  (line 8); total += loss.item()  (line 9)"""
    b = Builder()
    for step in range(20):
        b.kernel(8, "step")
        b.d2h(9, 4, host=0x7F00, sync=False, instr=90)  # the same small host buffer each time, as allocators do
        b.sync(9, instr=90)
    return run_of(b, backend=backend)


def test_item_per_step_is_a_sync_per_launch() -> None:
    findings = detect(item_loop(), link=PCIE)
    assert codes_at(findings, 9) == ["OFF507"]
    f = findings[0]
    assert f.count == 19 and "waits for the device 19 times" in f.message


def test_write_back_rule_skips_cupti_traces() -> None:
    # the same records from offload_core (a user buffer) would be unread write-backs
    assert "OFF506" in [f.code for f in detect(item_loop(backend="cupy"), link=PCIE)]
    assert "OFF506" not in [f.code for f in detect(item_loop(), link=PCIE)]


def test_large_pageable_copies_are_found_and_pinned_ones_are_not() -> None:
    b = Builder()
    for step in range(3):
        b.h2d(12, 32 * MiB, host=0x1000, fp=f"v{step}")  # torch: big.to("cuda") from pageable memory
        b.kernel(13)
        b.h2d(14, 32 * MiB, host=0x9000, fp=f"p{step}", kind="pinned")  # big.pin_memory().to("cuda")
        b.kernel(13)
    findings = detect(run_of(b), link=PCIE)
    assert codes_at(findings, 12) == ["OFF504"] and codes_at(findings, 14) == []
    f = findings[0]
    assert f.count == 3 and f.nbytes == 96 * MiB and "3 pageable H2D copies of 'pageable buffer'" in f.message


def test_many_small_copies_without_a_launch_between() -> None:
    b = Builder()
    for i in range(20):
        b.h2d(16, 64, host=0x100 + 64 * i, fp=f"row{i}")  # torch.tensor(row).cuda() per row
    b.kernel(17)
    findings = detect(run_of(b), link=PCIE)
    assert codes_at(findings, 16) == ["OFF505"] and findings[0].count == 20


def test_reports_exports_and_the_gate_read_a_cupti_trace(tmp_path: Path) -> None:
    run = run_of(asarray_loop())
    path = run.save(tmp_path / "t.json")
    loaded = Run.load(path)
    assert loaded == run
    text = render_report(loaded, detect(loaded, link=PCIE), path=str(path), link=PCIE)
    assert "OFF502" in text and "cupti" in text
    chrome = to_chrome([loaded])
    assert sum(1 for e in chrome["traceEvents"] if e.get("cat") == "copy") == 20
    base = Baseline.from_run(loaded)
    assert evaluate(checks_for(loaded, base, None, [], False)).exit_code == 0
    fewer = replace(loaded, records=loaded.records[3:])
    assert evaluate(checks_for(fewer, base, None, [], False)).exit_code == 1
