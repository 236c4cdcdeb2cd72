"""JAX under the guard: its own guard turned on by a `raise` scope, and its refusal turned into the guard's error.

The first tests run the real JAX where it is installed (not in the test
extra: `pip install jax` on CPU is enough, as JAX's transfer guard works
on its CPU backend too) and are skipped elsewhere; the rest run a
stand-in (`fakejax`) that mirrors what they check, so that CI without
JAX still covers the conversion, D2H refusals (which JAX's CPU backend
never makes: its arrays are host memory) and a JAX guard set for the
whole process.
"""

from __future__ import annotations

import os
import sys
import threading
import traceback
from typing import Any, Iterator

import numpy as np
import pytest

from profiler import guard
from profiler.guard import GuardSourceWarning, TransferGuardError, watchers
from profiler.guard.watchers import SOURCES, Frames
from profiler.sources.cupti.frames import FrameFilter, library_folders

from . import fakejax
from .kit import line_of, loaded_libraries

HERE = __file__
REFUSED = "INVALID_ARGUMENT: Disallowed host-to-device transfer: aval=ShapedArray(float32[8])"


def _is_jax_error(exc: BaseException | None) -> bool:
    """JAX's own runtime error (`jax.errors.JaxRuntimeError`; `jaxlib`'s `XlaRuntimeError` in older JAX)."""
    return isinstance(exc, RuntimeError) and type(exc).__name__ in ("JaxRuntimeError", "XlaRuntimeError")


def _levels(jax: Any) -> tuple[str | None, str | None]:
    return jax.config.jax_transfer_guard_host_to_device, jax.config.jax_transfer_guard_device_to_host


def _without_cupti(monkeypatch: pytest.MonkeyPatch) -> None:
    """CUPTI cannot start here (as on a CPU or TPU machine): what the guard says depends on JAX's guard alone."""
    def refuse() -> None:
        raise AssertionError("not asked: the problem is known")

    monkeypatch.setattr(SOURCES, "start_cupti", refuse)
    monkeypatch.setattr(SOURCES, "cupti_problem", "CUPTI needs an NVIDIA GPU")


# ------------------------------------------------------------------ the real JAX
@pytest.fixture
def jax() -> Iterator[Any]:
    jax = pytest.importorskip("jax")
    assert _levels(jax) == (None, None)
    yield jax
    assert _levels(jax) == (None, None), "JAX's guard is back as it was"


def test_real_jax_device_put_raises_at_the_line_with_its_bytes(jax: Any) -> None:
    x = np.ones(8, dtype=np.float32)
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers():
            assert _levels(jax) == ("disallow_explicit", "disallow_explicit")
            jax.device_put(x)  # marker: real device_put
    line = line_of(HERE, "# marker: real device_put")
    (v,) = caught.value.violations
    assert (v.kind, v.nbytes, v.site.line, v.source) == ("h2d", 32, line, "jax.transfer_guard")
    assert f"test_jax.py:{line} in test_real_jax_device_put_raises_at_the_line_with_its_bytes: " \
           f"`jax.device_put(x)  # marker: real device_put`: H2D copy of 32 B by jax ({REFUSED}" in str(caught.value)
    assert str(caught.value).endswith("forbidden by no_transfers(h2d=True, d2h=True, syncs=False, mode='raise')")
    cause = caught.value.__cause__
    assert _is_jax_error(cause), "JAX's own error is the cause"
    assert line in [f.lineno for f in traceback.extract_tb(cause.__traceback__) if f.filename == HERE]


def test_real_jax_uploads_a_python_scalar_an_operation_mixes_in(jax: Any) -> None:
    y = jax.device_put(np.ones(8, dtype=np.float32))
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers():
            _ = y * 2  # marker: scalar operand
    (v,) = caught.value.violations
    assert (v.kind, v.nbytes, v.site.line) == ("h2d", 4, line_of(HERE, "# marker: scalar operand"))
    assert "aval=ShapedArray(int32[], weak_type=True)" in v.call


def test_real_jax_passes_what_the_scope_allows(jax: Any) -> None:
    x = np.ones(8, dtype=np.float32)
    with guard.no_transfers(h2d=False):
        assert _levels(jax) == (None, "disallow_explicit")
        y = jax.device_put(x)
    with guard.no_transfers():
        with guard.allow(reason="upload the weights once"):
            assert _levels(jax) == ("allow", "allow")
            y = jax.device_put(x) * 2
        assert _levels(jax) == ("disallow_explicit", "disallow_explicit")
    for mode in ("log", "warn"):
        with guard.no_transfers(mode=mode):
            assert _levels(jax) == (None, None), f"{mode} leaves JAX's guard alone"
            jax.device_put(x)
    with guard.no_transfers(min_bytes=64):
        assert _levels(jax) == (None, None), "JAX's guard has no size threshold: left to CUPTI"
        _ = y * 2
    with guard.no_transfers(allow_scalars=True):
        assert _levels(jax) == ("disallow_explicit", None), "JAX's guard would refuse a one-element read"
    assert float(y[0]) == 2.0


def test_real_jax_guard_is_per_thread_like_the_scope(jax: Any) -> None:
    x = np.ones(8, dtype=np.float32)
    done: list[object] = []
    with guard.no_transfers():
        worker = threading.Thread(target=lambda: done.append(jax.device_put(x)))
        worker.start()
        worker.join(60)
    assert len(done) == 1, "another thread's upload is not refused"


def test_a_real_jax_guard_already_on_is_said_and_left_alone(jax: Any) -> None:
    with jax.transfer_guard("log"):
        with pytest.warns(GuardSourceWarning, match="jax.transfer_guard is on: JAX's transfers are left to it"):
            with guard.no_transfers():
                assert _levels(jax) == ("log", "log"), "the user's JAX guard decides"
                jax.device_put(np.ones(8, dtype=np.float32))


def test_real_jax_nested_scopes_the_innermost_decides_and_converts_once(jax: Any) -> None:
    x = np.ones(8, dtype=np.float32)
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers() as outer:
            with guard.no_transfers(h2d=False):
                assert _levels(jax) == ("allow", "disallow_explicit")
                jax.device_put(x)
            with guard.no_transfers(mode="log"):
                assert _levels(jax) == ("allow", "allow")
                jax.device_put(x)
            with guard.no_transfers(d2h=False) as inner:
                jax.device_put(x)  # marker: nested upload
    assert _is_jax_error(caught.value.__cause__), "converted once, by the inner scope"
    assert caught.value.violations[0].site.line == line_of(HERE, "# marker: nested upload")
    assert (len(inner.violations), len(outer.violations)) == (1, 0)


def test_a_refusal_by_the_users_own_jax_guard_stays_jaxs(jax: Any) -> None:
    with jax.transfer_guard("disallow"):  # implicit transfers refused, by the user's choice
        with pytest.warns(GuardSourceWarning, match="jax.transfer_guard is on"):
            with pytest.raises(RuntimeError, match="Disallowed host-to-device transfer") as caught:
                with guard.no_transfers():
                    jax.numpy.ones(3) + np.ones(3, dtype=np.float32)
    assert _is_jax_error(caught.value), "not made the guard's"


# ------------------------------------------------------------------- a stand-in
@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """`fakejax` is the `jax` module (a real JAX this process may have loaded is set aside for the test)."""
    monkeypatch.setitem(sys.modules, "jax", fakejax)
    folder = os.path.join(os.path.dirname(fakejax.__file__), "")
    monkeypatch.setattr(watchers, "FRAMES", Frames(FrameFilter(folders=(folder, *library_folders()))))
    yield fakejax
    assert _levels(fakejax) == (None, None), "JAX's guard is back as it was"


def test_raise_turns_jax_guard_on_and_its_refusal_into_the_guards_error(stand_in: Any) -> None:
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers():
            assert _levels(fakejax) == ("disallow_explicit", "disallow_explicit")
            fakejax.device_put(np.ones(8, dtype=np.float32))  # marker: device_put
    (v,) = caught.value.violations
    assert (v.kind, v.nbytes, v.site.line, v.source) == (
        "h2d", 32, line_of(HERE, "# marker: device_put"), "jax.transfer_guard")
    assert f"H2D copy of 32 B by jax ({REFUSED}, dst_sharding=" in str(caught.value)
    cause = caught.value.__cause__
    assert isinstance(cause, fakejax.JaxRuntimeError)
    assert line_of(HERE, "# marker: device_put") in [f.lineno for f in traceback.extract_tb(cause.__traceback__)]


def test_only_the_forbidden_directions_and_holes_let_jax_through(stand_in: Any) -> None:
    x = np.ones((2, 3), dtype=np.float64)
    with guard.no_transfers(h2d=False):
        fakejax.device_put(x)
        with pytest.raises(TransferGuardError) as caught:
            with guard.no_transfers(h2d=False, d2h=True):
                fakejax.to_host(x)  # marker: to_host
        (v,) = caught.value.violations
        assert (v.kind, v.nbytes, v.site.line) == ("d2h", 48, line_of(HERE, "# marker: to_host"))
        with guard.allow(reason="read the loss once"):
            fakejax.to_host(x)
    with guard.no_transfers(mode="log"):
        fakejax.device_put(x), fakejax.to_host(x)  # warn/log leave JAX's guard alone


def test_nested_scopes_the_innermost_decides_for_jax_and_converts_once(stand_in: Any) -> None:
    x = np.ones(4, dtype=np.float32)
    with pytest.raises(TransferGuardError) as caught:
        with guard.no_transfers() as outer:
            with guard.no_transfers(h2d=False):
                assert _levels(fakejax) == ("allow", "disallow_explicit")
                fakejax.device_put(x)
            with guard.no_transfers(mode="warn"):
                assert _levels(fakejax) == ("allow", "allow")
                fakejax.device_put(x), fakejax.to_host(x)
            with guard.no_transfers(h2d=False) as inner:
                fakejax.to_host(x)  # marker: nested read
    assert isinstance(caught.value.__cause__, fakejax.JaxRuntimeError), "converted once, by the inner scope"
    assert [(v.kind, v.nbytes, v.site.line) for v in caught.value.violations] == [
        ("d2h", 16, line_of(HERE, "# marker: nested read"))]
    assert (len(inner.violations), len(outer.violations)) == (1, 0)


def test_a_jax_guard_set_for_the_process_is_said_and_left_alone(stand_in: Any) -> None:
    fakejax.config.update("jax_transfer_guard_host_to_device", "log")
    try:
        with pytest.warns(GuardSourceWarning, match="jax.transfer_guard is on: JAX's transfers are left to it"):
            with guard.no_transfers():
                assert _levels(fakejax) == ("log", None), "the user's JAX guard decides"
                fakejax.device_put(np.ones(8))
        fakejax.config.update("jax_transfer_guard_host_to_device", "disallow_explicit")
        with pytest.raises(fakejax.JaxRuntimeError):  # the user's refusal is JAX's error, not the guard's
            with guard.no_transfers():
                fakejax.device_put(np.ones(8))
    finally:
        fakejax.config.update("jax_transfer_guard_host_to_device", None)


def test_without_cupti_a_raise_scope_guards_jax_through_its_own_guard(stand_in: Any,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    _without_cupti(monkeypatch)
    loaded_libraries(monkeypatch, "torch", jax=fakejax)
    with pytest.warns(GuardSourceWarning) as record:
        with guard.no_transfers():  # JAX's guard refuses what this scope forbids: only torch is unseen
            pass
        with guard.no_transfers(mode="log"):  # nothing refuses JAX's copies here
            pass
    assert [str(w.message) for w in record] == [
        "offload guard: the transfer guard sees only offload_core's copies here, not those of torch: "
        "CUPTI needs an NVIDIA GPU",
        "offload guard: the transfer guard sees only offload_core's copies here, not those of jax: "
        "CUPTI needs an NVIDIA GPU"], "torch was named already"
