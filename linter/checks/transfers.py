"""Copies and synchronisations: OFF101, OFF106 (copies in loops), OFF104 (syncs in loops), OFF105.

All four walk the same list of calls and classify each call once, so they
are one check. A copy inside a loop is OFF101 when it is loop-invariant
(nothing it reads, including its destination and any `with` context opened
inside the loop, changes in the loop: hoisting it is always right) and
OFF106 otherwise (per-iteration data, usually necessary, so off by default).
"""

from __future__ import annotations

import libcst as cst

from ..context import FileContext
from ..fixes import device_create_fix, hoist_fix
from ..index import CallSite
from ..semantics import Classified
from . import check

_SYNC_ADVICE = {
    "item": "accumulate on the device and read the value once after the loop",
    "tolist": "keep the values on the device and convert them once after the loop",
}


@check("OFF101", "OFF106", "OFF104", "OFF105")
def transfers(ctx: FileContext) -> None:
    sem = ctx.sem
    conversions = frozenset(ctx.options("OFF104").get("conversions", ()))
    creators = frozenset(ctx.options("OFF105").get("creators", ()))
    for site in ctx.index.calls:
        use = sem.classify(site.node, site.scope)
        loop = site.loop
        if use is None:
            if loop is not None and conversions and ctx.enabled("OFF104"):
                _conversion(ctx, site, conversions)
            continue
        if use.kind in ("h2d", "d2h"):
            if use.kind == "h2d" and creators and ctx.enabled("OFF105"):
                _host_alloc(ctx, site, use, creators)
            if loop is None or not ctx.enabled("OFF101", "OFF106"):
                continue
            fields = {"api": use.api.display, "direction": use.direction, "loop_line": ctx.line(loop.node)}
            if sem.invariant_in(site, loop):
                fix = hoist_fix(ctx, site, use) if ctx.enabled("OFF101") else None
                ctx.report("OFF101", site.node, fix, **fields)
            else:
                ctx.report("OFF106", site.node, **fields)
        elif use.kind == "sync" and loop is not None and ctx.enabled("OFF104"):
            method = use.api.method or ""
            advice = _SYNC_ADVICE.get(method, "synchronise once after the loop, where the host needs the results")
            ctx.report("OFF104", site.node, api=use.api.display, loop_line=ctx.line(loop.node), advice=advice)


def _conversion(ctx: FileContext, site: CallSite, conversions: frozenset[str]) -> None:
    call = site.node
    qualname = ctx.sem.qualify(call.func)
    if qualname is None or not qualname.startswith("builtins."):
        return
    name = qualname.split(".", 1)[1]
    if name not in conversions or len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return
    lib = ctx.sem.device_lib(call.args[0].value, site.scope)
    if lib is None:
        return
    loop = site.loop
    assert loop is not None
    ctx.report(
        "OFF104", call, api=f"{name}() of a {lib} device value", loop_line=ctx.line(loop.node),
        advice="accumulate on the device and convert once after the loop",
    )


def _host_alloc(ctx: FileContext, site: CallSite, use: Classified, creators: frozenset[str]) -> None:
    data = use.data
    if not isinstance(data, cst.Call):
        return
    sem = ctx.sem
    qualname = sem.qualify(data.func)
    if qualname is None:
        return
    head, _, creator = qualname.rpartition(".")
    inner_lib = None
    if head == "numpy" and creator in creators and use.api.library in ("cupy", "numba", "jax"):
        inner_lib = "numpy"
    elif use.api.library == "torch" and creator in creators:
        inner = sem.classify(data, site.scope)
        if inner is not None and inner.kind == "host-alloc" and inner.api.factory:
            inner_lib = "torch"
    if inner_lib is None:
        return
    fix, replacement = device_create_fix(ctx, site, use, data, creator, inner_lib)
    ctx.report("OFF105", site.node, fix, api=use.api.display, creator=qualname, replacement=replacement)
