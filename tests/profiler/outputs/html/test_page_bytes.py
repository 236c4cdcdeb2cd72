"""File names that are not UTF-8: a call site in `l\\xffop.py` or a trace named `t\\xfe.json` still gives a report.

Python hands such names over with their bad bytes as lone surrogates (`os.fsdecode`), which UTF-8 cannot
encode; the HTML page shows each bad byte as `\\xff` (the page is valid UTF-8 whatever the names), and the
text and JSON reports keep the name's own bytes, as `ls` prints them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from profiler.cli import main
from profiler.model import Meta, Record, Run, Site

from ...kit import env

pytestmark = pytest.mark.skipif(sys.platform == "win32" or sys.getfilesystemencoding() != "utf-8",
                                reason="needs file names of bytes (POSIX, UTF-8 file system encoding)")

SCRIPT = os.fsdecode(b"/w/l\xffop.py")
TRACE = os.fsdecode(b"t\xfe.json")


def trace(folder: Path) -> Path:
    meta = Meta(backend="numpy", device="host", mode="naive", started_at="2026-01-01T00:00:00+00:00", wall_ns=10_000,
                argv=(SCRIPT,), cwd="/w")
    site = Site(SCRIPT, 12, "main", "offload(k, x)", 5)
    records = tuple(Record(kind, i * 100, 50, 64, site=site, kernel="k", launch=i // 3, array=1, mode="naive")
                    for i, kind in enumerate(("h2d", "launch", "d2h") * 3))
    return Run(meta, records).save(folder / TRACE)


@pytest.mark.parametrize("command", ["report", "compare"])
def test_the_html_page_is_utf8_and_shows_the_bad_bytes(tmp_path: Path, command: str) -> None:
    path = str(trace(tmp_path))
    out = tmp_path / "page.html"
    argv = [command, path] + ([path] if command == "compare" else []) + ["--format", "html", "-o", str(out)]
    assert main(argv) == 0
    html = out.read_bytes().decode("utf-8")  # strict: every byte of the page is UTF-8
    assert "l\\xffop.py:12" in html and "t\\xfe.json" in html


def test_text_and_json_reports_keep_the_names_bytes(tmp_path: Path) -> None:
    path = str(trace(tmp_path))
    assert main(["report", path, "-o", str(tmp_path / "r.txt")]) == 0
    text = (tmp_path / "r.txt").read_bytes()
    assert b"l\xffop.py:12" in text and b"t\xfe.json" in text
    assert main(["report", path, "--format", "json", "-o", str(tmp_path / "r.json")]) == 0


@pytest.mark.parametrize("fmt", ["text", "html"])
def test_stdout_that_only_takes_utf8_gets_the_report(tmp_path: Path, fmt: str) -> None:
    trace(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "profiler", "report", TRACE, "--format", fmt], cwd=tmp_path,
                          env=env(PYTHONIOENCODING="utf-8:strict"), capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (b"l\\xffop.py:12" if fmt == "html" else b"l\xffop.py:12") in proc.stdout


def test_the_timeline_draws_with_the_bad_bytes_in_its_labels(tmp_path: Path) -> None:
    from ....browser import Browser, find

    found = find()
    if not isinstance(found, Browser):
        pytest.skip(f"no headless browser for the HTML report: {found}")
    from playwright.sync_api import sync_playwright

    path = str(trace(tmp_path))
    out = tmp_path / "page.html"
    assert main(["report", path, "--format", "html", "-o", str(out)]) == 0
    with sync_playwright() as p:
        browser = p.chromium.launch(**found.launch_options())  # type: ignore[arg-type]
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(out.as_uri())
            page.wait_for_selector("html[data-timeline=drawn]", timeout=30_000)
            labels = page.evaluate("JSON.parse(document.getElementById('timeline-data').textContent)[0]")
            assert errors == [] and "l\\xffop.py:12 in main" in labels["sites"]
        finally:
            browser.close()
