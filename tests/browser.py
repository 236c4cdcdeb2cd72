"""A headless Chromium for the HTML report's tests and benchmark: found, or installed by `make test`, or a reason.

Playwright drives the browser. It prefers the Chromium build Playwright
downloads itself (`python -m playwright install chromium`); where that
download cannot be reached (a closed network) a system Chromium serves
as well, which `make test` installs from the distribution's packages when
it runs as root on Debian or Ubuntu (`apt-get install chromium`), saying
so on one line before it does (a package of the system is the user's to
know about). When
neither can be had, `find()` says why in one line and the tests skip with
that line, so a skipped browser test always names what was missing.

    python tests/browser.py install   # what `make test` runs first: install one if none is there (never fails)
    python tests/browser.py           # which browser the tests would use, or why none
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Callable

#: a system Chromium's names, by distribution
SYSTEM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: flags for a headless run on a machine with no network, GPU or sandbox (root in a container)
ARGS = ("--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage")


@dataclass(frozen=True)
class Browser:
    """How to launch the browser: `executable` None means Playwright's own build."""

    executable: str | None
    args: tuple[str, ...] = field(default=ARGS)

    def launch_options(self) -> dict[str, object]:
        options: dict[str, object] = {"args": list(self.args), "headless": True}
        if self.executable is not None:
            options["executable_path"] = self.executable
        return options

    def describe(self) -> str:
        return self.executable or "Playwright's Chromium"


def _own_chromium() -> str | None:
    """Playwright's downloaded Chromium, if it is on disk."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        path = p.chromium.executable_path
    return path if path and os.path.exists(path) else None


def _system_chromium() -> str | None:
    for name in SYSTEM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def find() -> Browser | str:
    """The browser to use, or one line saying why there is none."""
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install -e '.[test]' installs it)"
    try:
        if _own_chromium():
            return Browser(None)
    except Exception as exc:  # a broken driver must not stop the suite: the tests skip with the reason
        return f"Playwright cannot start its driver ({type(exc).__name__}: {exc})"
    system = _system_chromium()
    if system:
        return Browser(system)
    return ("no Chromium: `python -m playwright install chromium` could not download one and no system Chromium "
            "is installed (`apt-get install chromium` as root, or run `python tests/browser.py install`)")


def install(say: Callable[[str], None] = print) -> str:
    """Install a Chromium if none is found: Playwright's download first, then the system's package (as root).

    Before it installs a package of the system, `say` is given one line
    saying which and how, so that `make test` never changes the machine
    without a word.
    """
    found = find()
    if isinstance(found, Browser):
        return f"browser for the HTML tests: {found.describe()}"
    if found.startswith("Playwright is not installed"):
        return found
    tried = []
    done = subprocess.run([sys.executable, "-m", "playwright", "install", "chromium"], capture_output=True, text=True,
                          timeout=600, check=False)
    tried.append(f"playwright install chromium exited {done.returncode}")
    apt = shutil.which("apt-get")
    if done.returncode != 0 and apt and os.geteuid() == 0:
        say("tests/browser.py: Playwright's Chromium could not be downloaded; installing the system package "
            "chromium as root (apt-get update; apt-get install chromium) for the HTML report's tests")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for cmd in ([apt, "update", "-qq"], [apt, "install", "-y", "-qq", "--no-install-recommends", "chromium"]):
            step = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env, check=False)
            tried.append(f"{' '.join(cmd[1:3])} exited {step.returncode}")
            if step.returncode != 0:
                break
    found = find()
    if isinstance(found, Browser):
        return f"browser for the HTML tests: {found.describe()} (installed: {'; '.join(tried)})"
    return f"no browser for the HTML tests, they will skip ({'; '.join(tried)})"


if __name__ == "__main__":
    if sys.argv[1:] == ["install"]:
        try:
            print(install(say=lambda line: print(line, flush=True)))
        except (OSError, subprocess.SubprocessError) as exc:
            print(f"no browser for the HTML tests, they will skip ({exc})")
    else:
        found = find()
        print(found.describe() if isinstance(found, Browser) else found)
