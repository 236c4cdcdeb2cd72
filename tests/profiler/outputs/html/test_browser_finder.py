"""tests/browser.py: where no browser can be had, the reason the HTML tests skip with names what is missing."""

from __future__ import annotations

from pathlib import Path

import pytest

from ....browser import ARGS, Browser, find


def test_without_any_chromium_the_reason_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("playwright", reason="Playwright is not installed (pip install -e '.[test]')")
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path / "none"))  # Playwright's own build: absent
    monkeypatch.setenv("PATH", str(tmp_path))  # no system Chromium either
    found = find()
    assert isinstance(found, str)
    assert found.startswith("no Chromium: `python -m playwright install chromium` could not download one")
    assert "apt-get install chromium" in found


def test_a_system_chromium_is_launched_by_path_with_the_headless_flags(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("playwright", reason="Playwright is not installed (pip install -e '.[test]')")
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path / "none"))
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find() == Browser(str(fake))
    options = Browser(str(fake)).launch_options()
    assert options["executable_path"] == str(fake) and options["args"] == list(ARGS) and options["headless"] is True
    assert "executable_path" not in Browser(None).launch_options()
