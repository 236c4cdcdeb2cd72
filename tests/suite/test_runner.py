"""The runner: warm-up, passes, exact transfer totals, checksum verdicts, and run_suite for traces."""

from __future__ import annotations

import numpy as np
import pytest

import offload_core
from offload_core import get_mode, set_mode
from offload_core.suite import run_suite
from offload_core.suite.registry import BY_NAME, UnknownKernel
from offload_core.suite.runner import Runner, Transfers, measure

from ..conftest import Recorder


def test_transfer_totals_are_those_of_a_full_observed_run(rec: Recorder) -> None:
    bench = BY_NAME["JACOBI_1D"]
    result = Runner(passes=1).kernel(bench, ["batched", "naive"], 0.001, 7)
    for variant in ("batched", "naive"):
        rec.clear()
        set_mode(variant)
        run_suite(["JACOBI_1D"], size_factor=0.001, reps=7)
        set_mode("batched")
        observed = Transfers(rec.count("h2d"), rec.bytes("h2d"), rec.count("d2h"), rec.bytes("d2h"), rec.count("launch"))
        assert result.variants[variant].transfers == observed
    naive, batched = result.variants["naive"].transfers, result.variants["batched"].transfers
    assert naive.h2d == 4 * 7 and batched.h2d == 2 and naive.launches == batched.launches == 14


def test_passes_are_timed_separately_and_the_median_reported() -> None:
    result = Runner(passes=3).kernel(BY_NAME["TRIAD"], ["baseline", "batched"], 0.001, 5)
    batched = result.variants["batched"]
    assert len(batched.times_s) == 3 and all(t > 0 for t in batched.times_s)
    assert batched.time_s == sorted(batched.times_s)[1]
    assert all(total >= t for total, t in zip(batched.totals_s, batched.times_s))
    assert result.reps == 5 and result.size == 1000
    assert result.bandwidth("batched") == pytest.approx(24 * 1000 * 5 / batched.time_s)
    assert result.ratio("batched", "baseline") == pytest.approx(batched.time_s / result.variants["baseline"].time_s)
    assert result.ratio("naive", "batched") is None


def test_a_wrong_result_is_reported_as_disagreeing(monkeypatch: pytest.MonkeyPatch) -> None:
    import offload_core.suite.runner as runner

    real = runner.offload_variant

    def off_by_a_little(problem, reps, clock, graphs=False):  # type: ignore[no-untyped-def]
        done = real(problem, reps, clock)
        problem.arrays["a"][0] += 1e-6
        return done

    monkeypatch.setattr(runner, "offload_variant", off_by_a_little)
    result = Runner(passes=1).kernel(BY_NAME["TRIAD"], ["baseline", "naive"], 0.001, 2)
    assert not result.checksums_agree
    assert 1e-12 < result.differences["naive"] < 1e-6


def test_runner_restores_the_mode_and_refuses_unknown_variants() -> None:
    set_mode("naive")
    Runner(passes=1).kernel(BY_NAME["COPY"], ["baseline", "batched"], 0.001, 1)
    assert get_mode() == "naive"
    set_mode("batched")
    with pytest.raises(ValueError, match="unknown variant 'fast'"):
        Runner(passes=1).kernel(BY_NAME["COPY"], ["fast"], 0.001, 1)
    with pytest.raises(ValueError):
        Runner(passes=0)


def test_measure_records_where_it_ran() -> None:
    result = measure([BY_NAME["ADD"], BY_NAME["PI_REDUCE"]], ["baseline", "batched"], 0.001, 2, 1)
    env = result.environment
    assert env.backend == "numpy" and "NumPy" in env.device
    assert env.peak_bytes_per_s > 1e8
    assert env.versions["numpy"] == np.__version__ and env.versions["offload_core"] == offload_core.__version__
    assert [k.name for k in result.kernels] == ["ADD", "PI_REDUCE"]
    assert result.kernels[1].bandwidth("batched") is None  # PI_REDUCE reads no arrays


def test_run_suite_runs_each_kernel_once_in_the_requested_mode(rec: Recorder) -> None:
    runs = run_suite(["TRIAD", "dot"], size_factor=0.001, mode="naive", reps=3)
    # suite order, whatever the order asked for
    assert [(r.kernel, r.size, r.reps, r.launches) for r in runs] == [("DOT", 1000, 3, 6), ("TRIAD", 1000, 3, 3)]
    assert get_mode() == "batched"
    assert all(e.mode == "naive" for e in rec.of("launch"))
    assert rec.count("h2d", "b") == 3 + 3  # TRIAD's b and DOT's b, once per launch
    assert runs[0].checksum == pytest.approx(3 * float(np.dot(*(BY_NAME["DOT"].build(1000).arrays[x] for x in "ab"))))
    rec.clear()
    run_suite(["TRIAD"], size_factor=0.001, mode="batched", reps=3)
    assert rec.count("h2d") == 2 and rec.count("launch") == 3


def test_run_suite_checks_its_arguments() -> None:
    with pytest.raises(UnknownKernel, match="unknown kernel 'NOPE'"):
        run_suite(["NOPE"])
    with pytest.raises(ValueError, match="size_factor"):
        run_suite(["ADD"], size_factor=0)
    with pytest.raises(ValueError, match="reps"):
        run_suite(["ADD"], reps=0)
    with pytest.raises(ValueError, match="mode"):
        run_suite(["ADD"], size_factor=0.001, mode="sometimes")
    assert get_mode() == "batched"


def test_graph_replay_of_the_batched_loop_computes_what_launching_does() -> None:
    from offload_core.suite.registry import BENCHMARKS

    plain = measure(BENCHMARKS, ["batched"], size_factor=0.002, reps=3, passes=1, graphs=False)
    replayed = measure(BENCHMARKS, ["batched", "naive"], size_factor=0.002, reps=3, passes=1, graphs=True)
    assert replayed.graphs and not plain.graphs
    for a, b in zip(plain.kernels, replayed.kernels):
        assert a.variants["batched"].checksum == b.variants["batched"].checksum, a.name
        assert b.checksums_agree, b.name


def test_baseline_graph_is_recorded_as_not_applicable_without_a_gpu() -> None:
    result = measure([BY_NAME["ADD"]], ["baseline-graph", "batched"], 0.001, 2, 1)
    assert list(result.kernels[0].variants) == ["batched"]
    reason = result.not_applicable["baseline-graph"]
    assert reason.startswith("not applicable on the numpy backend") and "CUDA/HIP graph" in reason
    assert measure([BY_NAME["ADD"]], ["baseline", "batched"], 0.001, 2, 1).not_applicable == {}
    with pytest.raises(ValueError, match=r"nothing to run \(baseline-graph: not applicable"):
        measure([BY_NAME["ADD"]], ["baseline-graph"], 0.001, 2, 1)
    with pytest.raises(ValueError, match="nothing to run"):
        Runner(passes=1).kernel(BY_NAME["ADD"], ["baseline-graph"], 0.001, 2)
