"""Where a function's parameters come from: the arguments its callers bind, and a module's inputs.

`DeviceValues` asks two things of a parameter it has no annotation for.
Which arguments reach it: a plain call `f(x)` of a function of the file,
or `self.get_losses(outputs, labels)` from another method of the same
class (real PyTorch code computes its losses in methods of the head that
`forward` calls, not in free functions). And whether it is an input of a
`torch.nn.Module.forward`: what a model is called with lives on the device
its parameters live on, so in a file that imports torch an input of
`forward` is a tensor on the device unless its default or annotation says
it is a Python value (`stride=1`, `size: int`); an input after the first
that `forward` uses as a number (`H * W` in `forward(self, x, H, W)` of a
Swin block) and never as an array (`labels[:, 0]`) is a Python value too.
"""

from __future__ import annotations

import libcst as cst

from .children import visit
from .names import Names
from .scopes import IndexedCall, Scope

# Annotations that say a `forward` input is a Python value, not a tensor.
PYTHON_TYPES = frozenset({"int", "float", "bool", "str", "bytes", "tuple", "list", "dict", "Tuple", "List", "Dict",
                          "Sequence", "Callable", "Any"})


def root_name(expr: cst.BaseExpression) -> cst.Name | None:
    """`data` of `data[::2]`, `data.T`, `data`: the name a slice or attribute of an argument starts from."""
    while isinstance(expr, (cst.Subscript, cst.Attribute)):
        expr = expr.value
    return expr if isinstance(expr, cst.Name) else None


def bound_arg(call: cst.Call, positional: list[str], name: str) -> cst.BaseExpression | None:
    """The argument of `call` that parameter `name` receives (None when starred arguments hide it)."""
    if any(a.star for a in call.args):
        return None
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    plain = [a for a in call.args if a.keyword is None]
    if name in positional and positional.index(name) < len(plain):
        return plain[positional.index(name)].value
    return None


def positional_params(node: cst.FunctionDef) -> list[str]:
    return [p.name.value for p in (*node.params.posonly_params, *node.params.params)]


def is_method(function: Scope) -> bool:
    node = function.node
    return (isinstance(node, cst.FunctionDef) and function.parent is not None and function.parent.kind == "class"
            and bool(positional_params(node)))


def method_calls(names: Names, function: Scope) -> list[IndexedCall]:
    """`self.name(...)` calls of the method `function` from the other methods of its class."""
    owner = function.parent
    if owner is None or not is_method(function):
        return []
    out = []
    for call in names.idx.calls:
        func = call.node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == function.name and isinstance(func.value, cst.Name)):
            continue
        caller = call.scope
        while caller.kind == "lambda" and caller.parent is not None:
            caller = caller.parent
        if caller is function or caller.parent is not owner or not is_method(caller):
            continue
        assert isinstance(caller.node, cst.FunctionDef)
        if positional_params(caller.node)[0] == func.value.value:
            out.append(call)
    return out


def forward_input(names: Names, function: Scope, name: str) -> bool:
    """Is `name` a tensor input of `forward` of a class in a PyTorch file?"""
    node = function.node
    if "torch" not in names.libraries or not isinstance(node, cst.FunctionDef) or node.name.value != "forward":
        return False
    if not is_method(function):
        return False
    params = [*node.params.posonly_params, *node.params.params, *node.params.kwonly_params]
    if params and params[0].name.value == name:
        return False  # self
    for param in params:
        if param.name.value != name:
            continue
        if param.default is not None and not (isinstance(param.default, cst.Name) and param.default.value == "None"):
            return False  # stride=1, training=False: Python values
        if param.annotation is not None:
            text = names.idx.module.code_for_node(param.annotation.annotation)
            words = {w for w in text.replace("[", " ").replace("]", " ").replace(",", " ").replace("|", " ").split()}
            if words & PYTHON_TYPES and not any("Tensor" in w for w in words):
                return False
        first = params[1] if len(params) > 1 else None
        if param is first:
            return True
        uses = _Uses(name)
        visit(node.body, uses)
        return uses.array or not uses.number
    return False


class _Uses(cst.CSTVisitor):
    """How `forward` uses an input: as an array (`labels[:, 0]`, `mask.float()`) or as a number (`H * W`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.array = False
        self.number = False

    def _is(self, node: cst.BaseExpression) -> bool:
        return isinstance(node, cst.Name) and node.value == self.name

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.array |= self._is(node.value)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self.array |= self._is(node.value)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self.number |= self._is(node.left) or self._is(node.right)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        self.number |= self._is(node.left) or any(self._is(c.comparator) for c in node.comparisons
                                                  if not isinstance(c.operator, (cst.Is, cst.IsNot)))
