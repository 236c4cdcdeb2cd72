"""The transfer guard on a real NVIDIA GPU: CuPy, PyTorch, Numba and JAX copies raise at the line that made them.

Marked `gpu` (skipped without CuPy and a GPU) and skipped without
cupti-python; each library's tests are skipped where it is not installed.
The guard listens through CUPTI in this process (`source="cupti"`); the
whole-program and marker tests run `offload-prof run` and pytest in fresh
processes on `benchmarks/programs/guard_train.py`, a PyTorch training
loop whose only per-step transfer is `total += loss.item()`.
Run on the GPU machine with `bash benchmarks/guard_gpu_check.sh`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

from profiler import guard
from profiler.guard import TransferGuardError, watchers
from profiler.guard.watchers import SOURCES
from profiler.sources.cupti.probe import import_cupti

from ..kit import PLUGIN
from .kit import line_of

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX shares the GPU with CuPy and PyTorch here

HERE = __file__
ROOT = Path(__file__).resolve().parents[3]
TRAIN = ROOT / "benchmarks" / "programs" / "guard_train.py"
needs_cupti = pytest.mark.skipif(import_cupti()[0] is None, reason="cupti-python is not installed (the cupti extra)")
pytestmark = [pytest.mark.gpu, needs_cupti]
pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def real_cupti(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The real CUPTI source (kit's autouse fixture silences it for the CPU tests)."""
    monkeypatch.setattr(SOURCES, "start_cupti", watchers._start_cupti)
    monkeypatch.setattr(SOURCES, "cupti_problem", None)
    yield


def raised_at(caught: pytest.ExceptionInfo[TransferGuardError], marker: str) -> list[tuple[str, int | None]]:
    """Asserts the traceback ends at the marked line; returns the violations as (kind, bytes)."""
    last = traceback.extract_tb(caught.value.__traceback__)[-1]
    assert (last.filename, last.lineno) == (HERE, line_of(HERE, marker)), str(caught.value)
    assert caught.value.violations[0].site.line == line_of(HERE, marker)
    return [(v.kind, v.nbytes) for v in caught.value.violations]


def total(found: list[tuple[str, int | None]], kind: str) -> int:
    return sum(n or 0 for k, n in found if k == kind)


# -------------------------------------------------------------------------- CuPy
def test_cupy_uploads_downloads_and_syncs() -> None:
    cp = pytest.importorskip("cupy")
    x = np.ones(1 << 20)
    d = cp.ones(1 << 20)
    cp.cuda.Device().synchronize()
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers(source="cupti"):
            cp.asarray(x)  # marker: cupy upload
    assert total(raised_at(caught, "# marker: cupy upload"), "h2d") == x.nbytes
    assert "cupy" in caught.value.violations[0].call
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers(source="cupti"):
            cp.asnumpy(d)  # marker: cupy download
    assert total(raised_at(caught, "# marker: cupy download"), "d2h") == d.nbytes
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers(h2d=False, d2h=False, syncs=True, source="cupti"):
            cp.cuda.Stream.null.synchronize()  # marker: cupy sync
    assert raised_at(caught, "# marker: cupy sync")[0][0] == "sync"
    with guard.no_transfers(syncs=True, allow_scalars=True, source="cupti", mode="log") as g:
        for _ in range(3):
            if float(d.sum()) < 0:  # a scalar read for control flow
                break
    assert g.violations == []


def test_auto_listens_through_cupti_here_and_says_nothing() -> None:
    cp = pytest.importorskip("cupy")  # a GPU library is loaded: without CUPTI the scope would say so
    x = np.ones(1024)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a GuardSourceWarning ("... CUPTI needs ...") would fail here
        with guard.no_transfers(mode="log") as g:
            cp.asarray(x)  # marker: auto upload
    assert SOURCES.cupti_problem == "", "the probe found cupti-python and the GPU"
    assert {(v.kind, v.source, v.site.line) for v in g.violations} == {
        ("h2d", "cupti", line_of(HERE, "# marker: auto upload"))}
    assert total([(v.kind, v.nbytes) for v in g.violations], "h2d") == x.nbytes


# ----------------------------------------------------------------------- PyTorch
@pytest.fixture
def torch() -> Any:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    return torch


def test_torch_item_cpu_and_to_cuda_raise_at_their_lines(torch: Any) -> None:
    t = torch.ones(1000, device="cuda")
    h = torch.ones(1000)
    torch.cuda.synchronize()
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers(syncs=True, source="cupti"):
            t.sum().item()  # marker: item
    found = raised_at(caught, "# marker: item")
    assert found[0] == ("d2h", 4) and ("sync", None) in found, "a 4-byte D2H and the stream sync that waits for it"
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers(source="cupti"):
            t.cpu()  # marker: cpu
    assert total(raised_at(caught, "# marker: cpu"), "d2h") == t.nbytes
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers(source="cupti"):
            h.to("cuda")  # marker: to cuda
    assert total(raised_at(caught, "# marker: to cuda"), "h2d") == h.nbytes
    with guard.no_transfers(syncs=True, allow_scalars=True, source="cupti", mode="log") as g:
        t.sum().item()
    assert g.violations == []


def test_torch_other_threads_copies_are_not_blamed(torch: Any) -> None:
    import threading

    t = torch.ones(1000, device="cuda")
    torch.cuda.synchronize()
    with guard.no_transfers(source="cupti", mode="log") as g:
        worker = threading.Thread(target=lambda: [t.cpu() for _ in range(10)])
        worker.start()
        worker.join(60)
    assert g.violations == []


# ------------------------------------------------------------------------- Numba
def test_numba_to_device_and_copy_to_host() -> None:
    cuda = pytest.importorskip("numba.cuda")
    if not cuda.is_available():
        pytest.skip("Numba sees no CUDA GPU")
    x = np.ones(4096)
    d = cuda.to_device(x)
    cuda.synchronize()
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers(source="cupti"):
            cuda.to_device(x)  # marker: numba upload
    assert total(raised_at(caught, "# marker: numba upload"), "h2d") == x.nbytes
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers(source="cupti"):
            d.copy_to_host()  # marker: numba download
    assert total(raised_at(caught, "# marker: numba download"), "d2h") == x.nbytes


# --------------------------------------------------------------------------- JAX
def test_jax_device_put_and_read_back() -> None:
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX sees no GPU")
    x = np.ones(1000, dtype=np.float32)
    y = jax.device_put(x) + 1
    y.block_until_ready()
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers(source="cupti"):
            jax.device_put(x)  # marker: jax upload
    assert caught.value.violations[0].kind == "h2d"
    assert caught.value.violations[0].site.line == line_of(HERE, "# marker: jax upload")
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers(source="cupti"):
            np.asarray(y)  # marker: jax download
    assert caught.value.violations[0].kind == "d2h"
    assert caught.value.violations[0].site.line == line_of(HERE, "# marker: jax download")
    with guard.no_transfers(source="cupti"):
        with guard.allow(reason="one read"):
            np.asarray(y * 2)


# ------------------------------------------------- a training loop, whole program
def _item_line() -> int:
    return next(n for n, text in enumerate(TRAIN.read_text().splitlines(), 1) if text.rstrip().endswith("# site: item"))


def _prof(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_GUARD")}
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return subprocess.run([sys.executable, "-m", "profiler", "run", "-o", str(tmp_path / "t.json"), "--",
                           str(TRAIN), "--steps", "30", "--warmup", "5"], env={**environ, **env}, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)


def test_offload_guard_names_the_training_loops_item_line(tmp_path: Path, torch: Any) -> None:
    done = _prof(tmp_path, OFFLOAD_GUARD="raise", OFFLOAD_GUARD_KINDS="d2h")
    assert done.returncode == 1, done.stderr[-3000:]
    assert f'File "{TRAIN}", line {_item_line()}, in train' in done.stderr
    assert f"guard_train.py:{_item_line()} in train: `total += loss.item()  # site: item`: D2H copy of 4 B" \
        in done.stderr
    logged = _prof(tmp_path, OFFLOAD_GUARD="log", OFFLOAD_GUARD_KINDS="d2h,sync")
    assert logged.returncode == 0, logged.stderr[-3000:]
    assert f"guard_train.py:{_item_line()} in train: `total += loss.item()  # site: item`: 35 D2H copies (140 B)" \
        in logged.stderr, "one per step, warm-up included"


def test_the_marker_names_the_training_loops_item_line(pytester: pytest.Pytester, torch: Any) -> None:
    pytester.makepyfile(test_train=f"""
import sys
import pytest
sys.path.insert(0, {str(TRAIN.parent)!r})
import guard_train

@pytest.mark.no_transfers(syncs=True)
def test_steps():
    guard_train.train(7, guard_train.build())
""")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *PLUGIN, "--offload-source=cupti")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        f"*guard_train.py:{_item_line()} in train: `total += loss.item()  # site: item`: 7 D2H copies (28 B)*",
        f"*guard_train.py:{_item_line()} in train: `total += loss.item()  # site: item`: 7 syncs*"])
