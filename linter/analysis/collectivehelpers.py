"""A project's own metric reductions: functions that all-reduce a copy of their parameter and hand it back.

Distributed training scripts rarely call `dist.all_reduce` in the loop
that logs: they call `reduce_tensor(loss)` (or `reduce_mean`, ...),
defined in a `utils.py`, whose body clones the tensor, all-reduces the
clone and returns it divided by the world size. The meeting of every rank
is then out of the loop's sight, and with it OFF303 (a collective per step
only to read a number). A module function that passes one of its
parameters, or a clone of it, to a torch.distributed collective and
returns the result is summarised here as a `CopyHelper` of kind
`"collective"`; the runner gives every file that calls one per iteration
the helper as a catalog entry (`linter.run.helpers`), so OFF303 sees the
call as the collective it is.
"""

from __future__ import annotations

from typing import Callable, Final

import libcst as cst

from .callgraph import CopyHelper
from .children import visit
from .copyhelpers import assignments
from .names import Names
from .parameters import root_name
from .scopes import ModuleIndex, Scope

#: torch.distributed's collectives whose first argument holds the result (reduced, sent or gathered into);
#: `*_single` are PyTorch 2.13's names of the `*_tensor` pair
COLLECTIVES: Final = frozenset(f"torch.distributed.{name}" for name in (
    "all_reduce", "reduce", "broadcast", "all_gather_into_tensor", "reduce_scatter_tensor",
    "all_gather_single", "reduce_scatter_single"))
#: what a copy of a tensor is made with before it is reduced (`rt = tensor.clone()`, `t.detach().clone()`)
_COPIES: Final = frozenset({"clone", "detach", "float", "double", "contiguous"})


def collective_helpers(idx: ModuleIndex, names: Names, qualname: Callable[[Scope], str]) -> tuple[CopyHelper, ...]:
    """The module-level functions of the file that all-reduce one of their parameters (or its clone) and return it."""
    found: dict[str, CopyHelper] = {}
    for call in idx.calls:
        scope = call.scope
        node = scope.node
        if scope.kind != "function" or scope.parent is None or scope.parent.kind != "module" or \
                not isinstance(node, cst.FunctionDef) or qualname(scope) in found:
            continue
        collective = names.qualify(call.node.func)
        args = call.node.args
        if collective not in COLLECTIVES or not args or args[0].keyword is not None or \
                not isinstance(args[0].value, cst.Name):
            continue
        params = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
        reduced = args[0].value.value
        source = reduced if reduced in params else _copied_from(node, reduced)
        if source is None or source not in params or not _returns(node, reduced):
            continue
        found[qualname(scope)] = CopyHelper(qualname(scope), "torch", "collective", params.index(source),
                                            via=f"dist.{collective.rsplit('.', 1)[1]}")
    return tuple(found.values())


def _copied_from(node: cst.FunctionDef, name: str) -> str | None:
    """The parameter `name` is a copy of: its one binding is `p.clone()`, `p.detach().clone()`, `p.data.clone()`."""
    values = assignments(node, name)
    if len(values) != 1:
        return None
    value: cst.BaseExpression = values[0]
    copied = False
    while True:
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and not value.args and \
                value.func.attr.value in _COPIES:
            copied = True
            value = value.func.value
        elif isinstance(value, cst.Attribute) and value.attr.value == "data":
            value = value.value
        else:
            break
    return value.value if copied and isinstance(value, cst.Name) else None


def _returns(node: cst.FunctionDef, name: str) -> bool:
    """Does the function return `name`, or arithmetic or a method of it (`return rt / world_size`)?"""
    found = False

    class Returns(cst.CSTVisitor):
        def visit_FunctionDef(self, inner: cst.FunctionDef) -> bool:
            return inner is node

        def visit_Lambda(self, inner: cst.Lambda) -> bool:
            return False

        def visit_Return(self, ret: cst.Return) -> None:
            nonlocal found
            value = ret.value
            while isinstance(value, cst.BinaryOperation):
                value = value.left
            while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
                value = value.func.value  # `rt.div_(n)`
            root = root_name(value) if value is not None else None
            if root is not None and root.value == name:
                found = True

    visit(node, Returns())
    return found
