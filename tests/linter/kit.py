"""Helpers for the linter tests: lint a snippet in-process, run the real command in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Iterable, Mapping

from offload_core.catalog import load_catalog

from linter.analysis.apis import ApiIndex
from linter.config.rules import settings_for
from linter.run.engine import lint_text
from linter.findings import FileResult
from linter.analysis.project import KernelIndex

CATALOG = load_catalog()
APIS = ApiIndex.from_files(CATALOG.apis)
ROOT = Path(__file__).resolve().parents[2]
DEFAULT = frozenset(c for c, r in CATALOG.rules.items() if r.kind == "static" and r.default_enabled)


def lint(
    code: str,
    select: Iterable[str] | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
    kernels: KernelIndex | None = None,
    module_name: str = "__main__",
    prefilter: bool = True,
) -> FileResult:
    enabled = frozenset(select) if select is not None else DEFAULT
    settings = settings_for(CATALOG.rules, enabled, options)
    return lint_text(textwrap.dedent(code), settings, APIS, kernels, module_name=module_name, prefilter=prefilter)


def codes(code: str, **kwargs: Any) -> list[tuple[str, int, int]]:
    result = lint(code, **kwargs)
    assert result.error is None, result.error
    return [(f.code, f.line, f.column) for f in result.findings if not f.suppressed]


def run_cli(*args: str, cwd: Path, env: Mapping[str, str] | None = None, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("OFFLOAD_", "PRE_COMMIT"))}
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "linter", *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout
    )
