"""What the branch and mask rules ask of a value: is it on the device, and is it a boolean mask?

Shared by `branches` (tests of `if`, `while`, `assert`) and `masks`
(boolean-mask indexing): both read device values without a call, through
Python's truth test or a subscript, so neither is in the catalog's API
lists. A PyTorch tensor of unknown placement counts as on the device in a
function that runs once per step (see `syncs._tensor_read` for why).
"""

from __future__ import annotations

import re

import libcst as cst

from ..analysis.scopes import Scope
from .file import CheckedFile
from .iteration import Iteration

# Calls and methods that give a boolean array of their array argument's library.
MASK_FUNCTIONS = frozenset({"isnan", "isfinite", "isinf", "isneginf", "isposinf", "logical_and", "logical_or",
                            "logical_not", "logical_xor", "isclose", "signbit", "isin", "greater", "less",
                            "equal", "not_equal", "greater_equal", "less_equal"})
MASK_METHODS = frozenset({"bool", "isnan", "isfinite", "isinf", "logical_not", "logical_and", "logical_or",
                          "eq", "ne", "gt", "lt", "ge", "le"})
MASK_NAME = re.compile(r"mask|^is_|_(?:lt|gt|le|ge|eq|ne)\d*$|^(?:valid|keep|inside|outside)(?:_|$)|_bool$")
TENSOR_METHODS = frozenset({"sum", "mean", "all", "any", "nonzero", "max", "min", "abs", "norm", "float", "bool",
                            "isfinite", "isnan", "prod", "argmax", "argmin", "count_nonzero"})
COMPARISONS = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)


def device_lib(file: CheckedFile, expr: cst.BaseExpression, scope: Scope, it: Iteration) -> str | None:
    """The library of a value on the device here: certain, or a tensor of unknown place in a per-step function."""
    values = file.sem.values
    lib = values.device_lib(expr, scope)
    if lib is not None:
        return lib
    maybe = values.array_lib(expr, scope)
    in_step = file.sem.functions.torch and (it.hot is not None or file.sem.functions.hot(scope) is not None)
    if maybe == "torch" and in_step:
        return maybe
    if in_step and maybe is None and _tensor_method(expr) and not _numpy_made(file, expr, scope):
        return "torch"  # `(gt == k).sum()`, `x.nonzero()` in a loss: a tensor, whatever made its inputs
    return None


def _tensor_method(expr: cst.BaseExpression) -> bool:
    """A call of a method only arrays have (`.sum()`, `.all()`, `.nonzero()`), or a comparison of such."""
    if isinstance(expr, cst.Comparison):
        return _tensor_method(expr.left) or any(_tensor_method(c.comparator) for c in expr.comparisons)
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        return expr.func.attr.value in TENSOR_METHODS
    return False


def _numpy_made(file: CheckedFile, expr: cst.BaseExpression, scope: Scope) -> bool:
    while isinstance(expr, (cst.Call, cst.Attribute, cst.Subscript)):
        if isinstance(expr, cst.Call):
            qualname = file.sem.names.qualify(expr.func)
            if qualname is not None:
                return qualname.split(".")[0] == "numpy"
            expr = expr.func
        expr = expr.value if isinstance(expr, (cst.Attribute, cst.Subscript)) else expr
    if isinstance(expr, cst.Name):
        return file.sem.names.is_host_array(file.sem.names.name_of(expr), scope)
    return False


def is_mask(file: CheckedFile, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
    """Is `expr` a boolean array: a comparison, `~m`, `m & n`, `isnan(x)`, `x.bool()`, or a name bound to one?"""
    if depth > 6:
        return False
    if isinstance(expr, cst.Comparison):
        return all(isinstance(c.operator, COMPARISONS) for c in expr.comparisons)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
        return is_mask(file, expr.expression, scope, depth + 1)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
        return is_mask(file, expr.left, scope, depth + 1) or is_mask(file, expr.right, scope, depth + 1)
    if isinstance(expr, cst.Call):
        func = expr.func
        qualname = file.sem.names.qualify(func)
        if qualname is not None:
            return qualname.rpartition(".")[2] in MASK_FUNCTIONS and qualname.split(".")[0] in ("cupy", "torch",
                                                                                                  "jax", "numpy")
        if isinstance(func, cst.Attribute):
            name = func.attr.value
            if name in MASK_METHODS:
                return True
            if name == "astype" and expr.args and _names_bool(expr.args[0].value):
                return True
        return False
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return MASK_NAME.search(expr.attr.value) is not None  # `self.radial_mask`: what a class keeps its masks as
    if isinstance(expr, cst.Name):
        bindings = file.sem.names.assignments(file.sem.names.name_of(expr), scope)
        if any(how == "=" and _indices(file, v) for how, v in bindings):
            return False  # `mask = cupy.where(cond)[0]`: integer positions, whatever the name says
        if MASK_NAME.search(expr.value):
            return True  # `aux_lt0, aux_gt0 = kernel(...)`, `valid_mask`: what a kernel's boolean outputs are called
        values = [v for how, v in bindings if how == "="]
        return bool(values) and len(values) == len(bindings) and all(
            isinstance(v, cst.BaseExpression) and is_mask(file, v, scope, depth + 1) for v in values)
    return False


def _indices(file: CheckedFile, value: object) -> bool:
    """`where(cond)[0]`, `nonzero(m)[0]`, `m.nonzero()[0]`, `argwhere(m)`, `flatnonzero(m)`: integer positions."""
    if isinstance(value, cst.Subscript):
        value = value.value
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    qualname = file.sem.names.qualify(func) or ""
    last = qualname.rpartition(".")[2] if qualname else func.attr.value if isinstance(func, cst.Attribute) else ""
    if last == "where":
        return len([a for a in value.args if a.keyword is None]) == 1  # one-argument where is nonzero
    return last in ("nonzero", "argwhere", "flatnonzero")


def _names_bool(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Name):
        return expr.value == "bool"
    if isinstance(expr, cst.Attribute):
        return expr.attr.value in ("bool_", "bool")
    return False


def short(file: CheckedFile, node: cst.CSTNode) -> str:
    """A node's code on one line, cut to 40 characters, for a message."""
    text = " ".join(file.code(node).split())
    return text if len(text) <= 40 else text[:37] + "..."
