"""A method's own class: `self` in a method, the class's other methods, in one file.

Array-agnostic solvers keep their state on `self` (`self.kold = ncp.abs(r)`
in `setup`, `self.kold > self.tol` in `run`) and return it from their own
methods (`x, xupdate = self.step(x)`); the device-value analysis follows
both through these lookups.
"""

from __future__ import annotations

import libcst as cst

from .scopes import ModuleIndex, Scope


def is_self(scope: Scope, name: str) -> bool:
    """Is `name` the first parameter of the method `scope` (a function defined in a class)?"""
    node = scope.node
    if scope.kind != "function" or scope.parent is None or scope.parent.kind != "class" \
            or not isinstance(node, cst.FunctionDef):
        return False
    params = [*node.params.posonly_params, *node.params.params]
    return bool(params) and params[0].name.value == name


def method_class(name: cst.BaseExpression, scope: Scope) -> Scope | None:
    """The class whose method `scope` is (or holds, for a lambda), when `name` is that method's `self`."""
    if not isinstance(name, cst.Name):
        return None
    s: Scope | None = scope
    while s is not None and s.kind == "lambda":
        s = s.parent
    return s.parent if s is not None and is_self(s, name.value) else None


def own_method(idx: ModuleIndex, func: cst.Attribute, scope: Scope) -> Scope | None:
    """The method `self.<name>` of the calling method's own class, defined in this file (else None)."""
    owner = method_class(func.value, scope)
    if owner is None:
        return None
    return next((s for s in idx.scopes if s.parent is owner and s.kind == "function" and s.name == func.attr.value),
                None)


def buffer_names(idx: ModuleIndex) -> dict[int, set[str]]:
    """Per class scope (by id), the names its methods register as buffers (`self.register_buffer("alphas", a)`).

    A module buffer lives where the module does, and a PyTorch model's steps
    run on the GPU: `self.alphas[t]` in a sampler's step is a device value.
    """
    out: dict[int, set[str]] = {}
    for call in idx.calls:
        func = call.node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "register_buffer"
                and isinstance(func.value, cst.Name) and call.node.args):
            continue
        owner = method_class(func.value, call.scope)
        name = call.node.args[0].value
        if owner is not None and isinstance(name, cst.SimpleString):
            out.setdefault(id(owner), set()).add(str(name.evaluated_value))
    return out
