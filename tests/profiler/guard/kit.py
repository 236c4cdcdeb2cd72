"""What the guard tests share: a kernel, the lines of marked statements, and a clean guard state per test."""

from __future__ import annotations

import importlib.util
import sys
from typing import Callable, Iterator

import numpy as np
import pytest

from offload_core import In, InOut, Out, kernel
from offload_core.events import BUS
from profiler.guard import delivery
from profiler.guard.watchers import SOURCES


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


#: whether cupti-python imports here (the GPU machine): tests of what happens without it are skipped there
HAS_CUPTI = importlib.util.find_spec("cupti") is not None


def _silent_cupti() -> Callable[[], None]:
    return lambda: None


@pytest.fixture(autouse=True)
def clean_guard(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """CUPTI "starts" and hears nothing (the NumPy backend makes no CUDA call), nothing said yet; checks nothing leaks.

    So that a `source="auto"` scope behaves the same on CI and on the GPU
    machine; the tests of the CUPTI source and of its absence set their own.
    """
    monkeypatch.setattr(SOURCES, "_said", set())
    monkeypatch.setattr(SOURCES, "start_cupti", _silent_cupti)
    monkeypatch.setattr(SOURCES, "cupti_problem", None)
    yield
    assert not SOURCES.active, "every scope released its sources"
    assert not BUS._watchers, "the offload_core watcher is gone with the last scope"
    assert delivery.pending() is None and sys.gettrace() is None, "no raise left armed, no tracing left on"
