"""`CuptiRecorder` and offload_core's event bus: joined for torch.distributed's calls, or left alone (calibrate)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from offload_core import events
from profiler.sources.cupti import recorder as recorder_module
from profiler.sources.cupti.probe import Driver
from profiler.sources.cupti.recorder import CuptiRecorder


class StubTracer:
    """The part of a `Tracer` the recorder's start and stop touch; no CUPTI behind it."""

    def __init__(self, cupti: Any, **_: Any) -> None:
        self.cupti = cupti
        self.native = None
        self.t0 = 0

    def start(self) -> StubTracer:
        return self

    def halt(self) -> None:
        pass


@pytest.fixture
def stubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    cupti = SimpleNamespace(get_timestamp=lambda: 1000)
    monkeypatch.setattr(recorder_module, "require", lambda: (cupti, Driver(device="stub GPU")))
    monkeypatch.setattr(recorder_module, "Tracer", StubTracer)


@pytest.mark.usefixtures("stubbed")
def test_a_recorder_joins_offload_core_s_bus_for_collectives_unless_told_not_to() -> None:
    before = events.BUS.subscribers
    joined = CuptiRecorder().start()
    try:
        assert len(events.BUS.subscribers) == len(before) + 1  # torch.distributed's calls arrive through it
    finally:
        joined.stop()
    assert events.BUS.subscribers == before
    alone = CuptiRecorder(collectives=False).start()
    try:
        assert events.BUS.subscribers == before  # no subscriber: offload_core's launches build no event
    finally:
        alone.stop()
    assert events.BUS.subscribers == before
