"""The post-import hook: a callback once, right after the module's own code ran, the real loader put back."""

from __future__ import annotations

from pathlib import Path

import pytest

from profiler.sources.postimport import PostImport


def test_post_import_fires_once_after_the_module_ran(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    (tmp_path / "gpu_lib_stand_in.py").write_text("LOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[tuple[str, bool]] = []
    hook = PostImport(["gpu_lib_stand_in"], lambda name: seen.append((name, sys.modules[name].LOADED))).install()
    try:
        module = importlib.import_module("gpu_lib_stand_in")
        importlib.reload(module)
        assert seen == [("gpu_lib_stand_in", True)], "once, and after the module's own code"
        assert hook not in sys.meta_path and module.__loader__.__class__.__name__ == "SourceFileLoader"
        assert module.__spec__ is not None and module.__spec__.loader is module.__loader__
    finally:
        hook.remove()
        sys.modules.pop("gpu_lib_stand_in", None)
