"""Copies in loops and host-built uploads: OFF101, OFF106 (copies in loops), OFF105.

All three walk the same list of calls and classify each call once, so they
are one check. A copy inside a loop is OFF101 when it is loop-invariant
(nothing it reads, including its destination and any `with` context opened
inside the loop, changes in the loop: hoisting it is always right) and
OFF106 otherwise (per-iteration data, usually necessary, so off by default).
OFF105 is said where the upload can repeat: not in a script's start-up
(under `if __name__ == "__main__":`, outside loops), which runs once.

One cost, one finding: a copy of a host-built array in a loop is OFF105
alone, whose fix (create it on the device) removes the copy that OFF101
would hoist. A copy whose result is collected per iteration
(`[cp.asarray(x) for _ in range(n)]`, `arrays.append(cuda.to_device(x))`)
builds n distinct arrays on purpose: hoisting would alias them, so it is
OFF106, not OFF101. A copy on a branch taken only when a changing value
equals a constant (`if i == 0:`) is not per iteration and is not reported.
"""

from __future__ import annotations

import libcst as cst

from ..analysis.calls import Classified
from ..analysis.loops import few, walk
from ..analysis.parameters import root_name
from ..analysis.scopes import IndexedCall, Loop
from ..analysis.uses import path_to
from .file import CheckedFile
from .constants import constant_data, once
from .fixes import device_create_fix, hoist_fix
from .iteration import iteration_of, over_ranks
from .pythonvalues import (BLOCKING_UPLOADS, LOOP_ADVICE, PYTHON_VALUES, device_in_list, python_values, round_trip,
                           waits_anyway)
from .pythonvalues import per_call as python_values_per_call
from .registry import check

# methods that hand back a copy of an array (on another device or as another type) and change nothing
COPY_METHODS = frozenset({"to", "cpu", "cuda", "type", "get", "numpy", "tolist", "item", "list"})
COLLECTING_METHODS = frozenset({"append", "extend", "insert", "add", "appendleft", "put"})


@check("OFF101", "OFF106", "OFF105", "OFF107", "OFF108")
def transfers(file: CheckedFile) -> None:
    sem = file.sem
    creators = frozenset(file.options("OFF105").get("creators", ()))
    for call in file.index.calls:
        use = sem.calls.classify(call.node, call.scope)
        if use is None or use.kind not in ("h2d", "d2h"):
            continue
        if use.kind == "h2d":
            if _stacked_on_device(file, call, use):
                continue
            if (creators and file.enabled("OFF105") and not _start_up(file, call)
                    and _host_alloc(file, call, use, creators)):
                continue
            if file.enabled("OFF107") and _host_random(file, call, use):
                continue
        loop = call.loop
        if loop is None:
            if use.kind == "h2d" and file.enabled("OFF101") and (
                    not once(call) or file.sem.functions.hot(call.scope) is not None):  # `build_targets` of a loss
                _constant_per_call(file, call, use)
            if not file.reported("OFF101", call.node):
                python_values_per_call(file, call, use)  # `torch.tensor(0., device=d)` in a loss (pythonvalues.py)
            continue
        if sem.loops.rare_branch(call, loop):
            continue
        fields = {"api": use.api.display, "direction": use.direction, "loop_line": file.line(loop.node)}
        if sem.loops.invariant_in(call, loop) and not _collected(call) and not _device_work_on(file, call, loop, use):
            fix = hoist_fix(file, call, use) if file.enabled("OFF101") else None
            file.report("OFF101", call.node, fix, **fields, between="in the loop", advice="hoist it out")
        elif use.kind == "h2d" and device_in_list(file, call, use.data):
            file.report("OFF108", call.node, **fields, values=PYTHON_VALUES, advice=LOOP_ADVICE)  # torch.tensor([t_dev * k], device=...): read, then sent back
        elif use.kind == "h2d" and use.data is not None and not once(call) and python_values(file, call, use.data):
            if file.options("OFF108").get("constants", False) or round_trip(file, call, use.data) or (
                    use.api.library in BLOCKING_UPLOADS and not over_ranks(file, loop) and not few(loop)
                    and not waits_anyway(file, loop.calls)):
                file.report("OFF108", call.node, **fields, values=PYTHON_VALUES, advice=LOOP_ADVICE)
        elif not file.reported("OFF301", call.node):  # a metric's download is said once, as OFF301 (syncs.py)
            file.report("OFF106", call.node, **fields)


def _device_work_on(file: CheckedFile, call: IndexedCall, loop: Loop, use: Classified) -> bool:
    """Does a method of the object that holds the downloaded data run in the loop, so that it may change it?

    `example.step()` then `example.loss.numpy()`: the method runs kernels that write the loss, though no name
    is rebound (`augment_pipe.p.copy_(...)` too); so may a function defined beside the loop (`do_cycle()`),
    which sees the array through its closure. Reading the object's fields elsewhere changes nothing.
    """
    if use.kind != "d2h" or use.data is None:
        return False
    root = root_name(use.data)
    if root is None:
        return False
    closures = {n.name.value for n in walk(call.scope.node) if isinstance(n, cst.FunctionDef)
                and n is not call.scope.node}  # `def do_cycle(): ...` beside the loop: it may write anything it sees
    for other in loop.calls:
        func = other.node.func
        if isinstance(func, cst.Name) and func.value in closures:
            return True
        if other is call or not isinstance(func, cst.Attribute) or file.sem.loops.pure_call(other):
            continue
        if path_to(other.node, call.node) is not None or path_to(call.node, other.node) is not None:
            continue  # the download's own chain: `x.cpu().numpy()`
        owner = root_name(func.value)
        if owner is None or owner.value != root.value:
            continue
        method = func.attr.value
        if method.endswith("_") or method not in COPY_METHODS and file.sem.values.array_lib(owner, other.scope) is None:
            return True  # `example.step()`; on an array only an in-place method (`w.add_(...)`), and no copy (`w.to(...)`)
    return False


def _constant_per_call(file: CheckedFile, call: IndexedCall, use: Classified) -> None:
    """OFF101 for an upload, in a function every step runs, of host data fixed when its object was built.

    `th.tensor(self.timestep_map, device=ts.device)` in a model wrapper's
    `__call__`, or `th.from_numpy(arr).to(ts.device)[ts]` in a helper every
    call of which passes a schedule set in `__init__`: the same bytes cross
    the bus on every forward or sampling step. A device copy made once (a
    registered buffer, an attribute set on first use) serves every call.
    """
    it = iteration_of(file, call)
    if it is None or it.hot is None or use.data is None:
        return
    data = _unwrapped(file, use.data)
    if data is None or not constant_data(file, data, call.scope):
        return
    file.report("OFF101", call.node, api=use.api.display, direction=use.direction, where=it.where(file),
                between="between calls",
                advice="upload it once (when the object is built, or on first use) and keep the device copy")


HOST_WRAPPERS = frozenset({"torch.from_numpy", "torch.as_tensor", "torch.tensor", "torch.Tensor", "numpy.asarray",
                           "numpy.array", "numpy.ascontiguousarray"})


def _unwrapped(file: CheckedFile, data: cst.BaseExpression) -> cst.BaseExpression | None:
    """What `th.from_numpy(arr)`, `np.asarray(x)` convert (the uploaded bytes are theirs), else `data` itself."""
    while isinstance(data, cst.Call):
        positional = [a for a in data.args if a.keyword is None and not a.star]
        if file.sem.names.qualify(data.func) not in HOST_WRAPPERS or len(positional) != 1:
            return None
        data = positional[0].value
    return data


def _collected(call: IndexedCall) -> bool:
    """Is the copy's result kept per iteration (a comprehension's element, appended, stored by index)?"""
    if call.small is None:
        return False
    path = path_to(call.small, call.node)
    if path is None or len(path) < 2:
        return False
    for i in range(len(path) - 2, -1, -1):
        node, child = path[i], path[i + 1]
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return child is node.elt
        if isinstance(node, cst.DictComp):
            return child is node.value
        if isinstance(node, cst.Arg):
            continue
        if isinstance(node, cst.Call):
            return isinstance(node.func, cst.Attribute) and node.func.attr.value in COLLECTING_METHODS
        if isinstance(node, cst.Assign):
            return all(isinstance(t.target, cst.Subscript) for t in node.targets)
        if not isinstance(node, (cst.Tuple, cst.List, cst.Element)):
            return False
    return False


def _start_up(file: CheckedFile, call: IndexedCall) -> bool:
    """Is the call a script's start-up: under `if __name__ == "__main__":`, outside any loop, run once per process?

    A rollout buffer made with `torch.zeros(...).to(device)` there costs a
    host fill and one copy, once, in a run of hours: creating it on the
    device is tidier but saves nothing anyone would measure. A function
    may be called every step, so one is judged.
    """
    if call.loop is not None or call.scope.kind != "module":
        return False
    line = file.line(call.node)
    return any(first <= line <= last for first, last in _main_blocks(file))


def _main_blocks(file: CheckedFile) -> list[tuple[int, int]]:
    """The line spans of the module's `if __name__ == "__main__":` blocks."""
    spans = []
    for stmt in file.module.body:
        if isinstance(stmt, cst.If) and isinstance(stmt.test, cst.Comparison) and \
                isinstance(stmt.test.left, cst.Name) and stmt.test.left.value == "__name__" and \
                len(stmt.test.comparisons) == 1 and isinstance(stmt.test.comparisons[0].operator, cst.Equal) and \
                isinstance(stmt.test.comparisons[0].comparator, cst.SimpleString) and \
                stmt.test.comparisons[0].comparator.evaluated_value == "__main__":
            where = file.range(stmt.body)
            spans.append((where.start.line, where.end.line))
    return spans


# Numba has no device-side zeros, ones, full or arange: only an uninitialised array
# (`cuda.device_array`, `device_array_like`) replaces a host-built one without a kernel.
NUMBA_CREATORS = frozenset({"empty", "empty_like"})


def _host_alloc(file: CheckedFile, call: IndexedCall, use: Classified, creators: frozenset[str]) -> bool:
    """Report OFF105 when the uploaded array was just built on the host; True when reported."""
    data = use.data
    if use.api.library == "torch" and isinstance(data, (cst.BinaryOperation, cst.UnaryOperation, cst.Call)):
        built = _built_from_factory(file, call, data, creators)
        if built is not None and built is not data:  # `th.exp(-k * th.arange(half) / half).to(t.device)`
            qualname = file.sem.names.qualify(built.func) or "torch"
            file.report("OFF105", call.node, api=use.api.display, creator=qualname,
                        replacement=f"{qualname}(..., device=...)")
            return True
    if not isinstance(data, cst.Call):
        return False
    sem = file.sem
    qualname = sem.names.qualify(data.func)
    if qualname is None:
        return False
    head, _, creator = qualname.rpartition(".")
    if creator.endswith("_like") and data.args and sem.values.array_lib(data.args[0].value, call.scope) is not None:
        return False  # np.zeros_like(a device array) is made where the array is (NEP 18), no host copy
    inner_lib = None
    if head == "numpy" and creator in creators and use.api.library in ("cupy", "jax"):
        inner_lib = "numpy"
    elif head == "numpy" and creator in creators & NUMBA_CREATORS and use.api.library == "numba":
        inner_lib = "numpy"
    elif use.api.library == "torch" and creator in creators:
        inner = sem.calls.classify(data, call.scope)
        if inner is not None and inner.kind == "host-alloc" and inner.api.factory:
            inner_lib = "torch"
    if inner_lib is None:
        return False
    fix, replacement = device_create_fix(file, call, use, data, creator, inner_lib)
    file.report("OFF105", call.node, fix, api=use.api.display, creator=qualname, replacement=replacement)
    return True


# Element-wise torch functions: computed from a host tensor, their result is a host tensor too.
ELEMENTWISE = frozenset({"exp", "log", "sin", "cos", "sqrt", "pow", "exp2", "log2", "tanh", "sigmoid", "abs",
                         "outer", "stack", "cat"})


def _built_from_factory(file: CheckedFile, call: IndexedCall, data: cst.BaseExpression,
                        creators: frozenset[str]) -> cst.Call | None:
    """The host factory (`torch.arange(half)` without a device) an expression of numbers is computed from.

    `th.exp(-math.log(p) * th.arange(0, half) / half)` is built on the host
    and then copied: made with the factory's `device=` the whole expression
    runs on the device and nothing crosses the bus. Every array in it must
    come from such a factory (names of numbers and numbers may join them).
    """
    sem = file.sem
    found: list[cst.Call] = []

    def host_built(node: cst.BaseExpression) -> bool:
        if isinstance(node, (cst.Integer, cst.Float, cst.Name)):
            return not isinstance(node, cst.Name) or sem.values.array_lib(node, call.scope) is None
        if isinstance(node, cst.UnaryOperation):
            return host_built(node.expression)
        if isinstance(node, cst.BinaryOperation):
            return host_built(node.left) and host_built(node.right)
        if not isinstance(node, cst.Call):
            return False
        qualname = sem.names.qualify(node.func) or ""
        head, _, name = qualname.rpartition(".")
        if head == "math":
            return all(host_built(a.value) for a in node.args)
        if head == "torch" and name in ELEMENTWISE:
            return all(a.keyword is not None or host_built(a.value) for a in node.args)
        if head == "torch" and name in creators and not any(a.keyword and a.keyword.value == "device"
                                                             for a in node.args):
            inner = sem.calls.classify(node, call.scope)
            if inner is not None and inner.kind == "host-alloc" and inner.api.factory:
                found.append(node)
                return True
        return False

    return found[0] if host_built(data) and found else None


RANDOM_FILLS = frozenset({"random_", "uniform_", "normal_", "bernoulli_", "exponential_", "geometric_", "cauchy_",
                          "log_normal_"})
DEVICE_RNG = {"cupy": "cupy.random", "torch": "torch"}


def _host_uses_too(call: IndexedCall, data: cst.BaseExpression) -> bool:
    """Does the host read the drawn numbers itself in the same iteration (`r = np.random.rand(n)`, then `r.sum()`)?

    Then drawing them on the device would not spare the host its copy: it
    needs the numbers too (a host-side check, a label, a second library).
    """
    if not isinstance(data, cst.Name) or call.loop is None:
        return False
    loop = call.loop
    uses = [e for e in call.scope.events[loop.start:loop.end] if e.kind == "load" and e.name == data.value]
    return len(uses) > 1  # the upload's own read, and another


def _random_source(file: CheckedFile, call: IndexedCall, data: cst.BaseExpression) -> cst.Call | None:
    """The host random draw `data` is (directly, through a fill method, or by the name's reaching binding)."""
    sem = file.sem
    from ..analysis.loops import is_random

    node = data
    if isinstance(node, cst.Name):
        before = [e for e in call.scope.events[:call.index] if e.kind == "bind" and e.name == node.value]
        if not before or before[-1].extra[0] != "=" or not isinstance(before[-1].extra[1], cst.Call):
            return None
        node = before[-1].extra[1]
    while isinstance(node, cst.Call):
        qualname = sem.names.qualify(node.func)
        if is_random(qualname) and not qualname.startswith(("random.", "numba.")):
            if sem.values.device_lib(node, call.scope) is not None:
                return None  # torch.randn(..., device=...) is drawn on the device already
            return node
        if isinstance(node.func, cst.Attribute):
            if node.func.attr.value in RANDOM_FILLS:
                return node
            node = node.func.value  # .long(), .float(): keep looking at what they convert
            continue
        return None
    return None


def _host_random(file: CheckedFile, call: IndexedCall, use: Classified) -> bool:
    """OFF107: numbers drawn by a host generator, then uploaded, where the device library draws them itself."""
    if use.api.library not in DEVICE_RNG or use.data is None or call.loop is None or once(call):
        return False  # drawn once (setup, a warm-up input): the copy is paid once
    draw = _random_source(file, call, use.data)
    if draw is None or _host_uses_too(call, use.data):
        return False
    sem = file.sem
    qualname = sem.names.qualify(draw.func) or ""
    creator = qualname.rpartition(".")[2]
    fix = None
    if use.api.library == "torch" and qualname.startswith("torch.") and draw is use.data:
        fix, replacement = device_create_fix(file, call, use, draw, creator, "torch", safety="unsafe")
    elif use.api.library == "torch" and isinstance(draw.func, cst.Attribute):
        fill = draw.func.attr.value  # torch.LongTensor(n).random_(8): fill a tensor made on the device
        replacement = f"a tensor created on the device and filled there (torch.empty(..., device=...).{fill}(...))"
    elif use.api.library == "torch":
        replacement = "a torch creator with device= (torch.randn/rand/randint(..., device=...))"
    else:
        replacement = f"cupy.random.{creator}(...)" if qualname.startswith("numpy.random.") else "cupy.random"
    file.report("OFF107", call.node, fix, api=use.api.display, draw=file.code(draw.func), replacement=replacement)
    return True


def _stacked_on_device(file: CheckedFile, call: IndexedCall, use: Classified) -> bool:
    """`cupy.asarray((rho_a, rho_b))` of CuPy arrays: CuPy stacks a sequence of its own arrays on the device
    (it concatenates them; nothing is read or uploaded), unlike `torch.tensor([t1, t2])`, which reads each."""
    data = use.data
    if use.api.library != "cupy" or not isinstance(data, (cst.List, cst.Tuple)) or not data.elements:
        return False
    return all(not isinstance(e, cst.StarredElement) and file.sem.values.device_lib(e.value, call.scope) == "cupy"
               for e in data.elements)
