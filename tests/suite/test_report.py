"""The table and the JSON are functions of a SuiteResult: ratios, summaries, missing variants."""

from __future__ import annotations

import numpy as np
import pytest

from offload_core.suite.report import geomean, summarise, table, to_json
from offload_core.suite.runner import Environment, KernelResult, SuiteResult, Transfers, VariantResult


def _variant(name: str, seconds: float, checksum: float = 2.0) -> VariantResult:
    return VariantResult(name, (seconds,), (seconds * 2,), np.longdouble(checksum), Transfers(launches=4))


def _kernel(name: str, times: dict[str, float], diff: float = 0.0) -> KernelResult:
    variants = {v: _variant(v, t) for v, t in times.items()}
    ref = next(iter(variants))
    return KernelResult(name, "Stream", 100, {}, 4, 1_000_000, "tight", variants, ref,
                        {v: diff for v in variants if v != ref})


def _suite(*kernels: KernelResult, not_applicable: dict[str, str] | None = None) -> SuiteResult:
    env = Environment("numpy", "test device", 1e10, {"numpy": np.__version__}, "2026-01-01T00:00:00+00:00")
    return SuiteResult(env, 0.5, None, 1, kernels, not_applicable=not_applicable or {})


def test_geomean() -> None:
    assert geomean([2.0, 8.0]) == pytest.approx(4.0)
    assert geomean([]) is None


def test_summary_names_the_worst_naive_kernel() -> None:
    s = summarise(_suite(_kernel("ADD", {"baseline": 1.0, "batched": 1.1, "naive": 50.0}),
                         _kernel("COPY", {"baseline": 1.0, "batched": 0.9, "naive": 450.0})))
    assert s["max_naive_over_batched"] == {"kernel": "COPY", "ratio": pytest.approx(500.0)}
    assert s["geomean_batched_over_baseline"] == pytest.approx((1.1 * 0.9) ** 0.5)
    assert s["all_checksums_agree"] is True


def test_table_marks_disagreement_and_missing_variants() -> None:
    text = table(_suite(_kernel("ADD", {"baseline": 0.001, "batched": 0.002}, diff=3e-9)))
    row = next(line for line in text.splitlines() if line.startswith("ADD"))
    cells = row.split()
    # baseline, baseline-graph, batched, naive; bat/base, bat/base-graph, naive/bat
    assert cells[3:10] == ["1.000", "-", "2.000", "-", "2.00", "-", "-"]
    assert cells[10] == "2.0" and cells[11] == "20"  # 1 MB x 4 reps / 2 ms = 2 GB/s of a 10 GB/s peak
    assert row.rstrip().endswith("NO (3.0e-09)")


def test_table_heads_four_variants_and_three_ratios() -> None:
    header = table(_suite(_kernel("ADD", {"baseline": 1.0}))).splitlines()[0]
    assert header.split("  ")[0] == "kernel"
    for heading in ("baseline ms", "baseline-graph ms", "batched ms", "naive ms", "bat/base", "bat/base-graph",
                    "naive/bat"):
        assert heading in header
    assert header.index("baseline-graph ms") < header.index("batched ms") < header.index("bat/base-graph")


def test_a_variant_that_does_not_apply_reads_n_a_with_its_reason() -> None:
    why = "not applicable on the numpy backend: no device graph"
    text = table(_suite(_kernel("ADD", {"baseline": 0.001, "batched": 0.002, "naive": 0.004}),
                        not_applicable={"baseline-graph": why}))
    cells = next(line for line in text.splitlines() if line.startswith("ADD")).split()
    assert cells[3:10] == ["1.000", "n/a", "2.000", "4.000", "2.00", "n/a", "2.00"]
    assert f"baseline-graph: {why}" in text.splitlines()
    assert "batched/baseline-graph geomean" not in text


def test_baseline_graph_ratio_and_geomean_when_it_ran() -> None:
    result = _suite(_kernel("ADD", {"baseline": 1.0, "baseline-graph": 0.5, "batched": 0.6}),
                    _kernel("COPY", {"baseline": 1.0, "baseline-graph": 0.4, "batched": 0.6}))
    cells = next(line for line in table(result).splitlines() if line.startswith("ADD")).split()
    assert cells[3:10] == ["1000.000", "500.000", "600.000", "-", "0.60", "1.20", "-"]
    assert summarise(result)["geomean_batched_over_baseline_graph"] == pytest.approx((1.2 * 1.5) ** 0.5)
    assert "batched/baseline-graph geomean 1.342" in table(result)


def test_json_shape_follows_design() -> None:
    data = to_json(_suite(_kernel("ADD", {"baseline": 1.0, "batched": 1.5, "naive": 3.0}),
                          not_applicable={"baseline-graph": "no graphs here"}), "offload-bench")
    k = data["kernels"][0]
    assert k["kernel"] == "ADD" and list(k["variants"]) == ["baseline", "batched", "naive"]
    assert k["ratios"] == {"batched/baseline": 1.5, "batched/baseline-graph": None, "naive/batched": 2.0}
    assert data["not_applicable"] == {"baseline-graph": "no graphs here"}
    assert data["summary"]["geomean_batched_over_baseline_graph"] is None
    assert k["checksums_agree"] is True and k["tolerance"] == {"class": "tight", "value": 1e-14}
    assert k["variants"]["naive"]["time_per_rep_s"] == 0.75
    assert data["device"] == "test device" and data["command"] == "offload-bench" and data["schema"] == 1
