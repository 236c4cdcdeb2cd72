"""On a GPU: the CUDA sources compile and run, and every variant agrees with the NumPy result.

These are the suite's `gpu` tests: skipped where there is no CuPy and GPU
(CI), run on the GPU machine with `pytest -m gpu`. Each kernel is run by
the hand-written CuPy baseline and by the offload variants on the CuPy
backend, and its checksum is held against the plain-NumPy run of the same
problem, within the kernel's RAJAPerf tolerance: a wrong index, a missed
copy or a grid that does not cover the data shows up as a checksum
outside it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import offload_core
from offload_core import set_mode
from offload_core.suite import NAMES
from offload_core.suite.checksum import TOLERANCES, relative_difference
from offload_core.suite.registry import BY_NAME
from offload_core.suite.timing import HostClock
from offload_core.suite.variants import host_baseline, offload_variant

pytestmark = pytest.mark.gpu

FACTOR = 0.01
REPS = 3


def _numpy_reference(name: str) -> np.longdouble:
    p = BY_NAME[name].problem(FACTOR)
    host_baseline(p, REPS, HostClock())
    return p.checksum(p.arrays)


@pytest.mark.parametrize("name", NAMES)
def test_cupy_baseline_agrees_with_numpy(name: str) -> None:
    from offload_core.suite.cupy_baseline import DeviceClock, cupy_baseline

    p = BY_NAME[name].problem(FACTOR)
    done = cupy_baseline(p, REPS, DeviceClock())
    assert done.loop_s > 0 and done.total_s >= done.loop_s
    diff = relative_difference(p.checksum(p.arrays), _numpy_reference(name))
    assert diff <= TOLERANCES[BY_NAME[name].tolerance], f"{name}: {diff:.3e}"


@pytest.mark.parametrize("name", NAMES)
def test_graph_captured_baseline_computes_exactly_what_the_launched_one_does(name: str) -> None:
    from offload_core.suite.cupy_baseline import DeviceClock, cupy_baseline, cupy_baseline_graph

    launched, captured = BY_NAME[name].problem(FACTOR), BY_NAME[name].problem(FACTOR)
    cupy_baseline(launched, REPS, DeviceClock())
    done = cupy_baseline_graph(captured, REPS, DeviceClock())
    assert done.loop_s > 0 and done.total_s >= done.loop_s
    # the same kernels in the same order on the same data: the same bits, reductions included
    assert captured.checksum(captured.arrays) == launched.checksum(launched.arrays), name
    for array in launched.arrays:
        np.testing.assert_array_equal(captured.arrays[array], launched.arrays[array])


def test_graph_captured_baseline_runs_every_rep() -> None:
    from offload_core.suite.cupy_baseline import DeviceClock, cupy_baseline_graph

    one, many = BY_NAME["DAXPY"].problem(FACTOR), BY_NAME["DAXPY"].problem(FACTOR)
    cupy_baseline_graph(one, 1, DeviceClock())
    cupy_baseline_graph(many, 7, DeviceClock())
    np.testing.assert_allclose(many.arrays["y"], 7 * one.arrays["y"], rtol=1e-14)  # y += a * x, from y = 0


@pytest.mark.parametrize("mode", ["batched", "naive"])
@pytest.mark.parametrize("name", NAMES)
def test_offload_variants_on_the_cupy_backend_agree_with_numpy(name: str, mode: str) -> None:
    from offload_core.suite.cupy_baseline import DeviceClock

    reference = _numpy_reference(name)
    offload_core.set_backend("cupy")
    set_mode(mode)
    try:
        p = BY_NAME[name].problem(FACTOR)
        offload_variant(p, REPS, DeviceClock(getattr(offload_core.get_backend(), "stream", None)))
    finally:
        set_mode("batched")
    diff = relative_difference(p.checksum(p.arrays), reference)
    assert diff <= TOLERANCES[BY_NAME[name].tolerance], f"{name} {mode}: {diff:.3e}"


def test_device_peak_and_clock_measure_something_plausible() -> None:
    import cupy

    from offload_core.suite.cupy_baseline import DeviceClock, device_peak_bandwidth, versions

    peak = device_peak_bandwidth(64 * 2**20, repeats=3)
    assert 5e10 < peak < 2e13  # between 50 GB/s and 20 TB/s
    clock = DeviceClock()
    x = cupy.ones(1 << 24)
    clock.start()
    for _ in range(10):
        x *= 1.0000001
    seconds = clock.stop()
    assert 0 < seconds <= clock.host_s * 1.5 + 1e-3
    info = versions()
    assert info["cupy"] == cupy.__version__ and int(info["runtime"]) > 0 and int(info["driver"]) > 0


def test_offload_bench_on_the_gpu_writes_cupy_metadata(tmp_path: Path) -> None:
    out = tmp_path / "gpu.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_")}
    proc = subprocess.run([sys.executable, "-m", "offload_core.suite", "--backend", "cupy", "--kernels", "TRIAD",
                           "DOT", "JACOBI_2D", "--size-factor", "0.05", "--reps", "5", "--passes", "1", "--json",
                           str(out)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["backend"] == "cupy" and "cupy" in data["versions"] and "driver" in data["versions"]
    assert all(k["checksums_agree"] for k in data["kernels"])
    assert data["not_applicable"] == {}
    triad = next(k for k in data["kernels"] if k["kernel"] == "TRIAD")
    assert list(triad["variants"]) == ["baseline", "baseline-graph", "batched", "naive"]
    assert triad["variants"]["baseline"]["transfers"]["h2d"] == 2  # b and c once; a is only allocated
    assert triad["variants"]["baseline-graph"]["transfers"] == triad["variants"]["baseline"]["transfers"]
    assert triad["variants"]["baseline-graph"]["rel_diff"] == 0.0
    assert triad["ratios"]["batched/baseline-graph"] > 0
    assert triad["variants"]["naive"]["transfers"]["h2d"] == 2 * 5
