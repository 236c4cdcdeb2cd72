"""What importing a module loads: the dependency rules of docs/design.md, checked two ways.

Each statement of `CASES` runs in a fresh interpreter and `sys.modules` is
inspected, which catches what third-party packages import in turn; the
import statements themselves are read too (tests/importgraph.py), which
catches imports of libraries CI does not install. The layer order of the
packages' own modules is tests/test_import_graph.py's.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .importgraph import edges, loaded_by

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
    "import profiler": ("textual", "libcst", "linter", "cupy", "offload_core", "IPython", "profiler.notebook"),
    "import profiler.cli": ("textual", "libcst", "linter", "cupy"),
    "import profiler.pytest_plugin": ("textual", "libcst", "linter", "cupy", "offload_core", "numpy"),
    # a trace loads, summarises, exports and gates without the offload_core runtime (a machine that only reads traces)
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
    "import linter.cli": ("textual", "profiler", "cupy", "numpy", "offload_core.settings", "offload_core.events",
                          "pygls", "lsprotocol"),
    # `offload-lint server` checks for pygls before anything imports it (the `lsp` extra is optional)
    "import linter.server": ("textual", "profiler", "cupy", "libcst", "pygls", "lsprotocol"),
    "import linter.run.engine, linter.run.runner, linter.outputs.formats, linter.outputs.applying": ("textual", "profiler", "cupy"),
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


# ------------------------------------------------------------------------------------------
# The same rules read from the import statements, which also see libraries CI does not install
# (CuPy, cupti-python, PyTorch, Numba): a stray `import cupy` fails here even where `import cupy`
# would fail at run time anyway and so never show up in `sys.modules`.

#: third-party package -> the only modules allowed to import it (prefixes); an empty tuple: none may
OWNERS = {
    "cupy": ("offload_core.backends.cupy_", "offload_core.suite", "profiler.sources.cupti"),
    "cupti": ("profiler.sources.cupti",),
    "torch": ("profiler.sources.collectives",),  # wraps torch.distributed once the program imported PyTorch
    "numba": (),
    "textual": ("profiler.tui",),
    "libcst": ("linter",),
    "IPython": ("profiler.notebook",),
    "pygls": ("linter.server",),
    "lsprotocol": ("linter.server",),
}


def test_only_their_owners_import_gpu_libraries_textual_and_libcst() -> None:
    offenders = [f"{e} imports {e.target.split('.')[0]}" for e in edges()
                 if e.target.split(".")[0] in OWNERS
                 and not e.source.startswith(OWNERS[e.target.split(".")[0]])]
    assert not offenders, "\n".join(offenders)


STATIC_CASES = {
    # module: what importing it must not run (third-party top-level names or internal modules, by prefix)
    "offload_core": ("numpy", "yaml", "offload_core.events", "offload_core.settings"),
    "offload_core.catalog": ("numpy", "offload_core.events", "offload_core.settings", "offload_core.backends"),
    "linter.cli": ("numpy", "textual", "profiler", "cupy", "offload_core.events", "offload_core.settings"),
    "linter.server": ("pygls", "lsprotocol", "libcst", "linter.server.app"),
    "profiler.sources.cupti": ("cupti", "cupy", "torch", "numba", "textual", *RUNTIME),
    "profiler.sources.cupti.tracer": ("cupti", "cupy", "torch", "numba", *RUNTIME),
    "profiler.sources.rocprof": ("cupy", "torch", "numba", *RUNTIME),
    "profiler.model": ("numpy", "textual", *RUNTIME),
    "profiler.cli": ("numpy", "textual", "libcst", "linter", "cupy", *RUNTIME),
    "profiler.pytest_plugin": ("numpy", "offload_core", "textual"),
}


@pytest.mark.parametrize("module", list(STATIC_CASES))
def test_what_a_module_loads_read_from_its_import_statements(module: str) -> None:
    loaded = loaded_by(module)
    leaked = sorted(m for m in loaded if m.startswith(STATIC_CASES[module]) and m not in (module,))
    assert not leaked, f"importing {module} runs imports of {leaked}"


def test_the_static_reading_sees_a_nested_gpu_import() -> None:
    """The checks above can fail: a deferred `import cupy` and a module-level `import torch` are found."""
    import ast

    from .importgraph import _Imports

    source = "import numpy as np\nimport torch.nn\ndef f():\n    import cupy.cuda.runtime as rt\n"
    visitor = _Imports("profiler.trace.bad", is_package=False)
    visitor.visit(ast.parse(source))
    assert [(n, deferred) for n, _, deferred, _ in visitor.found] == [
        ("numpy", False), ("torch.nn", False), ("cupy.cuda.runtime", True)]
