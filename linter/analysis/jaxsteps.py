"""Which calls run a compiled JAX step, whose outputs stay on the device until something downloads them.

JAX code builds its steps with `jax.jit`/`pmap` in one place and calls them
in another: through a decorated function of the file, a name bound to
`jax.pmap(...)`, or names such as `p_train_step` and `self.eval_fn`. What
such a call returns is a device array, whatever the analysis knows of its
arguments.
"""

from __future__ import annotations

import libcst as cst

from .names import Names
from .scopes import Scope
from .valuewords import COMPILERS, JAX_STEP


def jitted(names: Names, function: Scope) -> bool:
    """A function of the file decorated with `@jax.jit`, `@partial(jax.pmap, ...)`, `@eqx.filter_jit`."""
    node = function.node
    if not isinstance(node, cst.FunctionDef):
        return False
    for decorator in node.decorators:
        expr = decorator.decorator
        target = expr.func if isinstance(expr, cst.Call) else expr
        if isinstance(expr, cst.Call) and expr.args and (names.qualify(target) or "").endswith("partial"):
            target = expr.args[0].value
        name = names.qualify(target) or (target.attr.value if isinstance(target, cst.Attribute) else "")
        if name.rpartition(".")[2] in ("jit", "pmap", "filter_jit", "filter_pmap"):
            return True
    return False


def compiled(names: Names, func: cst.BaseExpression, scope: Scope) -> bool:
    """`infer = jax.pmap(partial(model.apply, train=False)); infer(...)`: a name bound only to a compiled step."""
    if not isinstance(func, cst.Name):
        return False
    bindings = names.assignments(names.name_of(func), scope)
    values = [v for how, v in bindings if how == "="]
    return bool(values) and len(values) == len(bindings) and all(
        isinstance(v, cst.Call) and (names.qualify(v.func) or "").startswith("jax.")
        and (names.qualify(v.func) or "").rpartition(".")[2] in COMPILERS for v in values)


def jax_step(func: cst.BaseExpression) -> bool:
    """`self.eval_fn(...)`, `p_train_step(...)`, `predict_fn(...)` in a JAX file: named as a compiled step."""
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return bool(JAX_STEP.match(name))
