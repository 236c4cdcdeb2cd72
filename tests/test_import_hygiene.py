"""The dependency rules of DESIGN.md, checked on the real import graph in fresh interpreters.

A static import graph cannot tell a module-level import from a deferred one,
so each statement runs in a subprocess and `sys.modules` is inspected.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: the offload_core runtime (its package, `offload_core.sites` and the catalog load without it)
RUNTIME = ("offload_core.events", "offload_core.settings", "offload_core.launch", "offload_core.backends")

CASES = {
    # statement: modules that must not be loaded afterwards
    "import offload_core": ("textual", "libcst", "linter", "profiler", "cupy", "yaml"),
    # the catalog loader (and the other runtime-free modules) load without the runtime and NumPy
    "import offload_core.catalog, offload_core.sites": (
        "textual", "libcst", "linter", "profiler", "cupy", "numpy", "offload_core.settings"),
    "import offload_core.demo": ("textual", "libcst", "linter", "profiler", "cupy"),
    "import offload_core, numpy as np; offload_core.set_backend('numpy'); "
    "from offload_core import In, kernel, offload\n"
    "@kernel\ndef k(x: In) -> None: pass\noffload(k, np.ones(3))": ("textual", "libcst", "linter", "profiler", "cupy"),
    "import offload_core.suite": ("textual", "libcst", "linter", "profiler", "cupy"),
    "import offload_core.suite.cli": ("textual", "libcst", "linter", "profiler", "cupy"),
    "import offload_core; offload_core.set_backend('numpy')\n"
    "from offload_core.suite import measure, run_suite, select\n"
    "run_suite(['TRIAD', 'DOT'], size_factor=0.001, reps=2)\n"
    "measure(select(['ADD']), size_factor=0.001, reps=1, passes=1)": ("textual", "libcst", "linter", "profiler", "cupy"),
    "import linter": ("textual", "profiler", "cupy"),
    "import profiler": ("textual", "libcst", "linter", "cupy", "offload_core"),
    "import profiler.cli": ("textual", "libcst", "linter", "cupy"),
    "import profiler.pytest_plugin": ("textual", "libcst", "linter", "cupy", "offload_core", "numpy"),
    # a trace loads, summarises, exports and gates without offload_core (e.g. on a machine that only reads traces)
    "import profiler.model, profiler.analysis.summary, profiler.outputs.chrome, profiler.outputs.gate, "
    "profiler.trace.tracefile": (
        "textual", "libcst", "linter", "cupy", *RUNTIME),
    "from profiler.cli import build_parser; build_parser()": ("textual", "libcst", "linter", "cupy"),
    # the TUI's data layer and its CLI commands load Textual only when an app starts
    "import profiler.tui, profiler.tui.session, profiler.tui.grid, profiler.tui.tables, profiler.tui.headline, "
    "profiler.commands, profiler.sources.suite, profiler.trace.columns, profiler.analysis.launches": (
        "textual", "libcst", "linter", "cupy"),
    "from profiler.model import Run; Run.load('tests/data/stencil.naive.json').records[0]": (
        "textual", "libcst", "linter", "cupy", *RUNTIME),
    "import profiler.tui.app": ("libcst", "linter", "cupy"),
    "from profiler.sources.recorder import Recorder; from profiler.analysis.detectors import detect; "
    "from profiler.sources import calibrate, runner; from profiler.outputs import baseline, budget; "
    "from profiler.trace import link": ("textual", "libcst", "linter", "cupy"),
    # the CUPTI source imports cupti-python only when a recording starts, and reads traces without offload_core
    "import profiler.sources.cupti, profiler.sources.rocprof\n"
    "from profiler.sources.cupti import convert, tracer, frames, apis, probe": (
        "textual", "libcst", "linter", "cupy", "cupti", "torch", "numba", *RUNTIME),
    # every `offload-lint` run: no NumPy, no offload_core runtime
    "import linter.cli": ("textual", "profiler", "cupy", "numpy", "offload_core.settings", "offload_core.events"),
    "import linter.engine, linter.runner, linter.reporters, linter.fixing": ("textual", "profiler", "cupy"),
    "import contextlib, io, linter.cli  # `offload-lint rules` answers without LibCST\n"
    "with contextlib.redirect_stdout(io.StringIO()): linter.cli.main(['rules'])": ("textual", "profiler", "cupy", "libcst"),
}


@pytest.mark.parametrize("statement", list(CASES), ids=[s.split("\n")[0][:60] for s in CASES])
def test_imports_respect_the_dependency_direction(statement: str) -> None:
    forbidden = CASES[statement]
    code = f"{statement}\nimport sys\nprint(','.join(m for m in {forbidden!r} if m in sys.modules))\n"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    leaked = [m for m in proc.stdout.strip().split(",") if m]
    assert not leaked, f"{statement!r} loaded {leaked}"


def test_only_profiler_tui_imports_textual() -> None:
    offenders = []
    for package in ("offload_core", "linter", "profiler"):
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            for name in files:
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, ROOT)
                if not name.endswith(".py") or rel.startswith(os.path.join("profiler", "tui") + os.sep):
                    continue
                with open(path, encoding="utf-8") as fh:
                    offenders += [f"{rel}: {line.strip()}" for line in fh
                                  if line.strip().startswith(("import textual", "from textual"))]
    assert not offenders, offenders


def test_only_the_cupy_backend_imports_cupy() -> None:
    """Source check to back up the runtime one (CI has no CuPy, so it cannot see a stray import)."""
    offenders = []
    for package in ("offload_core", "linter", "profiler"):
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            for name in files:
                if not name.endswith(".py"):
                    continue
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, ROOT)
                allowed = rel.startswith(os.path.join("offload_core", "backends", "cupy_")) or rel.startswith(
                    os.path.join("offload_core", "suite")
                ) or rel.startswith(os.path.join("profiler", "sources", "cupti"))
                with open(path, encoding="utf-8") as fh:
                    for line in fh:
                        stripped = line.strip()
                        if stripped.startswith(("import cupy", "from cupy")) and not allowed:
                            offenders.append(f"{rel}: {stripped}")
    assert not offenders, offenders
