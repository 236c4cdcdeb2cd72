"""Library idioms recognised by their shape: an array-agnostic library's array module, a module's weights.

`values.DeviceValues` asks these when a name alone does not say where a
value lives: `xp = get_array_module(x)` computes where `x` lives (written
for CuPy), and `for p in model.parameters()` walks tensors that live where
the model computes.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from .names import Names
from .scopes import Scope
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


def _word(name: str) -> str:
    return name.replace("_", "").lower()


_WORDS = frozenset(_word(w) for w in ARRAY_MODULE_WORDS)


def parameters_of_module(source: cst.BaseExpression) -> bool:
    """`model.parameters()`, `m.named_parameters()`: a torch module's weights, where the model computes."""
    return (isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute)
            and source.func.attr.value in ("parameters", "named_parameters"))
