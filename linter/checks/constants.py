"""Host data fixed when its object was built: what an upload in a per-step function sends again on every call.

A diffusion model keeps its noise schedule as NumPy arrays set in
`__init__` and uploads the entry it needs on every training and sampling
step (`th.from_numpy(self.alphas).to(t.device)[t]`, often through a helper
that every caller hands such an attribute); a model wrapper re-uploads its
timestep map on every forward. Nothing in the loop's own body shows the
copy, and the data never changes after construction, so one device copy
made then would serve every call. This module says which expressions hold
such data, within one file: an attribute of the method's own class that
only set-up methods assign and nothing mutates, or a parameter that every
call of the function in the file is given such an attribute for.
"""

from __future__ import annotations

import re

import libcst as cst

from ..analysis.children import children
from ..analysis.classes import method_class
from ..analysis.scopes import IndexedCall, Scope, dotted
from .file import CheckedFile

SETUP_FUNCTION = re.compile(r"^(?:__init__|__setstate__|__post_init__|setup|set_up|reset_parameters|"
                            r"load\w*|_load\w*|init\w*|_init\w*|build\w*|from_\w+|create\w*|\w+_initiali[sz]e\w*)$")
# Methods that change a container or an array in place.
MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault", "sort",
                      "reverse", "fill", "put", "resize", "itemset", "__setitem__", "add", "discard"})


def constant_data(file: CheckedFile, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
    """Is `expr` host data fixed at construction: a set-up-only attribute, or a parameter always given one?"""
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
        owner = method_class(expr.value, scope)
        return owner is not None and _fixed_attribute(file, owner, expr.attr.value)
    if isinstance(expr, cst.Name) and depth == 0:
        return _always_given_constant(file, expr.value, scope)
    if isinstance(expr, (cst.List, cst.Tuple)) and depth == 0:
        return _literal_table(expr) >= 2  # `torch.tensor([[0, 0], [1, 0], ...], device=d)`: an offsets table
    if isinstance(expr, cst.BinaryOperation):  # `1.0 - self.alphas_cumprod`
        return all(_number(side) or constant_data(file, side, scope, depth) for side in (expr.left, expr.right)) \
            and not (_number(expr.left) and _number(expr.right))
    if isinstance(expr, cst.Subscript):  # `self.betas[1:]`
        return constant_data(file, expr.value, scope, depth) and all(
            _literal_index(e.slice) for e in expr.slice)
    if isinstance(expr, cst.Call):  # `np.log(np.append(self.var[1], self.betas[1:]))`: the same bytes every call
        qualname = file.sem.names.qualify(expr.func)
        return qualname is not None and qualname.split(".")[0] == "numpy" and bool(expr.args) and all(
            not a.star and (_number(a.value) if a.keyword is not None else
                            _number(a.value) or constant_data(file, a.value, scope, depth)) for a in expr.args)
    return False


def _literal_table(node: cst.BaseExpression) -> int:
    """How many numbers a nested list/tuple literal of numbers holds (0 when anything else is in it)."""
    if _number(node):
        return 1
    if not isinstance(node, (cst.List, cst.Tuple)) or not node.elements:
        return 0
    counts = [0 if isinstance(e, cst.StarredElement) else _literal_table(e.value) for e in node.elements]
    return 0 if 0 in counts else sum(counts)


def _number(node: cst.BaseExpression) -> bool:
    return isinstance(node, (cst.Integer, cst.Float)) or isinstance(node, cst.UnaryOperation) and isinstance(
        node.expression, (cst.Integer, cst.Float))


def _literal_index(index: cst.BaseSlice) -> bool:
    if isinstance(index, cst.Index):
        return _number(index.value)
    if isinstance(index, cst.Slice):
        return all(part is None or _number(part) for part in (index.lower, index.upper, index.step))
    return False


def _fixed_attribute(file: CheckedFile, owner: Scope, attr: str) -> bool:
    """Only set-up methods of `owner` assign `self.<attr>`, to host data, and no method changes it in place."""
    stores = [(s, value) for s, name, value in file.index.self_stores if s.parent is owner and name == attr]
    if not stores:
        return False
    for s, value in stores:
        if SETUP_FUNCTION.match(s.name) is None or file.sem.values.device_lib(value, s) is not None:
            return False
    return not _mutated(owner.node, attr)


def _mutated(class_node: cst.CSTNode, attr: str) -> bool:
    """Does any method write into `self.<attr>` (`+=`, an item, a mutating method)?"""
    target = f"self.{attr}"

    def hits(node: cst.CSTNode) -> bool:
        while isinstance(node, cst.Subscript):
            node = node.value
        return dotted(node) == target

    stack: list[cst.CSTNode] = [class_node]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.AugAssign) and hits(node.target):
            return True
        if isinstance(node, cst.Assign) and any(isinstance(t.target, cst.Subscript) and hits(t.target)
                                                for t in node.targets):
            return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                node.func.attr.value in MUTATORS and hits(node.func.value):
            return True
        stack.extend(children(node))
    return False


def _always_given_constant(file: CheckedFile, name: str, scope: Scope) -> bool:
    """Is `name` a parameter of `scope`'s function that most calls of it in the file (two at least) pass constant
    data for (the upload says the data is on the host, whatever a caller's name may also hold elsewhere)?"""
    node = scope.node
    if scope.kind != "function" or not isinstance(node, cst.FunctionDef) or name not in scope.params:
        return False
    params = [p.name.value for p in (*node.params.posonly_params, *node.params.params)]
    method = scope.parent is not None and scope.parent.kind == "class"
    position = params.index(name) - (1 if method else 0) if name in params else -1
    calls = constant = 0
    for call in file.index.calls:
        func = call.node.func
        callee = func.value if isinstance(func, cst.Name) else \
            func.attr.value if method and isinstance(func, cst.Attribute) else None
        if callee != scope.name:
            continue
        arg = _argument(call.node, name, position)
        calls += 1
        constant += arg is not None and constant_data(file, arg, call.scope, depth=1)
    return constant >= 2 and 2 * constant >= calls  # the helper's usual input (a schedule's arrays)


def _argument(call: cst.Call, name: str, position: int) -> cst.BaseExpression | None:
    """The argument a call passes for parameter `name` (at `position` among the positional ones)."""
    positional = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            if arg.keyword.value == name:
                return arg.value
            continue
        if positional == position:
            return arg.value
        positional += 1
    return None


def once(call: IndexedCall) -> bool:
    """Is the call in set-up code that runs once (`__init__`, `__setstate__`, `load_*`, `build_*`)?

    A loop there (over parameters, over layers) repeats per object, not per
    step, so a small per-iteration cost is paid once.
    """
    scope = call.scope
    while scope is not None and scope.kind not in ("function", "module"):
        scope = scope.parent
    return scope is not None and scope.kind == "function" and SETUP_FUNCTION.match(scope.name) is not None
