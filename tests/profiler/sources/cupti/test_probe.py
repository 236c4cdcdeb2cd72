"""What `--source cupti` says when cupti-python or the GPU is missing."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import pytest

from profiler.errors import ProfilerError
from profiler.sources.cupti import probe


class FakeDriver:
    """libcuda's five entry points the probe calls, with chosen results."""

    def __init__(self, init: int = 0, count: int = 1, name: bytes = b"NVIDIA H200", version: int = 13000) -> None:
        self.init, self.count, self.name, self.version = init, count, name, version

    def cuInit(self, flags: int) -> int:
        return self.init

    def cuDeviceGetCount(self, out) -> int:  # type: ignore[no-untyped-def]
        ctypes.cast(out, ctypes.POINTER(ctypes.c_int))[0] = self.count
        return 0

    def cuDeviceGet(self, out, ordinal: int) -> int:  # type: ignore[no-untyped-def]
        return 0

    def cuDeviceGetName(self, buf, size: int, dev) -> int:  # type: ignore[no-untyped-def]
        ctypes.memmove(buf, self.name + b"\0", len(self.name) + 1)
        return 0

    def cuDriverGetVersion(self, out) -> int:  # type: ignore[no-untyped-def]
        ctypes.cast(out, ctypes.POINTER(ctypes.c_int))[0] = self.version
        return 0


def test_driver_answers() -> None:
    ok = probe.query_driver(FakeDriver(count=2), ("libcuda.so.1",))  # type: ignore[arg-type]
    assert (ok.device, ok.version, ok.problem) == ("NVIDIA H200 (+1 more)", "13.0", "")
    assert "no CUDA device" in probe.query_driver(FakeDriver(init=100), ("x",)).problem  # type: ignore[arg-type]
    assert "CUDA error 999" in probe.query_driver(FakeDriver(init=999), ("x",)).problem  # type: ignore[arg-type]
    assert "no CUDA device" in probe.query_driver(FakeDriver(count=0), ("x",)).problem  # type: ignore[arg-type]
    missing = probe.query_driver(None, ("libcuda.so.1",)).problem
    assert "libcuda.so.1 not found" in missing and "rocprofv3" in missing


def test_load_driver_tries_each_name() -> None:
    tried = []

    def loader(name: str) -> ctypes.CDLL:
        tried.append(name)
        raise OSError(name)

    assert probe.load_driver(("a.so", "b.so"), loader) is None and tried == ["a.so", "b.so"]


def test_an_incomplete_cupti_python_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "cupti"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "cupti.py").write_text("def activity_enable(kind): pass\n")
    saved = {n: sys.modules.pop(n) for n in ("cupti", "cupti.cupti") if n in sys.modules}
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        module, why = probe.import_cupti()
    finally:  # the real cupti-python, where installed, must be what later tests import
        for n in ("cupti", "cupti.cupti"):
            sys.modules.pop(n, None)
        sys.modules.update(saved)
    assert module is None and "lacks activity_register_callbacks" in why and "12.6" in why


def test_require_names_everything_missing_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe, "import_cupti", lambda: (None, "No module named 'cupti'"))
    monkeypatch.setattr(probe, "load_driver", lambda: None)
    with pytest.raises(ProfilerError) as err:
        probe.require()
    text = str(err.value)
    assert "\n" not in text and "cupti extra" in text and "pip install 'offload-guard[cupti]'" in text
    assert "an NVIDIA GPU: " in text
    monkeypatch.setattr(probe, "load_driver", lambda: FakeDriver())
    with pytest.raises(ProfilerError, match=r"needs the cupti extra .*cupti'$"):
        probe.require()
    fake = object()
    monkeypatch.setattr(probe, "import_cupti", lambda: (fake, ""))
    module, driver = probe.require()
    assert module is fake and driver.device == "NVIDIA H200"
    monkeypatch.setattr(probe, "load_driver", lambda: FakeDriver(init=100))
    with pytest.raises(ProfilerError, match=r"^--source cupti needs an NVIDIA GPU: the NVIDIA driver reports no CUDA"):
        probe.require()


def _versions(table: dict[str, str]):  # type: ignore[no-untyped-def]
    def version(name: str) -> str:
        if name not in table:
            raise probe.metadata.PackageNotFoundError(name)
        return table[name]
    return version


def test_a_cupti_python_newer_than_libcupti_is_named_with_the_release_to_install() -> None:
    said = probe.version_mismatch(_versions({"cupti-python": "13.4.0", "nvidia-cuda-cupti": "13.0.85"}))
    assert said == ("cupti-python 13.4.0 reads the records of CUPTI 13.4, but libcupti is nvidia-cuda-cupti 13.0.85: "
                    "pip install 'cupti-python==13.0.*' (or upgrade nvidia-cuda-cupti to match)")


def test_matching_releases_or_a_toolkit_libcupti_say_nothing() -> None:
    assert probe.version_mismatch(_versions({"cupti-python": "13.0.1", "nvidia-cuda-cupti": "13.0.85"})) == ""
    assert probe.version_mismatch(_versions({"cupti-python": "13.4.0"})) == ""  # libcupti from the CUDA toolkit
