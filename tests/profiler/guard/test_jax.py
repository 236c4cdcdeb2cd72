"""JAX under the guard, with a stand-in for JAX: its own guard turned on, its refusal turned into the guard's error."""

from __future__ import annotations

import os
import sys
import traceback
from typing import Iterator

import pytest

from profiler import guard
from profiler.guard import GuardSourceWarning, TransferGuardError, watchers
from profiler.guard.watchers import Frames
from profiler.sources.cupti.frames import FrameFilter, library_folders

from . import fakejax
from .kit import line_of

HERE = __file__


@pytest.fixture
def jax(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    monkeypatch.setitem(sys.modules, "jax", fakejax)
    folder = os.path.join(os.path.dirname(fakejax.__file__), "")
    monkeypatch.setattr(watchers, "FRAMES", Frames(FrameFilter(folders=(folder, *library_folders()))))
    monkeypatch.setattr(watchers.SOURCES, "start_cupti", _no_cupti)
    monkeypatch.setattr(watchers.SOURCES, "cupti_problem", "CUPTI needs an NVIDIA GPU")
    monkeypatch.setattr(watchers.SOURCES, "_said", {"the transfer guard sees only offload_core's copies here, "
                                                    "not those of jax: CUPTI needs an NVIDIA GPU"})
    yield fakejax
    assert fakejax.level("h2d") == fakejax.level("d2h") == "allow", "JAX's guard is back as it was"


def _no_cupti() -> None:
    raise AssertionError("not asked: the problem is known")


def test_raise_turns_jax_guard_on_and_its_refusal_into_the_guards_error(jax: object) -> None:
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers():
            assert fakejax.level("h2d") == fakejax.level("d2h") == "disallow_explicit"
            fakejax.device_put([1.0] * 8)  # marker: device_put
    (v,) = caught.value.violations
    assert (v.kind, v.site.line, v.source) == ("h2d", line_of(HERE, "# marker: device_put"), "jax.transfer_guard")
    assert "H2D copy of unknown size by jax (INVALID_ARGUMENT: Disallowed host-to-device transfer" in str(caught.value)
    cause = caught.value.__cause__
    assert isinstance(cause, fakejax.XlaRuntimeError)
    assert line_of(HERE, "# marker: device_put") in [f.lineno for f in traceback.extract_tb(cause.__traceback__)]


def test_only_the_forbidden_directions_and_holes_let_jax_through(jax: object) -> None:
    with guard.no_transfers(h2d=False):
        fakejax.device_put([1.0])
        with pytest.raises(TransferGuardError) as caught:
            with guard.no_transfers(h2d=False, d2h=True):
                fakejax.to_host([1.0])  # marker: to_host
        assert caught.value.violations[0].kind == "d2h"
        with guard.allow(reason="read the loss once"):
            fakejax.to_host([1.0])
    with guard.no_transfers(mode="log"):
        fakejax.device_put([1.0]), fakejax.to_host([1.0])  # warn/log leave JAX's guard alone


def test_a_jax_guard_already_on_is_said_and_left_alone(jax: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fakejax.config, "jax_transfer_guard", "log")
    with pytest.warns(GuardSourceWarning, match="jax.transfer_guard is on: JAX's transfers are left to it"):
        with guard.no_transfers():
            assert fakejax.level("h2d") == "allow", "the user's JAX guard decides"
            fakejax.device_put([1.0])
