"""What the guard tests share: a kernel, the lines of marked statements, a clean guard state per test.

And the machine each test needs, made explicitly rather than found: which
GPU libraries are loaded, what the CUPTI probe finds, whether a child
process can import cupti-python; so the tests pass alike on CI and on the
GPU machine (with cupti-python, CuPy, PyTorch, Numba and JAX loaded).
"""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Callable, Iterator

import numpy as np
import pytest

from offload_core import In, InOut, Out, kernel
from offload_core.events import BUS
from profiler.guard import delivery, watchers
from profiler.guard.watchers import GPU_LIBRARIES, SOURCES, Frames
from profiler.sources.cupti import probe
from profiler.sources.cupti.frames import FrameFilter, library_folders


@kernel
def daxpy(y: InOut, x: In, a: float) -> None:
    y += a * x


@kernel
def total(out: Out, x: In) -> None:
    out[0] = x.sum()


def line_of(path: str, marker: str) -> int:
    """The line of `path` that ends with `marker` (tests name lines by a comment, not by number)."""
    with open(path) as fh:
        return next(n for n, text in enumerate(fh, 1) if text.rstrip().endswith(marker))


def arrays(n: int = 100) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(n), np.ones(n)


def hide_cupti_python(folder: Path) -> None:
    """A `cupti` package in `folder` that fails to import as an absent one does.

    A program run from `folder` (which leads its `sys.path`) then has no
    cupti-python, whether or not this machine has it.
    """
    (folder / "cupti").mkdir()
    (folder / "cupti" / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'cupti'\", name='cupti')\n")


def loaded_libraries(monkeypatch: pytest.MonkeyPatch, *names: str, **modules: object) -> None:
    """Make exactly these GPU libraries the loaded ones, whatever this process has imported (restored after the test).

    `names` get empty stand-in modules, `modules` the given ones; the
    others of `GPU_LIBRARIES` are taken out of `sys.modules`. The guard's
    frame filter is built first, so that it still knows the real
    libraries' folders.
    """
    monkeypatch.setattr(watchers, "FRAMES", Frames(FrameFilter(library_folders())))
    wanted = {**{n: types.ModuleType(n) for n in names}, **modules}
    for name in GPU_LIBRARIES:
        if name in wanted:
            monkeypatch.setitem(sys.modules, name, wanted[name])
        else:
            monkeypatch.delitem(sys.modules, name, raising=False)


def probe_finds(monkeypatch: pytest.MonkeyPatch, *, cupti: bool, gpu: bool) -> None:
    """The CUPTI probe finds cupti-python (or not) and an NVIDIA GPU (or not), whatever this machine has.

    The guard's real start (`watchers._start_cupti`) is put back, so what
    a scope says is what the probe's answer makes of it; with both found
    it would start CUPTI for real, which only the GPU tests do.
    """
    assert not (cupti and gpu), "CUPTI that can start is the fake CUPTI's (tests/profiler/sources/cupti) or the GPU tests'"
    found = (object(), "") if cupti else (None, "No module named 'cupti'")
    driver = probe.Driver(device="NVIDIA H200", version="13.0") if gpu else probe.query_driver(None, ("libcuda.so.1",))
    monkeypatch.setattr(probe, "import_cupti", lambda: found)
    monkeypatch.setattr(probe, "query_driver", lambda lib: driver)
    monkeypatch.setattr(probe, "load_driver", lambda: None)
    monkeypatch.setattr(SOURCES, "start_cupti", watchers._start_cupti)
    monkeypatch.setattr(SOURCES, "cupti_problem", None)


def _silent_cupti() -> Callable[[], None]:
    return lambda: None


@pytest.fixture(autouse=True)
def clean_guard(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """CUPTI "starts" and hears nothing (the NumPy backend makes no CUDA call), nothing said yet; checks nothing leaks.

    So that a `source="auto"` scope behaves the same on CI and on the GPU
    machine; the tests of the CUPTI source and of its absence set their own.
    """
    monkeypatch.setattr(SOURCES, "_said", set())
    monkeypatch.setattr(SOURCES, "_named", set())
    monkeypatch.setattr(SOURCES, "start_cupti", _silent_cupti)
    monkeypatch.setattr(SOURCES, "cupti_problem", None)
    yield
    assert not SOURCES.active, "every scope released its sources"
    assert not BUS._watchers, "the offload_core watcher is gone with the last scope"
    assert delivery.pending() is None and sys.gettrace() is None, "no raise left armed, no tracing left on"
