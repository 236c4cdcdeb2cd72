"""Checks that follow the order of events: OFF103 round trip, OFF202 use after move,
OFF203 host access inside a region.

Each replays a scope's event list in evaluation order with a small state.
Branches are taken one after the other (an `if` and its `else` both run),
which errs toward reporting a possible use after move and toward accepting
a synchronisation made on one branch only. A loop's body is replayed twice,
so what the end of one iteration leaves (a download, a move, a launch that
wrote an array) meets the start of the next.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import libcst as cst

from ..analysis.loops import walk
from ..analysis.project import WRITES
from ..analysis.scopes import Event, IndexedCall, WithItem
from .devicevalues import short
from .file import CheckedFile
from .registry import check

Handler = Callable[[Event, int], None]


def replay(events: list[Event], start: int, end: int, handle: Handler, depth: int = 0) -> None:
    i = start
    while i < end:
        event = events[i]
        if event.kind == "loop":
            loop = event.extra
            handle(event, i)
            for _ in range(2 if depth < 3 else 1):
                replay(events, loop.start + 1, loop.end, handle, depth + 1)
            handle(events[loop.end], loop.end)
            i = loop.end + 1
        else:
            handle(event, i)
            i += 1


@check("OFF103")
def round_trip(file: CheckedFile) -> None:
    sem = file.sem
    for scope in file.index.scopes:
        origin: dict[str, tuple[IndexedCall, str]] = {}  # name -> (the download, its API)

        def handle(event: Event, _: int) -> None:
            kind, name = event.kind, event.name
            if kind == "bind":
                how, value = event.extra
                call = sem.names.call_at(value) if how == "=" else None
                use = sem.calls.classify(call.node, call.scope) if call is not None else None
                if use is not None and use.kind == "d2h":
                    origin[name] = (call, use.api.display)
                else:
                    origin.pop(name, None)
            elif kind in ("aug", "store", "del"):
                origin.pop(name, None)
            elif kind == "call":
                call = event.extra
                use = sem.calls.classify(call.node, call.scope)
                moved = _moved_in_place(call)
                if use is not None and use.kind == "d2h" and moved is not None:
                    origin[moved] = (call, use.api.display)  # model.cpu(): the module moves
                    return
                if use is not None and use.kind == "h2d" and isinstance(use.data, cst.Call):
                    inner = sem.calls.classify(use.data, call.scope)  # `x.cpu().to(device)` in one expression
                    if inner is not None and inner.kind == "d2h" and inner.data is not None:
                        file.report("OFF103", call.node, api=use.api.display, array=f"`{short(file, inner.data)}`",
                                    source_api=inner.api.display, d2h_line=file.line(call.node))
                if use is not None and use.kind == "h2d" and isinstance(use.data, cst.Name) and use.data.value in origin:
                    down, source_api = origin[use.data.value]
                    if not _exclusive(down, call):
                        file.report(
                            "OFF103", call.node, api=use.api.display, array=use.data.value,
                            source_api=source_api, d2h_line=file.line(down.node),
                        )
                for changed in sem.loops.mutated_by(call):
                    origin.pop(changed, None)

        replay(scope.events, 0, len(scope.events), handle)


def _exclusive(a: IndexedCall, b: IndexedCall) -> bool:
    """Do the two calls sit on different arms of one `if` (`if cpu: x = asnumpy(x) else: x = asarray(x)`)?

    The replay walks both arms one after the other, so a download in one
    arm reaches an upload in the other; no run executes both.
    """
    taken = {id(test): branch for test, branch in a.conds}
    return any(id(test) in taken and taken[id(test)] != branch for test, branch in b.conds)


def _moved_in_place(call: IndexedCall) -> str | None:
    """`model.cpu()` / `model.eval().cpu()` as a whole statement: a module moved in place; its name."""
    statement = call.small
    if not isinstance(statement, cst.Expr) or statement.value is not call.node:
        return None
    node = call.node.func
    while isinstance(node, (cst.Attribute, cst.Call)):
        node = node.value if isinstance(node, cst.Attribute) else node.func
    return node.value if isinstance(node, cst.Name) else None


@check("OFF202")
def use_after_move(file: CheckedFile) -> None:
    sem = file.sem
    for scope in file.index.scopes:
        moved: dict[str, tuple[int, str, str]] = {}  # name -> (line, param, kernel)

        def handle(event: Event, _: int) -> None:
            kind, name = event.kind, event.name
            if kind in ("load", "store", "aug") and name in moved:
                line, param, kernel = moved.pop(name)
                file.report("OFF202", event.node, array=name, move_line=line, param=param, kernel=kernel)
            elif kind in ("bind", "del"):
                moved.pop(name, None)
            elif kind == "call" and sem.calls.is_offload(event.extra):
                call = event.extra
                sig, pairs = sem.kernels.launch(call)
                for param, arg in pairs:
                    if sig is not None and param is not None and param.access == "Owned" and isinstance(arg.value, cst.Name):
                        moved[arg.value.value] = (file.line(call.node), param.name, sig.name)

        replay(scope.events, 0, len(scope.events), handle)


@dataclass
class _Region:
    item: WithItem
    mapped: set[str]
    device_newer: set[str] = field(default_factory=set)  # a launch wrote it; the host copy is stale
    pending: dict[str, cst.CSTNode] = field(default_factory=dict)  # host writes not yet sent to the device

    def sync(self, method: str, name: str) -> str:
        handle = self.item.asname
        return f"{handle}.{method}({name})" if handle else f"{method}({name}) on the region (`with region(...) as r`)"


# What a mapped array's host object answers without its data: metadata is not host access.
METADATA_ATTRS = frozenset({"shape", "dtype", "size", "ndim", "nbytes", "itemsize", "strides", "flags"})
METADATA_FUNCS = frozenset({
    "builtins.len", "builtins.id", "builtins.type", "builtins.isinstance",
    *(f"numpy.{f}" for f in ("shape", "ndim", "size", "empty_like", "zeros_like", "ones_like", "full_like",
                             "result_type", "iscomplexobj", "isrealobj")),
})


def _reads_metadata(sem, call: IndexedCall) -> bool:  # type: ignore[no-untyped-def]
    """len(y), np.empty_like(y), r.is_resident(y): calls that read shape, dtype or residency, not data."""
    if sem.names.qualify(call.node.func) in METADATA_FUNCS:
        return True
    func = call.node.func
    return isinstance(func, cst.Attribute) and func.attr.value == "is_resident" and sem.calls.is_region_handle(
        func.value, call.scope)


@check("OFF203")
def host_access_in_region(file: CheckedFile) -> None:
    sem = file.sem
    for scope in file.index.scopes:
        if not any(e.kind == "with" for e in scope.events):
            continue
        exempt: set[int] = set()  # loads that are launch or update arguments, or read metadata only
        for call in file.index.calls:
            if call.scope is not scope:
                continue
            use = sem.calls.classify(call.node, scope)
            skip_first = sem.calls.is_offload(call)
            if skip_first or sem.calls.is_region(call.node) or (use is not None and use.api.library == "offload_core") \
                    or _reads_metadata(sem, call):
                for k, (start, end) in enumerate(call.arg_ranges):
                    if (k > 0 or not skip_first) and sem.names.array_root(call.node.args[k].value, scope) is not None:
                        exempt.update(range(start, end))
        metadata = {id(node.value) for node in walk(scope.node)
                    if isinstance(node, cst.Attribute) and node.attr.value in METADATA_ATTRS
                    and isinstance(node.value, cst.Name)}  # y.shape, y.dtype: the host knows them
        stack: list[_Region] = []

        def find(node: cst.CSTNode) -> tuple[_Region, str] | None:
            if not stack or not isinstance(node, cst.BaseExpression):
                return None
            root = sem.names.array_root(node, scope)
            for region in reversed(stack):
                if root in region.mapped:
                    return region, root
            return None

        def line_of(region: _Region) -> int:
            return file.line(region.item.node)

        def handle(event: Event, index: int) -> None:
            kind = event.kind
            if kind == "with":
                item = event.extra
                if item.call is not None and sem.calls.is_region(item.call.node):
                    roots = {sem.names.array_root(a.value, scope) for a in item.call.node.args if not a.star}
                    stack.append(_Region(item, {r for r in roots if r}))
            elif kind == "endwith":
                if stack and stack[-1].item is event.extra:
                    stack.pop()
            elif kind == "load" and index not in exempt and id(event.node) not in metadata:
                found = find(event.node)
                if found and found[1] in found[0].device_newer:
                    region, root = found
                    file.report("OFF203", event.node, access="reads", array=event.name, region_line=line_of(region),
                               sync_call=region.sync("update_host", root))
            elif kind in ("store", "aug"):
                found = find(event.node)
                if found:
                    region, root = found
                    if root in region.device_newer:
                        file.report("OFF203", event.node, access="writes", array=root, region_line=line_of(region),
                                   sync_call=region.sync("update_host", root))
                    else:
                        region.pending[root] = event.node
            elif kind == "bind":
                for region in stack:
                    region.mapped.discard(event.name)
            elif kind == "call":
                _call(event.extra)

        def _call(call) -> None:  # type: ignore[no-untyped-def]
            if not stack:
                return
            if sem.calls.is_offload(call):
                _, pairs = sem.kernels.launch(call)
                for param, arg in pairs:
                    found = find(arg.value)
                    if not found:
                        continue
                    region, root = found
                    if root in region.pending:
                        file.report("OFF203", region.pending.pop(root), access="writes", array=root,
                                   region_line=line_of(region), sync_call=region.sync("update_device", root))
                    if param is None or param.access in WRITES:
                        region.device_newer.add(root)
                return
            use = sem.calls.classify(call.node, scope)
            if use is None or use.api.library != "offload_core" or use.data is None:
                return
            found = find(use.data)
            if found:
                region, root = found
                if use.api.method == "update_host":
                    region.device_newer.discard(root)
                elif use.api.method == "update_device":
                    region.pending.pop(root, None)

        replay(scope.events, 0, len(scope.events), handle)
