"""Shared fixtures: a backend per test (NumPy always, CuPy where a GPU is), an event recorder, text snapshots.

Every test leaves offload_core as it found it: the batched mode, the NumPy
backend, no mapped arrays and no device memory in use. The last two are
asserted after each test, so a leak anywhere in the launch or region paths
fails the test that caused it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np
import pytest

import offload_core
from offload_core import events
from offload_core.backends import NumpyBackend, cupy_usable

from .snapshots import TextSnapshot


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if cupy_usable():
        return
    skip = pytest.mark.skip(reason="needs CuPy and a GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _clean_state() -> Iterator[None]:
    offload_core.set_mode("batched")
    offload_core.set_backend(NumpyBackend())
    yield
    be = offload_core.get_backend()
    leaked = list(be.present.mappings)
    in_use = be.memory_in_use()
    regions = list(be.present.regions)
    be.present.mappings.clear()
    be.present.by_id.clear()
    be.present.regions.clear()
    offload_core.set_mode("batched")
    offload_core.set_backend(NumpyBackend())
    assert not leaked, f"test left arrays mapped: {[m.name for m in leaked]}"
    assert not regions, f"test left regions active: {regions}"
    assert in_use == 0, f"test left {in_use} bytes of device memory allocated"


@pytest.fixture(params=["numpy", pytest.param("cupy", marks=pytest.mark.gpu)])
def backend(request: pytest.FixtureRequest) -> str:
    """Run the test on each backend; the test body is backend-agnostic."""
    offload_core.set_backend(request.param)
    return str(request.param)


@pytest.fixture
def capped(backend: str) -> Callable[[int], Any]:
    """`capped(nbytes)` selects a backend of the test's kind whose device memory is limited to `nbytes`."""

    def make(capacity: int) -> Any:
        if backend == "numpy":
            return offload_core.set_backend(NumpyBackend(capacity=capacity))
        from offload_core.backends.cupy_backend import CupyBackend

        return offload_core.set_backend(CupyBackend(capacity=capacity))

    return make


@dataclass
class Recorder:
    """Every event, with the counting helpers the tests assert on."""

    _events: list[events.Event] = field(default_factory=list)

    def __call__(self, event: events.Event) -> None:
        self._events.append(event)

    @property
    def events(self) -> list[events.Event]:
        """Everything so far, including events still waiting for device timings."""
        events.flush()
        return self._events

    def kinds(self, *skip: str) -> list[str]:
        return [e.kind for e in self.events if e.kind not in skip]

    def count(self, kind: str, param: str | None = None) -> int:
        return sum(1 for e in self.of(kind, param))

    def bytes(self, kind: str, param: str | None = None) -> int:
        return sum(e.nbytes for e in self.of(kind, param))

    def of(self, kind: str, param: str | None = None) -> list[events.Event]:
        return [e for e in self.events if e.kind == kind and (param is None or e.param == param)]

    def copies(self) -> list[tuple[str, str | None, int]]:
        """(direction, param, bytes) of every H2D and D2H, in order."""
        return [(e.kind, e.param, e.nbytes) for e in self.events if e.kind in ("h2d", "d2h")]

    def clear(self) -> None:
        self.events.clear()


@pytest.fixture
def rec() -> Iterator[Recorder]:
    recorder = Recorder()
    unsubscribe = events.subscribe(recorder)
    yield recorder
    unsubscribe()


def host(a: Any) -> np.ndarray:
    """A host copy of a kernel result, whichever backend made it."""
    return np.asarray(a)


@pytest.fixture
def text_snapshot(snapshot: Any) -> Any:
    """A syrupy snapshot stored as a plain text file (see tests/snapshots.py)."""
    return snapshot.use_extension(TextSnapshot)
