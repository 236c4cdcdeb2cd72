"""A project's own copy helpers: functions that return their parameter copied to or from the device.

Real code rarely calls `cupy.asarray` or `jax.device_get` in the loop that
needs the copy: it calls `to_cupy(x)`, `backend.to_device(self.coord,
device)` or `utils.get_from_first_device(metrics)`, defined in another file,
and the copy inside is out of the loop's sight. A module function whose
`return` hands back a copy of one of its parameters is summarised here as a
`CopyHelper`: `return cp.asarray(x)`, `x = cp.asarray(x)` ... `return x`,
`return x.to(device)`, or a download of a value computed from the
parameter (`first = tree_map(lambda a: a[0], nest)`, then `return
jax.device_get(first) if as_numpy else first`). The runner gives every file
that calls one the helper as a catalog entry of the same kind
(`linter.run.helpers`), so the checks see its calls as the copies they are:
invariant data sent again in a loop (OFF101), a metric downloaded every
step (OFF301), results that live on the device afterwards.

When the helper takes a device parameter (`to_device(x, device)`), a call
copies only when that argument names a device: `to_device(x, cpu_device)`
is a download, or nothing, and is not an upload. A helper that puts its
parameter on the CPU device (big_vision's `put_cpu`: `jax.device_put(x,
jax.local_devices(backend="cpu")[0])`) is no upload helper at all. A copy
behind a flag parameter (`... if as_numpy else first`) is made unless a
call passes that flag as `False`.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from .callgraph import CopyHelper
from .calls import DEVICE_NAME, Calls, Classified
from .children import children, visit
from .loops import walk
from .scopes import IndexedCall, ModuleIndex, Scope


def copy_helpers(idx: ModuleIndex, calls: Calls, qualname: Callable[[Scope], str]) -> tuple[CopyHelper, ...]:
    """The module-level functions of the file that return a copy of one of their parameters."""
    found: dict[str, CopyHelper] = {}
    for call in idx.calls:
        scope = call.scope
        if scope.kind != "function" or scope.parent is None or scope.parent.kind != "module":
            continue
        node = scope.node
        if not isinstance(node, cst.FunctionDef) or not isinstance(call.node.func, (cst.Name, cst.Attribute)):
            continue
        params = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
        if not params or qualname(scope) in found:
            continue
        use = calls.classify(call.node, scope)
        if use is None or use.kind not in ("h2d", "d2h") or use.data is None:
            continue
        if not isinstance(use.data, cst.Name) and (use.kind != "d2h" or _uploads(calls, use.data, scope)):
            continue  # an upload of its parameter itself; a download may be of an expression of it, not of an upload
        returned = _returned(call, node)
        if returned is None:
            continue
        data = _parameter_of(use, node, params)
        if data is None or (use.kind == "h2d" and _names_the_cpu(idx, call.node, use.data)):
            continue
        devices = [i for i, p in enumerate(params) if i != data and DEVICE_NAME.search(p)] if use.kind == "h2d" else []
        device = devices[0] if devices else -1
        flag = returned if returned in params else ""
        found[qualname(scope)] = CopyHelper(qualname(scope), use.api.library, use.kind, data, device,
                                            params[device] if device >= 0 else "", use.api.display, flag)
    return tuple(found.values())


def _uploads(calls: Calls, expr: cst.BaseExpression, scope: Scope) -> bool:
    """Does `expr` make an upload (`cp.asarray(x).get()`: a round trip, no download helper)?"""
    return any(isinstance(node, cst.Call) and (use := calls.classify(node, scope)) is not None and use.kind == "h2d"
               for node in walk(expr))


def _parameter_of(use: Classified, node: cst.FunctionDef, params: list[str]) -> int | None:
    """The position of the parameter the copied name is, or (downloads) the one it was computed from in one step:
    bound to a name first (`first = tree_map(lambda a: a[0], nest)`) or in the download's own argument
    (`jax.device_get(unreplicate(metrics))`)."""
    if not isinstance(use.data, cst.Name):
        sources: cst.BaseExpression | None = use.data
    elif use.data.value in params:
        return params.index(use.data.value)
    elif use.kind != "d2h":
        return None
    else:
        sources = _one_binding(node, use.data.value)
    if sources is None:
        return None
    read = {n.value for n in _names(sources)} & set(params)
    return params.index(read.pop()) if len(read) == 1 else None


def _names_the_cpu(idx: ModuleIndex, call: cst.Call, data: cst.BaseExpression) -> bool:
    """Does another argument send the data to the CPU: `jax.device_put(x, jax.local_devices(backend="cpu")[0])`?"""
    return any(arg.value is not data and "cpu" in idx.module.code_for_node(arg.value).lower() for arg in call.args)


def _returned(call: IndexedCall, node: cst.FunctionDef) -> str | None:
    """How the function returns what the call made: "" plainly, or the name of the flag that picks it; else None.

    `return <call>`; `return <call> if flag else other`; a name bound to
    the call and returned (`x = cp.asarray(x)` ... `return x`).
    """
    small, made = call.small, call.node
    if isinstance(small, cst.Return):
        if small.value is made:
            return ""
        value = small.value
        if isinstance(value, cst.IfExp) and value.body is made:
            return value.test.value if isinstance(value.test, cst.Name) else None
        return None
    if isinstance(small, cst.Assign) and small.value is made and len(small.targets) == 1:
        target = small.targets[0].target
        return "" if isinstance(target, cst.Name) and target.value in _returned_names(node) else None
    return None


def _one_binding(node: cst.FunctionDef, name: str) -> cst.BaseExpression | None:
    """The value of the one plain assignment of `name` in the function's own body, else None."""
    values = assignments(node, name)
    return values[0] if len(values) == 1 else None


def assignments(node: cst.FunctionDef, name: str) -> list[cst.BaseExpression]:
    """The values of the plain assignments of `name` in the function's own body (not nested functions, lambdas)."""
    values: list[cst.BaseExpression] = []

    class Assigns(cst.CSTVisitor):
        def visit_FunctionDef(self, inner: cst.FunctionDef) -> bool:
            return inner is node

        def visit_Lambda(self, inner: cst.Lambda) -> bool:
            return False

        def visit_Assign(self, assign: cst.Assign) -> None:
            if any(isinstance(t.target, cst.Name) and t.target.value == name for t in assign.targets):
                values.append(assign.value)

    visit(node, Assigns())
    return values


def _names(expr: cst.BaseExpression) -> list[cst.Name]:
    """The names an expression reads, outside lambdas (whose parameters are their own)."""
    out: list[cst.Name] = []
    stack: list[cst.CSTNode] = [expr]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Lambda):
            continue
        if isinstance(n, cst.Name):
            out.append(n)
        elif isinstance(n, cst.Attribute):
            stack.append(n.value)
            continue
        stack.extend(children(n))
    return out


def _returned_names(node: cst.FunctionDef) -> set[str]:
    """The plain names the function returns at its top level or one block down (`if`, `with`, `try`).

    Walking the whole body with a LibCST visitor cost 7 s of a 270 s
    profile of cupy's tree; the helpers' returns sit at these depths.
    """
    names: set[str] = set()
    blocks: list[tuple[cst.BaseSuite, int]] = [(node.body, 0)]
    while blocks:
        suite, depth = blocks.pop()
        for stmt in suite.body if isinstance(suite, cst.IndentedBlock) else ():
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Return) and isinstance(small.value, cst.Name):
                        names.add(small.value.value)
            elif depth < 2 and isinstance(stmt, (cst.If, cst.With, cst.Try)):
                blocks.append((stmt.body, depth + 1))
                orelse = getattr(stmt, "orelse", None)
                if isinstance(orelse, (cst.If, cst.Else)):
                    blocks.append((orelse.body, depth + 1))
    return names
