"""Device values handed across files: which parameters of a project's functions its callers give device arrays.

Each file's summary lists the arguments it passes the functions it can
name (`analysis.arguments`). Once every file is summarised, each call is
resolved to the function it runs (`callgraph.Graph.resolve`: imports,
constructors, inherited methods, held objects), and a parameter that some
call gives a device value of one library, and no call a host value or
another library's array, is handed to the function's file, and so is a parameter annotated with one of
the project's array records (`state: State`, `analysis.annotations`); the file is then
linted again knowing it (`told` records what it was linted with, so a cached
result is reused only while the project's callers stay the same).
"""

from __future__ import annotations

from typing import Iterable, Mapping

from ..analysis.arguments import HOST
from ..analysis.callgraph import Graph, Hot, Summary
from ..findings import FileResult

TOLD = "param:"  # how a handed parameter is written in a result's `told`
Handed = Mapping[str, Mapping[str, str]]  # function -> parameter (position at the call, or keyword) -> library


def project_params(done: Mapping[str, FileResult],
                   hot: Mapping[str, Mapping[str, Hot]]) -> dict[str, dict[str, dict[str, str]]]:
    """Per file, its functions' parameters that the project's calls hand device values: path -> function -> key -> lib.

    Only functions where a device value can cost per iteration are told: those that run once per iteration (the
    file's own hot functions, or `hot`, what the project told each file) and those with a loop of their own. A
    file is linted again for what it is told, and a helper run once per run has nothing for the rules. Tests
    count: what a library's tests pass its functions is what its users pass them (a CuPy library's API is
    called with device arrays by its users, whose code is not in the tree).
    """
    summaries = {path: r.summary for path, r in done.items() if isinstance(r.summary, Summary)}
    if not any(s.device_args or s.array_classes for s in summaries.values()):
        return {}
    running = {q for path, s in summaries.items() for q in (*s.hot_here, *s.looping, *hot.get(path, {}))}
    graph = Graph(summaries.values())
    seen: dict[tuple[str, str], set[str]] = {}
    resolved: dict[str, str | None] = {}
    for summary in summaries.values():
        for callee, key, lib in summary.device_args:
            if callee not in resolved:
                resolved[callee] = graph.resolve(callee)
            function = resolved[callee]
            if function is not None:
                seen.setdefault((function, key), set()).add(lib)
    handed: dict[str, dict[str, str]] = {}
    for (function, key), libs in seen.items():
        if len(libs) == 1 and HOST not in libs and function in running:
            handed.setdefault(function, {})[key] = next(iter(libs))
    records = _records(summaries.values())
    for summary in summaries.values() if records else ():
        for function, name, annotation in summary.annotated:
            lib = _record_lib(annotation, records, graph) if function in running else None
            if lib is not None:
                handed.setdefault(function, {}).setdefault(name, lib)
    out: dict[str, dict[str, dict[str, str]]] = {}
    for path, summary in summaries.items():
        mine = {q: handed[q] for q in summary.functions if q in handed}
        if mine:
            out[path] = mine
    return out


def record_readers(plain: Mapping[str, FileResult], done: Mapping[str, FileResult]) -> list[str]:
    """The files without GPU code (`plain`: their call-graph summaries) with a parameter annotated with one of the
    project's array records (`def render(self, state: State)` in a viewer): they read device arrays, and are
    linted in full."""
    summaries = [r.summary for r in done.values() if isinstance(r.summary, Summary)]
    records = _records(summaries)
    if not records:
        return []
    readers = {path: r.summary for path, r in plain.items() if isinstance(r.summary, Summary) and r.summary.annotated}
    graph = Graph([*summaries, *readers.values()])
    return [path for path, summary in readers.items()
            if any(_record_lib(annotation, records, graph) for _, _, annotation in summary.annotated)]


def _records(summaries: Iterable[Summary]) -> dict[str, str]:
    """The project's array records: class -> the library of its fields."""
    return {name: lib for s in summaries for name, lib in s.array_classes}


def _record_lib(annotation: str, records: Mapping[str, str], graph: Graph) -> str | None:
    """The library of the array record an annotation names (`state: State`, `State` in another module, re-exported
    by a package, or imported by a sibling module), if it names one."""
    lib = records.get(annotation)
    if lib is None:
        resolved = graph.resolve(annotation) or _sibling(annotation, records)
        lib = records.get(resolved) if resolved is not None else None
    return lib


def _sibling(annotation: str, records: Mapping[str, str]) -> str | None:
    """The one record class of that name in the annotation's package: `sudoku.env.State` is `sudoku.types.State`
    when `env` imports it from `types` (a module's own imports are not in the summaries)."""
    package, _, name = annotation.rpartition(".")
    package = package.rpartition(".")[0]
    found = [r for r in records if r.rpartition(".")[2] == name and r.rpartition(".")[0].rpartition(".")[0] == package]
    return found[0] if len(found) == 1 else None


def told(params: Handed | None) -> tuple[str, ...]:
    """The part of a result's `told` that says which handed parameters it was linted with."""
    return tuple(sorted(f"{TOLD}{function}:{key}:{lib}" for function, keys in (params or {}).items()
                        for key, lib in keys.items()))
