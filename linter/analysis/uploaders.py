"""A project's own upload helpers: functions that return their parameter copied to the device.

Real code rarely calls `cupy.asarray` in the loop that needs the data: it
calls `to_cupy(x)` or `backend.to_device(self.coord, device)`, defined in
another file, and the copy inside is out of the loop's sight. A module
function whose `return` hands back an upload of one of its parameters
(`return cp.asarray(x)`, or `x = cp.asarray(x)` ... `return x`, or
`return x.to(device)`) is summarised here as an `Uploader`; the runner
gives every file that calls one the helper as a catalog entry of kind
`h2d` (`linter.run.helpers`), so the checks see its calls as the uploads
they are: invariant data sent again in a loop (OFF101), results that live
on the device afterwards.

When the helper takes a device parameter (`to_device(x, device)`), a call
copies only when that argument names a device: `to_device(x, cpu_device)`
is a download, or nothing, and is not an upload. A helper that puts its
parameter on the CPU device (big_vision's `put_cpu`: `jax.device_put(x,
jax.local_devices(backend="cpu")[0])`) is no upload helper at all.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from .callgraph import Uploader
from .calls import DEVICE_NAME, Calls
from .scopes import IndexedCall, ModuleIndex, Scope


def uploaders(idx: ModuleIndex, calls: Calls, qualname: Callable[[Scope], str]) -> tuple[Uploader, ...]:
    """The module-level functions of the file that return an upload of one of their parameters."""
    found: dict[str, Uploader] = {}
    for call in idx.calls:
        scope = call.scope
        if scope.kind != "function" or scope.parent is None or scope.parent.kind != "module":
            continue
        node = scope.node
        if not isinstance(node, cst.FunctionDef) or not isinstance(call.node.func, (cst.Name, cst.Attribute)):
            continue
        params = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
        if not params:
            continue
        use = calls.classify(call.node, scope)
        if use is None or use.kind != "h2d" or not isinstance(use.data, cst.Name) or use.data.value not in params:
            continue
        if not _returned(call, node) or _names_the_cpu(idx, call.node, use.data):
            continue
        name = qualname(scope)
        if name in found:
            continue
        data = params.index(use.data.value)
        devices = [i for i, p in enumerate(params) if i != data and DEVICE_NAME.search(p)]
        device = devices[0] if devices else -1
        found[name] = Uploader(name, use.api.library, data, device, params[device] if device >= 0 else "",
                               use.api.display)
    return tuple(found.values())


def _names_the_cpu(idx: ModuleIndex, call: cst.Call, data: cst.BaseExpression) -> bool:
    """Does another argument send the data to the CPU: `jax.device_put(x, jax.local_devices(backend="cpu")[0])`?"""
    return any(arg.value is not data and "cpu" in idx.module.code_for_node(arg.value).lower() for arg in call.args)


def _returned(call: IndexedCall, node: cst.FunctionDef) -> bool:
    """Does the function return what the call made: `return <call>`, or a name bound to it and returned?"""
    small, made = call.small, call.node
    if isinstance(small, cst.Return):
        return small.value is made
    if isinstance(small, cst.Assign) and small.value is made and len(small.targets) == 1:
        target = small.targets[0].target
        return isinstance(target, cst.Name) and target.value in _returned_names(node)
    return False


def _returned_names(node: cst.FunctionDef) -> set[str]:
    """The plain names the function's own `return` statements hand back (not those of nested functions)."""
    names: set[str] = set()

    class Returns(cst.CSTVisitor):
        def visit_FunctionDef(self, inner: cst.FunctionDef) -> bool:
            return inner is node

        def visit_Lambda(self, inner: cst.Lambda) -> bool:
            return False

        def visit_Return(self, ret: cst.Return) -> None:
            if isinstance(ret.value, cst.Name):
                names.add(ret.value.value)

    node.visit(Returns())
    return names

