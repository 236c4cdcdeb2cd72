"""Which sources a scope uses, and the one line it says where it cannot see a library's copies."""

from __future__ import annotations

import sys
import types
import warnings

import pytest

from offload_core import offload
from profiler import guard
from profiler.errors import ProfilerError
from profiler.guard import GuardSourceError, GuardSourceWarning
from profiler.guard.watchers import SOURCES

from .kit import arrays, daxpy, line_of, loaded_libraries, probe_finds

HERE = __file__


@pytest.fixture
def no_cupti(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """CUPTI cannot start here, as on a machine without the cupti extra; counts the attempts."""
    tries: list[int] = []

    def refuse() -> None:
        tries.append(1)
        raise ProfilerError("--source cupti needs the cupti extra (pip install 'offload-guard[cupti]'): "
                            "No module named 'cupti'")

    monkeypatch.setattr(SOURCES, "start_cupti", refuse)
    monkeypatch.setattr(SOURCES, "cupti_problem", None)
    return tries


def test_source_cupti_without_cupti_is_refused_in_one_line(no_cupti: list[int]) -> None:
    with pytest.raises(GuardSourceError) as caught:
        with guard.no_transfers(source="cupti"):
            raise AssertionError("not entered")
    assert str(caught.value) == ("no_transfers(source='cupti'): CUPTI needs the cupti extra "
                                 "(pip install 'offload-guard[cupti]'): No module named 'cupti'")
    with pytest.raises(GuardSourceError):
        guard.no_transfers(source="cupti").__enter__()
    assert no_cupti == [1], "a machine that could not run CUPTI is not asked again"


EXTRA = "the cupti extra (pip install 'offload-guard[cupti]'): No module named 'cupti'"
GPU = ("an NVIDIA GPU: libcuda.so.1 not found (no NVIDIA driver; on AMD GPUs record with rocprofv3 and "
       "`offload-prof import-rocprof`)")


@pytest.mark.parametrize(("cupti", "gpu", "problem"), [
    (False, False, f"CUPTI needs {EXTRA}; and {GPU}"),
    (False, True, f"CUPTI needs {EXTRA}"),
    (True, False, f"CUPTI needs {GPU}"),
], ids=["neither", "no-cupti-python", "no-gpu"])
def test_what_the_probe_misses_is_said_in_one_line(monkeypatch: pytest.MonkeyPatch, cupti: bool, gpu: bool,
                                                   problem: str) -> None:
    probe_finds(monkeypatch, cupti=cupti, gpu=gpu)
    with pytest.raises(GuardSourceError) as caught:
        with guard.no_transfers(source="cupti"):
            raise AssertionError("not entered")
    assert str(caught.value) == f"no_transfers(source='cupti'): {problem}"
    loaded_libraries(monkeypatch, "cupy", "torch")
    with pytest.warns(GuardSourceWarning) as record:
        with guard.no_transfers(mode="log"):
            pass
    assert [str(w.message) for w in record] == [
        f"offload guard: the transfer guard sees only offload_core's copies here, not those of cupy, torch: {problem}"]


def test_auto_says_once_what_it_cannot_see_when_a_gpu_library_is_loaded(
        no_cupti: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    loaded_libraries(monkeypatch, "cupy")
    with pytest.warns(GuardSourceWarning) as record:
        for _ in range(3):
            with guard.no_transfers(mode="log"):  # marker: entered
                pass
    (w,) = record
    assert str(w.message) == ("offload guard: the transfer guard sees only offload_core's copies here, not those of "
                              "cupy: CUPTI needs the cupti extra (pip install 'offload-guard[cupti]'): "
                              "No module named 'cupti'")
    assert (w.filename, w.lineno) == (HERE, line_of(HERE, "# marker: entered")), "said at the line that opened it"


def test_auto_without_a_gpu_library_guards_offload_core_silently(no_cupti: list[int],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    loaded_libraries(monkeypatch)
    y, x = arrays()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with guard.no_transfers(mode="log") as g:
            offload(daxpy, y, x, 1.0)
    assert len(g.violations) == 3


def test_source_offload_never_asks_for_cupti(no_cupti: list[int]) -> None:
    with guard.no_transfers(source="offload", mode="log"):
        pass
    assert no_cupti == []


def test_an_offload_core_copy_is_reported_once_and_by_its_event(no_cupti: list[int],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    loaded_libraries(monkeypatch)
    y, x = arrays()
    with guard.no_transfers(mode="log") as g:
        offload(daxpy, y, x, 1.0)
    assert {v.source for v in g.violations} == {"offload_core"} and len(g.violations) == 3


def test_a_library_loaded_inside_the_scope_is_said_when_it_ends(no_cupti: list[int],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    loaded_libraries(monkeypatch)
    with pytest.warns(GuardSourceWarning, match=r"not those of torch: CUPTI needs the cupti extra") as record:
        with guard.no_transfers(mode="log"):
            monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))  # the program imports it
    assert len(record) == 1
