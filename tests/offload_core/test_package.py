"""`offload_core`'s lazy top level: every public name resolves to its submodule's object, on first use."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import offload_core
from offload_core.sites import Site

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", offload_core.__all__)
def test_every_public_name_is_its_submodule_object(name: str) -> None:
    home = offload_core._HOMES.get(name, name)
    expected = importlib.import_module(f"offload_core.{home or name}")
    if home is not None:
        expected = getattr(expected, name)
    assert getattr(offload_core, name) is expected
    assert name in dir(offload_core)


def test_the_documented_names_are_public() -> None:
    assert {"kernel", "RawKernel", "In", "Out", "InOut", "Owned", "offload", "region", "set_mode", "get_mode",
            "set_backend", "get_backend", "events", "AliasError", "BorrowError", "UseAfterMoveError",
            "DeviceMemoryError", "BackendError"} <= set(offload_core.__all__)


def test_region_stays_the_context_manager_once_its_submodule_is_imported() -> None:
    """`offload_core.region` is also a submodule; importing it must not replace the public name."""
    code = ("import offload_core.region, offload_core.suite\nimport offload_core\nfrom offload_core import region\n"
            "import sys\nassert region is offload_core.region is sys.modules['offload_core.region'].region, region\n"
            "assert isinstance(region, type)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_unknown_names_fail_as_for_any_module() -> None:
    with pytest.raises(AttributeError, match="module 'offload_core' has no attribute 'regoin'"):
        offload_core.regoin  # noqa: B018
    with pytest.raises(ImportError):
        exec("from offload_core import regoin")


def test_a_site_prints_as_messages_name_it() -> None:
    assert str(Site("app.py", 12, "step")) == "app.py:12 in step"
    assert Site("app.py", 12, "step") == Site("app.py", 12, "step", "", 1)
