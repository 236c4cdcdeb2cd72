"""`make test` as root: tests/browser.py says, on one line and before it runs, that it installs a system package."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from .... import browser


def test_a_system_package_is_announced_before_it_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    happened: list[str] = []

    def run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        happened.append("ran " + " ".join(cmd[1:3]))
        failed = "playwright" in cmd  # Playwright's own download cannot be reached
        return subprocess.CompletedProcess(cmd, 1 if failed else 0, "", "")

    monkeypatch.setattr(browser, "find", lambda: "no Chromium: (none here)")
    monkeypatch.setattr(browser.subprocess, "run", run)
    monkeypatch.setattr(browser.shutil, "which", lambda name: "/usr/bin/apt-get" if name == "apt-get" else None)
    monkeypatch.setattr(browser.os, "geteuid", lambda: 0)
    result = browser.install(say=lambda line: happened.append("said " + line))
    said = [h for h in happened if h.startswith("said ")]
    assert len(said) == 1 and "\n" not in said[0], happened
    assert "apt-get install" in said[0] and "chromium" in said[0] and "as root" in said[0], said
    first_apt = next(i for i, h in enumerate(happened) if h.startswith("ran update") or h.startswith("ran install"))
    assert happened.index(said[0]) < first_apt, "said before apt-get runs"
    assert result.startswith("no browser for the HTML tests")


def test_nothing_is_said_when_playwrights_download_works(monkeypatch: pytest.MonkeyPatch) -> None:
    happened: list[str] = []
    monkeypatch.setattr(browser, "find", lambda: "no Chromium: (none here)")
    monkeypatch.setattr(browser.subprocess, "run",
                        lambda cmd, **kw: happened.append(" ".join(cmd)) or subprocess.CompletedProcess(cmd, 0, "", ""))
    monkeypatch.setattr(browser.os, "geteuid", lambda: 0)
    browser.install(say=lambda line: happened.append("said " + line))
    assert not [h for h in happened if h.startswith("said ")] and not [h for h in happened if "apt-get" in h]
