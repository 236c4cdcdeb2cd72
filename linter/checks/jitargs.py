"""NumPy arrays handed to a compiled JAX function in a loop: copied to the device on every call (OFF101).

`params = update(params, X, y)`, with `update = jax.jit(step)` or `@jax.jit`
and `X` a NumPy array made before the loop: JAX turns every NumPy argument
into a device array at each call, and nothing keeps that copy, so data that
does not change in the loop crosses the bus every iteration (for a dataset,
the whole of it). `X = jax.device_put(X)` before the loop copies it once; the
compiled function takes the device array as it is.

Only what is plainly a host array is reported: a name every binding of which
is a NumPy array constructor (`np.array`, `np.load`, `np.random.randn`, ...)
or a scikit-learn dataset (`X, y = make_regression(...)`), passed as it is,
and not rebound in the loop. A batch sliced from it per iteration is new data
each time (OFF106's business), and code JAX only traces makes no host call.
"""

from __future__ import annotations

import libcst as cst

from ..analysis.functions import TRACERS
from ..analysis.loops import few
from ..analysis.scopes import IndexedCall, Scope, Unpack
from .file import CheckedFile
from .registry import check

#: NumPy functions that make an array (not a scalar: `np.float32(x)`, `np.mean(a)` hand back numbers)
ARRAY_MAKERS = frozenset({
    "array", "asarray", "ascontiguousarray", "zeros", "ones", "empty", "full", "zeros_like", "ones_like",
    "empty_like", "full_like", "arange", "linspace", "logspace", "eye", "identity", "load", "loadtxt", "genfromtxt",
    "fromfile", "frombuffer", "concatenate", "stack", "vstack", "hstack", "tile", "repeat", "meshgrid", "diag",
    "outer", "kron", "copy",
})
ADVICE = "put it on the device once before the loop (`x = jax.device_put(x)`) and pass the device array"


@check("OFF101")
def jit_arguments(file: CheckedFile) -> None:
    sem = file.sem
    if "jax" not in sem.names.libraries:
        return
    for call in file.index.calls:
        loop = call.loop
        if loop is None or loop.kind == "comp" or few(loop) or sem.functions.traced_only(call.scope):
            continue
        compiled = _compiled(file, call)
        if compiled is None or sem.loops.rare_branch(call, loop):
            continue
        changed: set[str] | None = None
        for arg in call.node.args:
            value = arg.value
            if arg.star or not isinstance(value, cst.Name) or not _host_array(file, value.value, call.scope):
                continue
            if changed is None:  # a compiled function cannot change a NumPy array it is given; another call may
                changed = set(sem.loops.rebound_or_stored(loop))
                for other in loop.calls:
                    if _compiled(file, other) is None:
                        changed |= sem.loops.mutated_by(other)
            if value.value in changed:
                continue
            file.report("OFF101", value, api=f"passing the NumPy array `{value.value}` to the compiled `{compiled}`",
                        direction="host->device", where=f"iteration of the loop at line {file.line(loop.node)}",
                        between="in the loop", advice=ADVICE)


def _compiled(file: CheckedFile, call: IndexedCall) -> str | None:
    """The name of the compiled JAX function `call` runs: a name bound to `jax.jit(f)` (or another tracer), a
    function defined with `@jax.jit`, or `jax.jit(f)(...)` itself; None for anything else."""
    sem = file.sem
    func = call.node.func
    if isinstance(func, cst.Call) and sem.names.qualify(func.func) in TRACERS:
        return "jax.jit(...)"
    if not isinstance(func, cst.Name):
        return None
    bindings = sem.names.assignments(func.value, call.scope)
    if bindings and all(how == "=" and isinstance(value, cst.Call) and sem.names.qualify(value.func) in TRACERS
                        for how, value in bindings):
        return func.value
    target = sem.functions.callee(call)
    return func.value if target is not None and target in sem.functions.traced() else None


def _host_array(file: CheckedFile, name: str, scope: Scope) -> bool:
    """Is every binding of `name` a NumPy array constructor or a scikit-learn dataset?"""
    names = file.sem.names
    bindings = names.assignments(name, scope)
    if not bindings:
        return False
    for how, value in bindings:
        source = value.source if isinstance(value, Unpack) else value
        if how not in ("=", "unpack") or not isinstance(source, cst.Call):
            return False
        qualname = names.qualify(source.func) or ""
        parts = qualname.split(".")
        if isinstance(value, Unpack):
            if not qualname.startswith("sklearn.datasets."):
                return False
        elif parts[0] != "numpy" or not (parts[-1] in ARRAY_MAKERS or (len(parts) > 2 and parts[1] == "random")):
            return False
    return True
