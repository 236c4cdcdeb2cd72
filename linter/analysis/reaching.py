"""Which binding of a name reaches a point of its function: the last one before it, unless a branch holds it.

The device-value analysis is flow-insensitive (a name is a device value when
any binding makes it one), which is right for the question "can this be a
device array" and wrong where a download rebinds the name before it is used:
`data = data.get(); f(data[::2])` hands `f` a host array, and
`factors = onp.asarray(factors)` before `for f in factors` makes the loop
walk a host array. Those rebindings count only when they surely run before
the point: a binding inside an `if` that does not also hold the point
(`if copy_to_host: rp = cp.asnumpy(rp)` in one arm, `rp[i]` in another)
may not have run.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

import libcst as cst

from .children import visit
from .names import Names
from .parameters import root_name
from .scopes import Loop, Scope, Unpack

# Methods of a device array whose result is on the host (a download).
DOWNLOADS = frozenset({"get", "cpu", "numpy", "tolist", "item", "copy_to_host", "asnumpy"})
# Methods that give a view or a converted copy on the same side as the array.
# torch functions that build a tensor on the host unless given `device=` (`torch.from_numpy` always does).
HOST_BUILDERS = frozenset({"tensor", "as_tensor", "asarray", "zeros", "ones", "empty", "full", "arange", "linspace",
                           "eye", "rand", "randn", "randint", "randperm"})
VIEWS = frozenset({"float", "double", "half", "long", "int", "bool", "view", "reshape", "flatten", "squeeze",
                   "unsqueeze", "contiguous", "clone", "copy", "astype", "transpose", "permute", "ravel", "detach"})


class Classifier(Protocol):
    def classify(self, call: cst.Call, scope: Scope) -> Any: ...


class Taints(Protocol):
    """What this module needs of `values.DeviceValues`."""

    names: Names
    calls: Classifier

    def taint(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> str | None: ...


class _Holds(cst.CSTVisitor):
    def __init__(self, wanted: cst.CSTNode) -> None:
        self.wanted = wanted
        self.found = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if node is self.wanted:
            self.found = True
        return not self.found


def _holds(tree: cst.CSTNode, node: cst.CSTNode) -> bool:
    visitor = _Holds(node)
    visit(tree, visitor)
    return visitor.found


def surely_before(names: Names, scope: Scope, bound: cst.CSTNode, point: cst.CSTNode) -> bool:
    """Does the binding `bound` run whenever `point` does: no `if` of the scope holds it without the point?"""
    for branch in names.idx.branches:
        node = branch.node
        if branch.scope is scope and isinstance(node, cst.If) and _holds(node, bound) and not _holds(node, point):
            return False
    return True


#: a flag that picks the GPU path of code written for both (`if self.CUDA:`, `if use_gpu:`, `if not on_gpu:`)
GPU_FLAG = re.compile(r"^(use_?|is_|on_|with_)?(cuda|gpu|cupy)$", re.I)


def host_arm(names: Names, node: cst.CSTNode, scope: Scope) -> bool:
    """Does `node` sit in the host arm of a GPU flag's `if` in its scope (`else:` of `if self.CUDA:`, the body of
    `if not use_gpu:`)?

    Code written for both backends keeps one array attribute on the device
    or on the host by that flag (`self.ref = cp.asarray(ref) if self.CUDA
    else ref`); in the host arm the NumPy calls on it run on NumPy arrays,
    whatever another arm makes of the same attribute.
    """
    for branch in names.idx.branches:
        test = branch.node
        if branch.scope is not scope or not isinstance(test, cst.If):
            continue
        flag, negated = test.test, False
        if isinstance(flag, cst.UnaryOperation) and isinstance(flag.operator, cst.Not):
            flag, negated = flag.expression, True
        word = flag.attr.value if isinstance(flag, cst.Attribute) else flag.value if isinstance(flag, cst.Name) else ""
        if not GPU_FLAG.match(word):
            continue
        arm = test.body if negated else test.orelse
        if arm is not None and _holds(arm, node):
            return True
    return False


def host_when_reached(values: Taints, expr: cst.BaseExpression, scope: Scope, index: int,
                      point: cst.CSTNode, depth: int = 0) -> bool:
    """Is the name `expr` starts from bound last, before event `index` of `scope`, surely to a host value?

    A value computed from such a name is one too: `output = output.cpu()`
    then `cls = output[:, 6]` makes `cls` a host tensor.
    """
    root = root_name(expr)
    if root is None or depth > 4:
        return False
    names = values.names
    name = names.name_of(root)
    events = scope.events
    last = next((i for i in range(min(index, len(events)) - 1, -1, -1)
                 if events[i].kind == "bind" and events[i].name == name), None)
    if last is None:
        return False
    how, value = events[last].extra
    if how == "for" and isinstance(value, Unpack):
        source = value.source  # `for score in scores`: an element of what the loop walks
        host = downloaded(values, source, scope) or host_when_reached(values, source, scope, last, point, depth + 1)
    elif how == "=" and isinstance(value, cst.BaseExpression):
        sources = _derived_from(value)
        host = downloaded(values, value, scope) or bool(sources) and all(
            host_when_reached(values, s, scope, last, point, depth + 1) for s in sources)
    else:
        return False
    return host and surely_before(names, scope, events[last].node, point)


def _derived_from(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The names a value is a view or arithmetic of: `out[:, 6]`, `out.T`, `a * b`, `a.float()` (else [])."""
    if isinstance(value, cst.BinaryOperation):
        left, right = _derived_from(value.left), _derived_from(value.right)
        numbers = (cst.Integer, cst.Float)
        if isinstance(value.left, numbers):
            return right
        if isinstance(value.right, numbers):
            return left
        return left + right if left and right else []
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in VIEWS:
        value = value.func.value
    return [value] if root_name(value) is not None else []


def downloaded(values: Taints, value: cst.BaseExpression, scope: Scope) -> bool:
    """Is `value` surely a host array: a download, what a NumPy function returns, or a tensor built on the host?

    Not knowing a value to be on the device is no evidence that it is on the
    host: `out = {k: out[k] for k in keys}` still holds the device arrays.
    """
    while isinstance(value, cst.Subscript):
        value = value.value  # onp.asarray(f)[0]
    if not isinstance(value, cst.Call):
        return False
    qualname = values.names.qualify(value.func)
    if qualname is not None and qualname.split(".")[0] == "numpy":
        return True
    if qualname == "torch.from_numpy" or qualname is not None and qualname.startswith("torch.") and (
            qualname[len("torch."):] in HOST_BUILDERS and not any(a.keyword and a.keyword.value == "device"
                                                                  for a in value.args)):
        return True  # `m = torch.from_numpy(seg)`: a host tensor
    use = values.calls.classify(value, scope)
    if use is not None and use.kind == "d2h":
        return True
    if qualname is not None and qualname.rpartition(".")[2] in ("tree_map", "map") and value.args and \
            isinstance(value.args[0].value, cst.Lambda) and isinstance(value.args[0].value.body, cst.Call) and \
            downloaded(values, value.args[0].value.body, scope):
        return True  # `jax.tree_map(lambda x: jax.device_get(x[0]), out)`: every leaf downloaded
    func = value.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in DOWNLOADS:
        return False
    inner = func.value
    while isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute) and inner.func.attr.value in DOWNLOADS:
        inner = inner.func.value  # `n.get().item()`: the chain's first download decides
    return values.taint(inner, scope) is not None


def host_read(values: Taints, expr: cst.BaseExpression, scope: Scope, index: int, point: cst.CSTNode) -> bool:
    """Is the array a read converts (`score` of `score.numpy().item()`) surely on the host at that point?"""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        expr = expr.func.value
    return host_when_reached(values, expr, scope, index, point)


def host_before_loop(values: Taints, expr: cst.BaseExpression, loop: Loop) -> bool:
    """Is `expr`'s name surely a host value when the loop starts, and not rebound inside it?"""
    root = root_name(expr)
    if root is None:
        return False
    scope = loop.scope
    name = values.names.name_of(root)
    if any(e.kind == "bind" and e.name == name for e in scope.events[loop.start:loop.end]):
        return False
    return host_when_reached(values, expr, scope, loop.start, loop.node)
