"""Copies in loops and host-built uploads: OFF101, OFF106 (copies in loops), OFF105.

All three walk the same list of calls and classify each call once, so they
are one check. A copy inside a loop is OFF101 when it is loop-invariant
(nothing it reads, including its destination and any `with` context opened
inside the loop, changes in the loop: hoisting it is always right) and
OFF106 otherwise (per-iteration data, usually necessary, so off by default).

One cost, one finding: a copy of a host-built array in a loop is OFF105
alone, whose fix (create it on the device) removes the copy that OFF101
would hoist. A copy whose result is collected per iteration
(`[cp.asarray(x) for _ in range(n)]`, `arrays.append(cuda.to_device(x))`)
builds n distinct arrays on purpose: hoisting would alias them, so it is
OFF106, not OFF101. A copy on a branch taken only when a changing value
equals a constant (`if i == 0:`) is not per iteration and is not reported.
"""

from __future__ import annotations

import libcst as cst

from ..context import FileContext
from ..fixes import device_create_fix, hoist_fix
from ..index import CallSite
from ..semantics import Classified
from ..uses import path_to
from . import check

COLLECTING_METHODS = frozenset({"append", "extend", "insert", "add", "appendleft", "put"})


@check("OFF101", "OFF106", "OFF105")
def transfers(ctx: FileContext) -> None:
    sem = ctx.sem
    creators = frozenset(ctx.options("OFF105").get("creators", ()))
    for site in ctx.index.calls:
        use = sem.classify(site.node, site.scope)
        if use is None or use.kind not in ("h2d", "d2h"):
            continue
        if use.kind == "h2d" and creators and ctx.enabled("OFF105") and _host_alloc(ctx, site, use, creators):
            continue
        loop = site.loop
        if loop is None or not ctx.enabled("OFF101", "OFF106") or sem.rare_branch(site, loop):
            continue
        fields = {"api": use.api.display, "direction": use.direction, "loop_line": ctx.line(loop.node)}
        if sem.invariant_in(site, loop) and not _collected(site):
            fix = hoist_fix(ctx, site, use) if ctx.enabled("OFF101") else None
            ctx.report("OFF101", site.node, fix, **fields)
        else:
            ctx.report("OFF106", site.node, **fields)


def _collected(site: CallSite) -> bool:
    """Is the copy's result kept per iteration (a comprehension's element, appended, stored by index)?"""
    if site.small is None:
        return False
    path = path_to(site.small, site.node)
    if path is None or len(path) < 2:
        return False
    for i in range(len(path) - 2, -1, -1):
        node, child = path[i], path[i + 1]
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return child is node.elt
        if isinstance(node, cst.DictComp):
            return child is node.value
        if isinstance(node, cst.Arg):
            continue
        if isinstance(node, cst.Call):
            return isinstance(node.func, cst.Attribute) and node.func.attr.value in COLLECTING_METHODS
        if isinstance(node, cst.Assign):
            return all(isinstance(t.target, cst.Subscript) for t in node.targets)
        if not isinstance(node, (cst.Tuple, cst.List, cst.Element)):
            return False
    return False


# Numba has no device-side zeros, ones, full or arange: only an uninitialised array
# (`cuda.device_array`, `device_array_like`) replaces a host-built one without a kernel.
NUMBA_CREATORS = frozenset({"empty", "empty_like"})


def _host_alloc(ctx: FileContext, site: CallSite, use: Classified, creators: frozenset[str]) -> bool:
    """Report OFF105 when the uploaded array was just built on the host; True when reported."""
    data = use.data
    if not isinstance(data, cst.Call):
        return False
    sem = ctx.sem
    qualname = sem.qualify(data.func)
    if qualname is None:
        return False
    head, _, creator = qualname.rpartition(".")
    inner_lib = None
    if head == "numpy" and creator in creators and use.api.library in ("cupy", "jax"):
        inner_lib = "numpy"
    elif head == "numpy" and creator in creators & NUMBA_CREATORS and use.api.library == "numba":
        inner_lib = "numpy"
    elif use.api.library == "torch" and creator in creators:
        inner = sem.classify(data, site.scope)
        if inner is not None and inner.kind == "host-alloc" and inner.api.factory:
            inner_lib = "torch"
    if inner_lib is None:
        return False
    fix, replacement = device_create_fix(ctx, site, use, data, creator, inner_lib)
    ctx.report("OFF105", site.node, fix, api=use.api.display, creator=qualname, replacement=replacement)
    return True
