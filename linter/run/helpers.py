"""The project's copy helpers as catalog entries, for each file that calls one.

Each file's summary lists the functions it defines that return a copy of
a parameter to or from the device (`analysis.copyhelpers`) and the
functions it calls (its
call-graph roots and edges). Once every file is summarised, a call of
such a helper is matched to it by qualified name, by a unique tail (a
script that imports its sibling module by a shorter name), or by its
package and name when one helper of the package has it (`sp.to_device`,
re-exported by `sigpy/__init__.py`, is `sigpy.backend.to_device`). The
file is then linted again with those calls in its catalog as copies of
the helper's library; `told` records which it was linted with, so a cached
result is reused only while the project's helpers stay the same.
"""

from __future__ import annotations

from typing import Mapping

from ..analysis.apis import Api
from ..analysis.callgraph import CopyHelper, Hot, Summary
from ..findings import FileResult

TOLD = "helper:"  # how a helper the file was linted with is written in its result's `told`


def project_helpers(done: Mapping[str, FileResult],
                    hot: Mapping[str, Mapping[str, Hot]]) -> dict[str, dict[str, Api]]:
    """Per file, the copy-helper calls it makes per iteration: the name the file calls them by -> the catalog entry.

    Only calls in a loop or in a function that runs once per iteration (the
    file's own hot functions, or `hot`, what the project told each file)
    count: a file is linted again for them, and a helper called once per
    run is not what the copy rules report (on cupy's tree, counting every
    call linted 16 more files twice, 52 instead of 40).
    """
    summaries = {path: r.summary for path, r in done.items() if isinstance(r.summary, Summary)}
    helpers = {h.function: h for s in summaries.values() for h in s.copy_helpers}
    if not helpers:
        return {}
    by_tail: dict[str, list[CopyHelper]] = {}
    by_package: dict[tuple[str, str], list[CopyHelper]] = {}
    for u in helpers.values():
        parts = u.function.split(".")
        for i in range(1, len(parts)):
            by_tail.setdefault(".".join(parts[i:]), []).append(u)
        by_package.setdefault((parts[0], parts[-1]), []).append(u)
    out: dict[str, dict[str, Api]] = {}
    for path, summary in summaries.items():
        running = set(summary.hot_here) | set(hot.get(path, {}))
        called = {callee for callee, *_ in summary.roots} | {
            callee for caller, callee in summary.edges if caller in running}
        mine: dict[str, Api] = {}
        for callee in sorted(called):
            found = helpers.get(callee)
            if found is None and "." in callee:
                tails = by_tail.get(callee, [])
                parts = callee.split(".")
                same = by_package.get((parts[0], parts[-1]), [])
                found = tails[0] if len(tails) == 1 else same[0] if len(same) == 1 else None
            if found is not None:
                mine[callee] = _entry(found, callee)
        if mine:
            out[path] = mine
    return out


def told(helpers: Mapping[str, Api] | None) -> tuple[str, ...]:
    """The part of a result's `told` that says which helpers it was linted with."""
    return tuple(TOLD + name for name in sorted(helpers or {}))


def _entry(helper: CopyHelper, called_as: str) -> Api:
    if helper.kind == "collective":  # `reduce_tensor(loss)`: every rank meets; the result stays a device tensor
        return Api(library=helper.library, kind="sync", display=f"{helper.function} ({helper.via} inside)",
                   call=called_as, method=None, receiver=None, arg=helper.data, device_arg=None, device_kwarg=None,
                   device_namespace=None, factory=False, returns="device", blocking=True, collective=True)
    return Api(library=helper.library, kind="h2d" if helper.kind == "h2d" else "d2h",
               display=f"{helper.function} ({helper.via} inside)", call=called_as, method=None, receiver=None,
               arg=helper.data, device_arg=helper.device if helper.device >= 0 else None,
               device_kwarg=helper.device_name or None, device_namespace=None, factory=False, returns=None,
               blocking=helper.kind == "d2h", unless_false=helper.flag or None)
