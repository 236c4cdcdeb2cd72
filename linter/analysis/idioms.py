"""Library idioms recognised by their shape: an array-agnostic library's array module, a module's weights.

`values.DeviceValues` asks these when a name alone does not say where a
value lives: `xp = get_array_module(x)` computes where `x` lives (written
for CuPy), and `for p in model.parameters()` walks tensors that live where
the model computes.
"""

from __future__ import annotations

import re
from typing import Any

import libcst as cst

from .classes import method_class
from .names import Names
from .scopes import ModuleIndex, Scope
from .valuewords import ARRAY_MODULE_WORDS, array_module_name


def array_module(value: Any) -> bool:
    """Is `value` the array module of an array-agnostic library: `get_array_module(x)`, `device.xp`?

    A project's own spelling of the call counts too (PtyLab's `getArrayModule(x)`, `get_arraymodule`):
    the words are compared without case and underscores.
    """
    if isinstance(value, cst.Attribute):
        return _word(value.attr.value) in _WORDS
    if isinstance(value, cst.Call):
        func = value.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        return _word(name) in _WORDS
    return False


def array_module_variable(names: Names, name: str, scope: Scope) -> bool:
    """Does the name hold an array module: `xp`, `xp_storage`, a parameter `xp=np` that GPU callers pass CuPy, or a
    name bound to one (`mod = getArrayModule(x)`)?"""
    return array_module_name(name) or any(
        how == "=" and array_module(value) for how, value in names.assignments(name, scope))


#: the array modules a program compares against to ask where its arrays live (`if xp != np:`)
MODULES = frozenset({"numpy", "cupy", "torch", "jax.numpy", "chainer.backends.cuda.cupy", "chainerx"})


def module_comparison(names: Names, test: cst.Comparison, scope: Scope) -> bool:
    """`xp != np`, `cuda.get_array_module(x) is cupy`: a comparison of modules, a Python bool made on the host
    whatever the arrays hold (the module of a CuPy array is no device value)."""
    def module(side: cst.BaseExpression) -> bool:
        if array_module(side):
            return True
        return isinstance(side, (cst.Name, cst.Attribute)) and (names.qualify(side) in MODULES or (
            isinstance(side, cst.Name) and array_module_variable(names, names.name_of(side), scope)))
    return any(module(side) for side in (test.left, *(c.comparator for c in test.comparisons)))


def _word(name: str) -> str:
    return name.replace("_", "").lower()


_WORDS = frozenset(_word(w) for w in ARRAY_MODULE_WORDS)


def parameters_of_module(source: cst.BaseExpression) -> bool:
    """`model.parameters()`, `m.named_parameters()`: a torch module's weights, where the model computes."""
    return (isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute)
            and source.func.attr.value in ("parameters", "named_parameters"))


# Classes whose instances are tensors, though their names are capitalised like a module's.
TENSOR_CLASSES = re.compile(r"Tensor$|^Parameter$|^Buffer$|^Variable$")


def module_object(idx: ModuleIndex, names: Names, expr: cst.BaseExpression, scope: Scope) -> bool:
    """Is `expr` an object built by a class (`self.mel = MelSpectrogram(...)`, `self.losses = nn.ModuleList(...)`),
    not an array? Its `.to(x.device)` moves its weights once and then returns it unchanged: no copy per call."""
    if isinstance(expr, cst.Attribute):
        owner = method_class(expr.value, scope)
        if owner is None:
            return False
        values = [v for method, attr, v in idx.self_stores if method.parent is owner and attr == expr.attr.value]
    elif isinstance(expr, cst.Name):
        bindings = names.assignments(names.name_of(expr), scope)
        values = [v for how, v in bindings if how == "="] if all(how == "=" for how, _ in bindings) else []
    else:
        return False
    return bool(values) and all(_built_by_class(v) for v in values)


def _built_by_class(value: object) -> bool:
    if not isinstance(value, cst.Call):
        return False
    func = value.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name[:1].isupper() and not TENSOR_CLASSES.search(name)
