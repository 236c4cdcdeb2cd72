"""Lint one file: decode, prefilter, parse once, index once, run every enabled check.

"Parse once" means one LibCST parse, the tree every check shares. CPython's
C parser vets the text first (see `vet`): that costs a tenth of the LibCST
parse and is what makes hostile input (nesting thousands deep) a finding
instead of a crash of LibCST's native parser.

This is the unit of work a worker process runs and the cache stores, so it
takes plain inputs (bytes, names, the run's settings) and returns a
FileResult. Nothing a file contains can make it raise: undecodable bytes
become OFF902, a parse failure OFF901, and an exception inside a check (a
bug of ours, a RecursionError included: CPython's parser has already
accepted the file, so the fault is the linter's, not the code's) becomes
the result's `error`, which the CLI reports with the file's path and turns
into exit code 2 without losing the other files' findings.

Two things are decided before any parsing. A file whose code is larger
than OFF903's `max-bytes` is not parsed at all: LibCST's time and memory
grow with the file (a 10 MB file took minutes and gigabytes), and one
generated file must not stall a run or a pre-commit hook. And a notebook
arrives as the Python text of its code cells with the map of its cells
(`cells`): every position the run reports is then turned into a cell and a
line of that cell, messages' "line N" included.
"""

from __future__ import annotations

import ast
import gc
import sys
import traceback
from dataclasses import replace
from typing import Mapping

import libcst as cst

from .. import interrupt
from ..analysis.apis import Api, ApiIndex
from ..analysis.callgraph import Hot
from ..analysis.project import KernelIndex
from ..analysis.scopes import ModuleIndex
from ..analysis.semantics import Semantics
from ..analysis.walk import build_index
from ..checks.file import CheckedFile
from ..checks.registry import checks_for
from ..config.rules import RuleSettings, diagnostic
from ..findings import FileResult, Finding
from ..inputs import suppressions
from ..inputs.notebooks import CellMap
from ..inputs.source import Decoded, DecodeError, decode
from .handed import told as told_params
from .helpers import told as told_helpers

#: the codes the engine reports itself: a file that cannot be read, parsed, or is too large never reaches a check
DIAGNOSTICS = ("OFF901", "OFF902", "OFF903")


def _syntax_error(settings: RuleSettings, text: str, line: int, column: int, message: str) -> tuple[Finding, ...]:
    lines = text.splitlines() or [""]
    line = max(1, min(line, len(lines)))
    column = max(1, min(column, len(lines[line - 1]) or 1))
    return diagnostic(settings, "OFF901", line, column, message.replace("\n", " "))


def vet(text: str) -> tuple[int, int, str] | None:
    """Python's own parser first: (line, column, message) if it rejects the text, else None.

    It is C and about ten times faster than LibCST, gives exact positions and
    CPython's wording for syntax errors, and, above all, bounds what reaches
    LibCST: its native parser overflows the stack (a crash no `except` can
    catch) or runs for minutes on inputs nested thousands deep, which CPython
    refuses with a RecursionError or "too many nested parentheses".
    """
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return exc.lineno or 1, exc.offset or 1, exc.msg
    except (RecursionError, MemoryError):
        return 1, 1, "too deeply nested for Python's parser"
    except ValueError as exc:  # null bytes
        return 1, 1, str(exc)
    return None


def _newer_python(text: str, message: str) -> cst.Module | None:
    """LibCST's tree of `text` if it is valid Python newer than this interpreter's (`type Alias = ...` on 3.11).

    LibCST's grammar runs ahead of the interpreter the linter may run on, so
    a file that only CPython rejects is parsed by LibCST and linted. Text
    CPython refused for its nesting or size never reaches LibCST (the reason
    `vet` exists); text LibCST rejects too keeps CPython's message.
    """
    if sys.version_info >= _LIBCST_PYTHON or any(word in message for word in ("nested", "levels", "too many")):
        return None
    try:
        return cst.parse_module(text)
    except Exception:
        interrupt.check()  # or Ctrl-C, arriving inside the native parser
        return None


#: the newest Python whose grammar LibCST parses (1.x: 3.13); from that version on CPython's verdict stands alone
_LIBCST_PYTHON = (3, 14)


def libcst_version() -> str:
    try:
        from importlib.metadata import version

        return version("libcst")
    except Exception:
        return "?"


def lint_text(
    text: str,
    settings: RuleSettings,
    apis: ApiIndex,
    kernels: KernelIndex | None = None,
    *,
    path: str = "<string>",
    module_name: str = "__main__",
    is_package: bool = False,
    prefilter: bool = True,
    cells: CellMap | None = None,
    hot: Mapping[str, Hot] | None = None,
    helpers: Mapping[str, Api] | None = None,
    params: Mapping[str, Mapping[str, str]] | None = None,
) -> FileResult:
    """Lint one file's text; for a notebook, `text` is its cells' Python and `cells` their map.

    `hot` is what the project knows of functions other files run once per
    iteration (the runner's call graph); the file adds what it sees itself.
    `helpers`: the project's copy helpers this file calls, by the name it
    calls them (`run.helpers`), added to its catalog.
    `params`: what the project's other files hand this file's functions
    (`run.handed`): function -> parameter -> the library of its device arrays.

    Python's cyclic garbage collector is paused meanwhile: a LibCST tree is
    hundreds of thousands of objects, none of them garbage while the file is
    linted, and the collector's repeated walks over them were a fifth to two
    fifths of the CPU time on large files (docs/linter.md, "Size").
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        if helpers:
            apis = replace(apis, calls={**apis.calls, **helpers})
        result = _lint(text, settings, apis, kernels, path, module_name, is_package, prefilter, cells, hot, params)
        if helpers or params:
            result = replace(result, told=result.told + told_helpers(helpers) + told_params(params))
    finally:
        if collecting:
            gc.enable()
    return cells.locate(result) if cells is not None else result


def too_large(text: str, settings: RuleSettings) -> tuple[Finding, ...] | None:
    """OFF903 (or nothing, when it is not selected) for code over the `max-bytes` limit; None under it.

    The limit holds whether or not OFF903 is selected: ignoring the rule
    hides the finding, it does not make a huge file cheap to parse.
    """
    limit = int(settings.options.get("OFF903", {}).get("max-bytes", 0) or 0)
    if limit <= 0 or len(text) * 4 <= limit:  # a character is at most four bytes of UTF-8
        return None
    size = len(text) if len(text) > limit else len(text.encode("utf-8", "surrogatepass"))
    if size <= limit:
        return None
    return diagnostic(settings, "OFF903", 1, 1, f"{_bytes(size)} of code is over the limit of {_bytes(limit)}")


def _bytes(n: int) -> str:
    if n < 10_000:
        return f"{n} bytes"
    if n < 10_000_000:
        return f"{n / 1000:.0f} kB"
    return f"{n / 1_000_000:.1f} MB"


def _lint(
    text: str,
    settings: RuleSettings,
    apis: ApiIndex,
    kernels: KernelIndex | None,
    path: str,
    module_name: str,
    is_package: bool,
    prefilter: bool,
    cells: CellMap | None,
    hot: Mapping[str, Hot] | None,
    params: Mapping[str, Mapping[str, str]] | None = None,
) -> FileResult:
    if prefilter and not apis.mentions_api(text):
        return FileResult(path, skipped=True)
    oversized = too_large(text, settings)
    if oversized is not None:
        return FileResult(path, oversized)
    rejected = vet(text)
    module = _newer_python(text, rejected[2]) if rejected is not None else None
    if rejected is not None and module is None:
        return FileResult(path, _syntax_error(settings, text, *rejected))
    try:
        module = module if module is not None else cst.parse_module(text)
    except Exception as exc:  # valid Python that LibCST cannot parse (newer syntax)
        interrupt.check()  # or Ctrl-C, arriving inside the native parser
        line = getattr(exc, "raw_line", 1) or 1
        column = (getattr(exc, "raw_column", 0) or 0) + 1
        message = str(getattr(exc, "message", "") or exc).splitlines()[0] if str(exc) else type(exc).__name__
        message = f"{message} (LibCST {libcst_version()} does not support this syntax)"
        return FileResult(path, _syntax_error(settings, text, line, column, message))
    try:
        index = build_index(module, module_name, is_package)
        sem = Semantics(index, apis, kernels or KernelIndex(), path, hot, params)
        file = CheckedFile(text, index, sem, settings, cells.label if cells is not None else None)
        for fn in checks_for(settings.enabled):
            fn(file)
        exports = sem.kernels.exports()
        summary = sem.functions.summary()
        told = sem.functions.told()
    except Exception as exc:  # a bug in a check (a RecursionError too): the tool's fault, never OFF901
        interrupt.check()
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return FileResult(path, error=f"{type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})")
    findings = suppressions.apply(file.findings, text.splitlines()) if file.findings else []
    findings.sort(key=lambda f: f.sort_key)
    needs = tuple(sorted(sem.kernels.needs.items(), key=lambda kv: kv[0]))
    return FileResult(path, tuple(findings), exports, needs, summary=summary, told=told, tests=_tests(index))


def _tests(index: ModuleIndex) -> bool:
    """Does the module test something: `test_*` functions, `Test*` or `*Test` classes, pytest, unittest or absl's
    testing imported (`class VqvaeTest(parameterized.TestCase)` in `vqvae_test.py`)?"""
    if any(q.split(".")[0] in ("pytest", "unittest") or q.startswith("absl.testing") for q in index.aliases.values()):
        return True
    module = index.scopes[0]
    return any((name.startswith(("test_", "Test")) or name.endswith(("Test", "Tests")))
               and any(how == "def" for how, _ in values) for name, values in module.assigns.items())


def lint_bytes(
    data: bytes,
    settings: RuleSettings,
    apis: ApiIndex,
    kernels: KernelIndex | None = None,
    **kwargs: object,
) -> tuple[FileResult, Decoded | None]:
    path = str(kwargs.get("path", "<string>"))
    try:
        decoded = decode(data)
    except DecodeError as exc:
        return FileResult(path, diagnostic(settings, "OFF902", 1, 1, f"cannot decode: {exc}")), None
    return lint_text(decoded.text, settings, apis, kernels, **kwargs), decoded  # type: ignore[arg-type]
