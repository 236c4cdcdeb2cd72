"""The project's import graph, read statically from the source (ast), for the import-graph and hygiene tests.

Every `import` and `from ... import` statement of the three packages is an
edge, wherever it stands: at module level, deferred inside a function,
or under `if TYPE_CHECKING:`. A deferred import still makes the importing
module depend on the imported one, and a type-only one still ties their
designs together, so all three count for circles and for the layer
order. Each edge says which it is, so that checks of what a module loads
when it is imported (`loaded_by`) can follow module-level edges only.
Reading the source, rather than importing it, also sees imports of
libraries that are not installed (CuPy, cupti-python, PyTorch, Numba on
CI).
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("offload_core", "linter", "profiler")


@dataclass(frozen=True)
class Edge:
    """`source` imports `target` at `line`; `deferred`: inside a function; `type_only`: under TYPE_CHECKING."""

    source: str
    target: str
    line: int
    deferred: bool
    type_only: bool

    @property
    def at_import(self) -> bool:
        """Whether importing `source` runs this import."""
        return not (self.deferred or self.type_only)

    def __str__(self) -> str:
        how = " (deferred)" if self.deferred else " (type only)" if self.type_only else ""
        return f"{self.source} -> {self.target} at line {self.line}{how}"


def module_files() -> dict[str, Path]:
    """Module name -> file, for every module of the three packages."""
    out = {}
    for package in PACKAGES:
        for folder, _, files in os.walk(ROOT / package):
            for name in files:
                if name.endswith(".py"):
                    path = Path(folder) / name
                    parts = list(path.relative_to(ROOT).with_suffix("").parts)
                    if parts[-1] == "__init__":
                        parts.pop()
                    out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


class _Imports(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool) -> None:
        self.module = module
        self.package = module if is_package else module.rpartition(".")[0]
        self.found: list[tuple[str, int, bool, bool]] = []  # (name, line, deferred, type_only)
        self._depth = 0
        self._type_only = 0

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._depth += 1
        self.generic_visit(node)
        self._depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test):
            self._type_only += 1
            for child in node.body:
                self.visit(child)
            self._type_only -= 1
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def _add(self, name: str, line: int) -> None:
        self.found.append((name, line, self._depth > 0, self._type_only > 0))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".")
            base = base[: len(base) - (node.level - 1)]
            module = ".".join(base + ([node.module] if node.module else []))
        else:
            module = node.module or ""
        for alias in node.names:
            # `from pkg import name` imports the submodule pkg.name when there is one
            self._add(f"{module}.{alias.name}\0{module}", node.lineno)


@cache
def edges() -> tuple[Edge, ...]:
    """Every import statement of the three packages, internal or not."""
    files = module_files()
    out = []
    for module, path in sorted(files.items()):
        visitor = _Imports(module, path.name == "__init__.py")
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        for name, line, deferred, type_only in visitor.found:
            if "\0" in name:
                candidate, parent = name.split("\0")
                name = candidate if candidate in files else parent
            out.append(Edge(module, name, line, deferred, type_only))
    return tuple(out)


def internal_edges() -> tuple[Edge, ...]:
    """The edges between modules of the three packages (self-imports of a package's own names left out)."""
    files = module_files()
    return tuple(e for e in edges() if e.target in files and e.target != e.source)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def loaded_by(module: str) -> set[str]:
    """Every module (internal or third-party top-level name) that importing `module` runs, transitively.

    Follows module-level edges only, and the implicit import of each
    module's parent packages.
    """
    files = module_files()
    at_import: dict[str, list[str]] = {}
    for e in edges():
        if e.at_import:
            at_import.setdefault(e.source, []).append(e.target)
    seen: set[str] = set()
    todo = [module]
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        parts = m.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # parent packages run first
        if m in files:
            todo += at_import.get(m, [])
    return seen
