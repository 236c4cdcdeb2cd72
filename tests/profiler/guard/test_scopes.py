"""Every mode of `no_transfers` on the NumPy backend: where the error surfaces, what it says, what passes."""

from __future__ import annotations

import logging
import sys
import traceback
import warnings
from typing import Any

import numpy as np
import pytest

from offload_core import offload, region
from profiler import guard
from profiler.guard import TransferGuardError, TransferGuardWarning

from .kit import arrays, daxpy, line_of, total

HERE = __file__


def test_raise_surfaces_at_the_users_line_and_names_line_call_direction_bytes() -> None:
    y, x = arrays()
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers():
            offload(daxpy, y, x, 2.0)  # marker: naive launch
            raise AssertionError("not reached: the guard raises before the next instruction")
    line = line_of(HERE, "# marker: naive launch")
    last = traceback.extract_tb(caught.value.__traceback__)[-1]
    assert (last.filename, last.lineno) == (HERE, line), "the traceback ends at the user's line, not in the guard"
    message = str(caught.value)
    assert f"test_scopes.py:{line} in test_raise_surfaces_at_the_users_line_and_names_line_call_direction_bytes: " \
           "`offload(daxpy, y, x, 2.0)  # marker: naive launch`: H2D copy of 800 B" in message
    assert "by offload(daxpy) parameter y" in message and "no_transfers(h2d=True, d2h=True" in message
    kinds = [(v.kind, v.nbytes, v.call) for v in caught.value.violations]
    assert kinds == [("h2d", 800, "offload(daxpy) parameter y"), ("h2d", 800, "offload(daxpy) parameter x"),
                     ("d2h", 800, "offload(daxpy) parameter y")], "the same call's other copies travel with it"
    assert np.all(y == 2.0), "the call itself completed: the guard raised after it, at the line"


def helper(y: np.ndarray, x: np.ndarray) -> None:
    offload(daxpy, y, x, 1.0)  # marker: in the helper


def test_the_line_is_the_innermost_user_line_even_in_a_helper() -> None:
    y, x = arrays()
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers():
            helper(y, x)
    assert caught.value.violations[0].site.line == line_of(HERE, "# marker: in the helper")
    assert traceback.extract_tb(caught.value.__traceback__)[-1].name == "helper"


def test_the_error_can_be_caught_in_the_same_frame_and_the_scope_goes_on() -> None:
    y, x = arrays()
    caught = 0
    with guard.no_transfers() as g:
        for _ in range(2):
            try:
                offload(daxpy, y, x, 1.0)
            except TransferGuardError:
                caught += 1
    assert caught == 2 and len(g.violations) == 6


def test_warn_warns_at_the_line_once_per_line() -> None:
    y, x = arrays()
    with pytest.warns(TransferGuardWarning) as record:
        with guard.no_transfers(mode="warn") as g:
            for _ in range(3):
                offload(daxpy, y, x, 1.0)  # marker: warned
            offload(daxpy, y, x, 1.0)  # marker: warned too
    assert [(w.filename, w.lineno) for w in record] == [(HERE, line_of(HERE, "# marker: warned")),
                                                        (HERE, line_of(HERE, "# marker: warned too"))]
    assert "H2D copy of 800 B by offload(daxpy) parameter y" in str(record[0].message)
    assert len(g.violations) == 12, "every one is still collected"


def test_warn_made_an_error_by_a_filter_raises_at_the_line() -> None:
    y, x = arrays()
    with warnings.catch_warnings():
        warnings.simplefilter("error", TransferGuardWarning)
        with pytest.raises(TransferGuardWarning) as caught:
            with guard.no_transfers(mode="warn"):
                offload(daxpy, y, x, 1.0)  # marker: warning as error
    last = traceback.extract_tb(caught.value.__traceback__)[-1]
    assert last.lineno == line_of(HERE, "# marker: warning as error")


def test_log_collects_and_summarises_with_counts_and_bytes(caplog: pytest.LogCaptureFixture) -> None:
    y, x = arrays()
    with caplog.at_level(logging.WARNING, logger="offload_guard"):
        with guard.no_transfers(mode="log", syncs=True) as g:
            for _ in range(3):
                offload(daxpy, y, x, 1.0)  # marker: logged
            assert len(g.violations) == 12, "live while the scope is open"
    (record,) = caplog.records
    text = record.getMessage()
    line = line_of(HERE, "# marker: logged")
    assert text.splitlines()[0] == ("12 forbidden transfers inside "
                                    "no_transfers(h2d=True, d2h=True, syncs=True, mode='log'):")
    assert f"test_scopes.py:{line} in test_log_collects_and_summarises_with_counts_and_bytes: " \
           "`offload(daxpy, y, x, 1.0)  # marker: logged`: 3 H2D copies (2.4 kB) by offload(daxpy) parameter x" in text
    assert "3 syncs by offload(daxpy)" in text and "3 D2H copies (2.4 kB) by offload(daxpy) parameter y" in text


def test_log_with_nothing_forbidden_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    y, x = arrays()
    with caplog.at_level(logging.WARNING, logger="offload_guard"):
        with region(x, y):
            with guard.no_transfers(mode="log") as g:
                offload(daxpy, y, x, 1.0)
    assert g.violations == [] and caplog.records == []


@pytest.mark.parametrize(("kwargs", "expect"), [
    ({"h2d": True, "d2h": False}, ["h2d", "h2d"]),
    ({"h2d": False, "d2h": True}, ["d2h"]),
    ({"h2d": False, "d2h": False, "syncs": True}, ["sync"]),
    ({"syncs": True}, ["h2d", "h2d", "d2h", "sync"]),
    ({"min_bytes": 801}, []),
    ({"min_bytes": "800 B"}, ["h2d", "h2d", "d2h"]),
])
def test_kinds_and_min_bytes_choose_what_is_forbidden(kwargs: dict[str, Any], expect: list[str]) -> None:
    y, x = arrays()
    with guard.no_transfers(mode="log", **kwargs) as g:
        offload(daxpy, y, x, 1.0)
    assert [v.kind for v in g.violations] == expect


def test_scalars_read_for_control_flow_pass_by_kind_with_their_sync() -> None:
    x = np.ones(100)
    out = np.zeros(1)
    with guard.no_transfers(mode="log", syncs=True, allow_scalars=True) as g:
        with region(x):
            offload(total, out, x)  # one element back, then its sync
    assert [(v.kind, v.nbytes) for v in g.violations] == [("h2d", 800)], "the region's upload; the scalar passed"
    with guard.no_transfers(mode="log", syncs=True) as g:
        with region(x):
            offload(total, out, x)
    assert [(v.kind, v.nbytes) for v in g.violations] == [("h2d", 800), ("d2h", 8), ("sync", 0)]


def test_a_region_keeps_the_loop_clean_and_its_edges_are_caught() -> None:
    y, x = arrays()
    with guard.no_transfers(mode="log") as g:
        with region(x, y):  # marker: the region
            for _ in range(5):
                offload(daxpy, y, x, 1.0)
    line = line_of(HERE, "# marker: the region")
    assert [(v.kind, v.site.line, v.call) for v in g.violations] == [
        ("h2d", line, "region copy of x"), ("h2d", line, "region copy of y"), ("d2h", line, "region copy of y")]


def test_nesting_the_innermost_scope_decides_and_the_outer_one_resumes() -> None:
    y, x = arrays()
    with guard.no_transfers(mode="log") as outer:
        with guard.no_transfers(mode="log", h2d=False) as inner:
            offload(daxpy, y, x, 1.0)
        offload(daxpy, y, x, 1.0)
    assert [v.kind for v in inner.violations] == ["d2h"]
    assert [v.kind for v in outer.violations] == ["h2d", "h2d", "d2h"], "the inner scope's copies are its own"


def test_an_inner_raise_scope_inside_a_log_scope_raises() -> None:
    y, x = arrays()
    with guard.no_transfers(mode="log") as outer:
        with pytest.raises(TransferGuardError):
            with guard.no_transfers(d2h=False):
                offload(daxpy, y, x, 1.0)
    assert outer.violations == []


def test_allow_opens_a_named_hole_and_counts_what_passed() -> None:
    y, x = arrays()
    with guard.no_transfers() as g:
        with guard.allow(reason="upload the weights once") as hole:
            offload(daxpy, y, x, 1.0)
            with guard.no_transfers(mode="log", h2d=False) as again:  # a scope inside a hole guards again
                offload(daxpy, y, x, 1.0)
        assert hole.passed == 4 and hole.reason == "upload the weights once"
        with pytest.raises(TransferGuardError):
            offload(daxpy, y, x, 1.0)
    assert [v.kind for v in again.violations] == ["d2h"]
    assert len(g.violations) == 3


def test_allow_as_a_decorator_and_its_one_line_refusals() -> None:
    y, x = arrays()

    @guard.allow(reason="the checkpoint")
    def checkpoint() -> None:
        offload(daxpy, y, x, 1.0)

    with guard.no_transfers():
        checkpoint()
    with pytest.raises(ValueError, match=r"^allow\(\) needs a reason, e.g. allow\(reason="):
        guard.allow(reason=" ")
    with guard.allow(reason="outside any scope: nothing to open a hole in"):
        offload(daxpy, y, x, 1.0)


def test_the_decorator_opens_a_fresh_scope_per_call() -> None:
    y, x = arrays()
    seen: list[int] = []

    @guard.no_transfers(mode="log")
    def step(depth: int) -> None:
        offload(daxpy, y, x, 1.0)  # marker: decorated
        if depth:
            step(depth - 1)

    step(2)
    with pytest.raises(TransferGuardError) as caught:
        guard.no_transfers()(lambda: offload(daxpy, y, x, 1.0))()
    assert caught.value.violations[0].kind == "h2d"
    assert step.__name__ == "step"
    scope = guard.no_transfers(mode="log")
    with scope:
        with pytest.raises(RuntimeError, match="already open"):
            scope.__enter__()
    seen.append(len(scope.violations))
    assert seen == [0]


def test_bad_arguments_are_one_line_errors() -> None:
    for kwargs, pattern in (({"mode": "loud"}, r"no_transfers\(mode='loud'\): use one of raise, warn, log"),
                            ({"h2d": False, "d2h": False}, r"forbids nothing"),
                            ({"min_bytes": "lots"}, r"min_bytes\) 'lots' is not a size"),
                            ({"source": "nvtx"}, r"source='nvtx'")):
        with pytest.raises(ValueError, match=pattern) as caught:
            guard.no_transfers(**kwargs)
        assert "\n" not in str(caught.value)
    with pytest.raises(TypeError, match=r"no_transfers\(syncs=\.\.\.\) takes True or False, got 'yes'"):
        guard.no_transfers(syncs="yes")  # type: ignore[arg-type]


def test_a_tracer_already_on_is_put_back_after_the_guard_raised() -> None:
    calls: list[str] = []

    def tracer(frame: Any, event: str, arg: Any) -> None:
        calls.append(event)
        return None

    y, x = arrays()
    sys.settrace(tracer)
    try:
        with pytest.raises(TransferGuardError):
            with guard.no_transfers():
                offload(daxpy, y, x, 1.0)
        assert sys.gettrace() is tracer
    finally:
        sys.settrace(None)
    assert "call" in calls, "the previous tracer kept seeing calls while the guard was armed"
