"""Device values handed across files: which parameters of a project's functions its callers give device arrays.

Each file's summary lists the arguments it passes the functions it can
name (`analysis.arguments`). Once every file is summarised, each call is
resolved to the function it runs (`callgraph.Graph.resolve`: imports,
constructors, inherited methods, held objects), and a parameter that some
call gives a device value of one library, and no call a host value or
another library's array, is handed to the function's file, which is then
linted again knowing it (`told` records what it was linted with, so a cached
result is reused only while the project's callers stay the same).
"""

from __future__ import annotations

from typing import Mapping

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
    if not any(s.device_args for s in summaries.values()):
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
    out: dict[str, dict[str, dict[str, str]]] = {}
    for path, summary in summaries.items():
        mine = {q: handed[q] for q in summary.functions if q in handed}
        if mine:
            out[path] = mine
    return out


def told(params: Handed | None) -> tuple[str, ...]:
    """The part of a result's `told` that says which handed parameters it was linted with."""
    return tuple(sorted(f"{TOLD}{function}:{key}:{lib}" for function, keys in (params or {}).items()
                        for key, lib in keys.items()))
