"""Kernel bodies against their annotations: OFF204 (InOut never read), OFF205 (In written).

The body of an `@kernel` function is read in evaluation order until the
parameter is rebound (`x = x + 1` makes `x` a local array; what happens to
it afterwards is not a write to the parameter). A read is any load of the
name other than as the target of a store (`out[...] = ...`); writes are
stores into it, augmented assignments (in place for arrays), in-place
methods (`fill`, torch's `add_`), `out=` arguments and `copyto`.
"""

from __future__ import annotations

import libcst as cst

from ..analysis.kernels import signature_of_def
from ..analysis.loops import MUTATING_METHODS
from .file import CheckedFile
from .registry import check


@check("OFF204", "OFF205")
def kernel_bodies(file: CheckedFile) -> None:
    sem = file.sem
    calls_by_scope: dict[int, list] = {}
    for call in file.index.calls:
        calls_by_scope.setdefault(id(call.scope), []).append(call)
    for node, scope in file.index.functions:
        sig = signature_of_def(node, file.index.module_name, sem.names.qualify)
        if sig is None:
            continue
        calls_at = {call.index: call for call in calls_by_scope.get(id(scope), [])}
        for param in sig.params:
            if param.access == "InOut" and file.enabled("OFF204"):
                if not _reads(scope.events, param.name):
                    file.report("OFF204", scope.params[param.name].name, param=param.name, kernel=sig.name)
            elif param.access == "In" and file.enabled("OFF205"):
                write = _first_write(file, scope.events, calls_at, param.name)
                if write is not None:
                    file.report("OFF205", write[0], kernel=sig.name, param=param.name, how=write[1])


def _live(events: list, name: str):  # type: ignore[no-untyped-def]
    """Events up to the first rebinding of `name` after its parameter binding."""
    for index, event in enumerate(events):
        if event.name == name and event.kind in ("bind", "del") and event.extra is not None and event.extra[0] != "param":
            return
        yield index, event


def _reads(events: list, name: str) -> bool:
    return any(e.kind == "load" and e.name == name for _, e in _live(events, name))


def _first_write(file: CheckedFile, events: list, calls_at: dict, name: str) -> tuple[cst.CSTNode, str] | None:
    for index, event in _live(events, name):
        if event.name == name and event.kind == "store":
            return event.node, "item or attribute assignment"
        if event.name == name and event.kind == "aug":
            return event.extra, "augmented assignment, in place for arrays"
        if event.kind == "call":
            call = calls_at.get(index)
            if call is None:
                continue
            node = call.node
            func = node.func
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == name:
                method = func.attr.value
                if method in MUTATING_METHODS or (method.endswith("_") and not method.startswith("_")):
                    return node, f"in-place method .{method}()"
            for k, arg in enumerate(node.args):
                is_target = isinstance(arg.value, cst.Name) and arg.value.value == name
                if not is_target:
                    continue
                if arg.keyword is not None and arg.keyword.value == "out":
                    return node, "out= argument"
                qualname = file.sem.names.qualify(func) or ""
                if k == 0 and arg.keyword is None and qualname.endswith(".copyto"):
                    return node, "copyto destination"
    return None
