"""Mode and backend selection, from the API and from the environment (in fresh interpreters)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import offload_core
from offload_core import BackendError, get_backend, get_mode, set_backend, set_mode
from offload_core.backends import NumpyBackend, create, cupy_usable


def python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_")}
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)


def test_set_mode_round_trips_and_validates() -> None:
    set_mode("naive")
    assert get_mode() == "naive"
    set_mode(" Batched ")
    assert get_mode() == "batched"
    with pytest.raises(ValueError, match="mode='eager' is not a mode; choose 'naive' or 'batched'"):
        set_mode("eager")


def test_set_backend_by_name_or_instance() -> None:
    be = set_backend("numpy")
    assert isinstance(be, NumpyBackend) and get_backend() is be
    mine = NumpyBackend(capacity=1 << 20)
    assert set_backend(mine) is mine and get_backend() is mine
    with pytest.raises(BackendError, match="unknown backend 'tpu'; choose one of auto, numpy, cupy"):
        set_backend("tpu")
    with pytest.raises(TypeError, match="set_backend\\(\\) takes a name or a Backend, got int"):
        set_backend(3)  # type: ignore[arg-type]


@pytest.mark.skipif(cupy_usable(), reason="CuPy with a GPU is present")
def test_auto_falls_back_to_numpy_without_a_gpu() -> None:
    assert create("auto").name == "numpy"


@pytest.mark.skipif(cupy_usable(), reason="CuPy with a GPU is present")
def test_cupy_backend_without_cupy_or_gpu_says_what_is_missing() -> None:
    with pytest.raises(BackendError) as exc:
        create("cupy")
    assert str(exc.value) in (
        "the CuPy backend needs CuPy: pip install 'offload-guard[cuda12]' (or [cuda13], [rocm])",
        "the CuPy backend found no usable GPU (cupy.is_available() is False)",
    )


def test_environment_selects_mode_and_backend() -> None:
    code = "import offload_core as o; print(o.get_mode(), o.get_backend().name)"
    assert python(code, OFFLOAD_MODE="naive", OFFLOAD_BACKEND="numpy").stdout.split() == ["naive", "numpy"]
    assert python(code).stdout.split()[0] == "batched"


def test_bad_environment_values_fail_with_one_line() -> None:
    code = "import offload_core as o\ntry:\n    o.get_mode()\nexcept ValueError as e:\n    print(e)"
    assert python(code, OFFLOAD_MODE="fast").stdout.strip() == "OFFLOAD_MODE='fast' is not a mode; choose 'naive' or 'batched'"
    code = "import offload_core as o\ntry:\n    o.get_backend()\nexcept o.BackendError as e:\n    print(e)"
    out = python(code, OFFLOAD_BACKEND="metal").stdout.strip()
    assert out == "OFFLOAD_BACKEND='metal' is not a backend; choose one of auto, numpy, cupy"
    out = python(code, OFFLOAD_BACKEND="numpy", OFFLOAD_NUMPY_CAPACITY="lots").stdout.strip()
    assert out == "OFFLOAD_NUMPY_CAPACITY='lots' is not a number of bytes"


def test_naive_mode_from_the_environment_changes_the_copies() -> None:
    code = (
        "import numpy as np, offload_core as o\n"
        "from offload_core import In, InOut, kernel, offload, region, events\n"
        "@kernel\n"
        "def daxpy(y: InOut, x: In, a: float) -> None:\n"
        "    y += a * x\n"
        "seen = []\n"
        "events.subscribe(lambda e: seen.append(e.kind))\n"
        "x, y = np.ones(10), np.zeros(10)\n"
        "with region(x, y):\n"
        "    for _ in range(10):\n"
        "        offload(daxpy, y, x, 1.0)\n"
        "print(seen.count('h2d'), seen.count('d2h'), y[0])\n"
    )
    assert python(code, OFFLOAD_MODE="naive").stdout.split() == ["20", "10", "10.0"]
    assert python(code, OFFLOAD_MODE="batched").stdout.split() == ["2", "1", "10.0"]


def test_exports_match_the_design() -> None:
    expected = {
        "kernel", "RawKernel", "In", "Out", "InOut", "Owned", "offload", "region", "set_mode", "get_mode",
        "set_backend", "get_backend", "events", "AliasError", "BorrowError", "UseAfterMoveError",
        "DeviceMemoryError", "BackendError",
    }
    assert expected <= set(offload_core.__all__)
    for name in offload_core.__all__:
        assert getattr(offload_core, name) is not None


def test_numpy_backend_capacity_and_separate_memory() -> None:
    be = NumpyBackend(capacity=1000)
    a = be.empty((10,), np.dtype(np.float64), (8,))
    assert be.memory_in_use() == 80
    host = np.arange(10.0)
    be.upload(host, a)
    host[:] = -1
    assert a[3] == 3.0, "the device twin is separate memory"
    assert not np.shares_memory(a, host)
    be.free(a)
    assert be.memory_in_use() == 0
    with pytest.raises(ValueError, match="capacity must be a positive number of bytes"):
        NumpyBackend(capacity=0)
    assert "capacity 1000 bytes" in be.device
