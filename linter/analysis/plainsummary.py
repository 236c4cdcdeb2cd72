"""Call-graph summaries of files with no GPU code, from Python's own parser.

The linter parses only files that mention a GPU library; the rest cannot
hold a finding. But a generic training loop lives in such a file often
enough: acme's `Learner.run` (`acme/core.py`, no JAX import) is
`for _ in iterator: self.step()`, and every JAX learner's `step`, in other
files, runs once per iteration of it. Without that loop in the project's
graph none of those steps is hot. This module summarises such a file with
`ast` (a C parser, a small fraction of LibCST's cost): its functions, its
classes' bases, the calls its step loops make (roots) and the calls its
methods make of their own class's methods (edges). A step loop here is a
`while` loop or a `for` over `range(...)`, `itertools.count(...)` or a
name that says it iterates (`iterator`, `loader`, `batches`): loops over a
file's own small collections (`for name in self._objects`) make nothing hot.
"""

from __future__ import annotations

import ast
import re

from .callgraph import Summary
from .scopes import imported_module

STEP_ITERABLE = re.compile(r"iter|loader|batch|data|steps|episodes|count|range", re.I)


def plain_summary(text: str, module_name: str, is_package: bool, path: str) -> tuple[Summary, bool] | None:
    """(summary, does it test something) of a file without GPU code; None when it does not parse or has no loop
    or class the graph needs."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    aliases: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = imported_module(module_name, is_package, node.level, node.module or "")
            for a in node.names:
                aliases[a.asname or a.name] = f"{base}.{a.name}" if base else a.name
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    walker = _Walker(module_name, path, aliases, defined)
    walker.body(tree.body, module_name, None)
    reexports = tuple((f"{module_name}.{name}", target) for name, target in aliases.items()
                      if target != name and is_package)
    annotated = _annotated(tree, module_name, walker)
    if not walker.roots and not walker.bases and not reexports and not annotated:
        return None
    tests = any(name.split(".")[0] in ("pytest", "unittest") for name in aliases.values()) or any(
        n.startswith(("test_", "Test")) for n in defined)
    return Summary(functions=tuple(walker.functions), looping=tuple(sorted(set(walker.looping))),
                   bases=tuple(walker.bases.items()), roots=tuple(dict.fromkeys(walker.roots)),
                   edges=tuple(dict.fromkeys(walker.edges)), reexports=reexports, annotated=annotated), tests


def _annotated(tree: ast.Module, module_name: str, walker: _Walker) -> tuple[tuple[str, str, str], ...]:
    """(function, parameter, annotation) for parameters annotated with an imported class (`state: State`): a
    viewer that imports no GPU library may still be handed the project's device records (`run.handed`). The
    function is named by its own name under the module; the file is linted in full before anything is told."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
            annotation = arg.annotation
            if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name) and \
                    annotation.value.id == "Optional":
                annotation = annotation.slice
            name = walker.dotted(annotation, None, None) if annotation is not None else None
            if name is not None and not name.startswith(("typing.", "builtins.")) and "." in name:
                out.append((f"{module_name}.{node.name}", arg.arg, name))
    return tuple(dict.fromkeys(out))


class _Walker:
    def __init__(self, module_name: str, path: str, aliases: dict[str, str], defined: set[str]) -> None:
        self.module = module_name
        self.defined = defined
        self.path = path
        self.aliases = aliases
        self.functions: list[str] = []
        self.looping: list[str] = []
        self.bases: dict[str, tuple[str, ...]] = {}
        self.roots: list[tuple[str, str, str, int]] = []
        self.edges: list[tuple[str, str]] = []

    def body(self, statements: list[ast.stmt], prefix: str, owner: str | None) -> None:
        """Definitions in a module or class body (`owner`: the class, for its methods)."""
        for node in statements:
            if isinstance(node, ast.ClassDef):
                name = f"{prefix}.{node.name}"
                bases = tuple(b for b in (self.dotted(e, None, None) for e in node.bases) if b)
                if bases:
                    self.bases[name] = bases
                self.body(node.body, name, name)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self._function(node, f"{prefix}.{node.name}", owner)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, name: str, owner: str | None) -> None:
        self.functions.append(name)
        args = [*node.args.posonlyargs, *node.args.args]
        me = args[0].arg if owner is not None and args else None
        loops = 0
        stack: list[tuple[ast.AST, bool]] = [(s, False) for s in node.body]
        while stack:
            item, in_loop = stack.pop()
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            step_loop = isinstance(item, ast.While) or isinstance(item, (ast.For, ast.AsyncFor)) and _steps(item.iter)
            if isinstance(item, (ast.For, ast.AsyncFor, ast.While)):
                loops += 1
            if isinstance(item, ast.Call):
                callee = self.dotted(item.func, me, owner)
                if callee is not None:
                    if in_loop:
                        self.roots.append((callee, self.path, name, -1))
                    elif owner is not None and callee.startswith(owner + "."):
                        self.edges.append((name, callee))
            body = {id(b) for b in item.body} if step_loop else set()  # a step loop's body runs per iteration
            for child in ast.iter_child_nodes(item):
                stack.append((child, in_loop or id(child) in body))
        if loops:
            self.looping.append(name)

    def dotted(self, expr: ast.expr, me: str | None, owner: str | None) -> str | None:
        """The qualified name of a callee or base: `self.step` -> `Class.step`, imports resolved; else None."""
        parts: list[str] = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        if not isinstance(expr, ast.Name):
            return None
        if me is not None and expr.id == me:
            return f"{owner}.{parts[0]}" if owner is not None and len(parts) == 1 else None
        head = self.aliases.get(expr.id)
        if head is None:
            return f"{self.module}.{expr.id}" if not parts and expr.id in self.defined else None
        return ".".join([head, *reversed(parts)])


def _steps(iterable: ast.expr) -> bool:
    """A `for` over steps: `range(...)`, `itertools.count()`, `enumerate(loader)`, a name that says it iterates."""
    if isinstance(iterable, ast.Call):
        func = iterable.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name == "enumerate" and iterable.args:
            return _steps(iterable.args[0])
        return bool(STEP_ITERABLE.search(name))
    name = iterable.attr if isinstance(iterable, ast.Attribute) else iterable.id if isinstance(
        iterable, ast.Name) else ""
    return bool(STEP_ITERABLE.search(name))
