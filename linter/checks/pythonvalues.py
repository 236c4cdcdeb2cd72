"""Python values turned into device arrays: what counts as one, and when the upload is worth saying (OFF108).

`torch.tensor([i] * n, device=dev)`, `cp.array(i)`, `torch.tensor(0, device=x.device)`: a few numbers
the host knows, copied to the device. PyTorch copies pageable memory with a stream sync and CuPy with a
synchronous copy, so each such upload waits for the device's queue: where nothing else in the iteration
waits (`waits_anyway`), it is what keeps the host from running ahead. `transfers` asks these questions for
copies in loops; `per_call` asks them for a function every step runs (a module's `forward`, a loss): there
`torch.tensor(0., device=logits.device)` in a loss syncs the stream on every training step, and
`logits.new_zeros(())` does not.
"""

from __future__ import annotations

import libcst as cst

from ..analysis.calls import Classified
from ..analysis.loops import walk
from ..analysis.scopes import IndexedCall, Unpack
from .file import CheckedFile
from .iteration import iteration_of

# What turns Python values into an array (not a creator such as np.zeros(shape), OFF105's business).
CONVERSIONS = frozenset({"tensor", "as_tensor", "Tensor", "array", "asarray", "asanyarray", "LongTensor",
                         "FloatTensor", "IntTensor", "BoolTensor", "DoubleTensor", "HalfTensor"})
PYTHON_BUILDERS = frozenset({"builtins.list", "builtins.tuple", "builtins.int", "builtins.float", "builtins.len",
                             "builtins.range", "builtins.sorted", "builtins.sum", "builtins.min", "builtins.max"})


def device_in_list(file: CheckedFile, call: IndexedCall, data: cst.BaseExpression | None) -> bool:
    """A list literal holding a device value: each element is read to the host, then the list is uploaded."""
    if not isinstance(data, (cst.List, cst.Tuple)):
        return False
    return any(not isinstance(e, cst.StarredElement) and (
        file.sem.values.device_at(e.value, call) if isinstance(e.value, cst.Name)
        else file.sem.values.device_lib(e.value, call.scope) is not None) for e in data.elements)


# Libraries whose upload of a Python list blocks the host until the device's queue is done (PyTorch copies
# pageable memory with a stream sync, CuPy with a synchronous copy); JAX puts it on the device asynchronously.
#: what OFF108 advises for values uploaded per iteration of a loop, and per call of a function every step runs
PYTHON_VALUES = "Python values"  # what OFF108 says is uploaded, unless the index is NumPy's own positions
LOOP_ADVICE = "collect the values and upload them once after the loop, or compute them on the device"
CALL_ADVICE = ("create the value on the device (`x.new_zeros(())`, `torch.full((), v, device=x.device)`), or pass "
               "the Python number itself where the operation takes one")
BLOCKING_UPLOADS = frozenset({"torch", "cupy"})
WAITING_METHODS = frozenset({"item", "tolist", "cpu", "numpy", "get", "synchronize", "block_until_ready", "asnumpy"})


def waits_anyway(file: CheckedFile, calls: list[IndexedCall]) -> bool:
    """Does the iteration make the host wait for the device elsewhere (a read, a download, a sync, a blocking
    upload of an array)?

    A tiny blocking upload waits for the device's queue: where nothing else
    in the iteration does, it is the wait that keeps the host from queueing
    the next step (a sampler's `torch.tensor([i] * n, device=dev)` per
    step); beside a read the iteration makes anyway, it costs only its
    own few microseconds.
    """
    sem = file.sem
    for call in calls:  # every call of the iteration (inner loops' too), or of the function
        func = call.node.func
        if isinstance(func, cst.Attribute) and func.attr.value in WAITING_METHODS:
            return True
        use = sem.calls.classify(call.node, call.scope)
        if use is not None and use.kind in ("sync", "d2h"):
            return True
        if use is not None and use.kind == "h2d" and use.data is not None and not python_values(file, call, use.data) \
                and not any(a.keyword is not None and a.keyword.value == "non_blocking" for a in call.node.args):
            return True  # `b.to(dev)` of a batch: a blocking copy of real data waits for the queue as well
        if sem.names.qualify(func) in ("builtins.float", "builtins.int", "builtins.bool") and call.node.args and \
                sem.values.device_lib(call.node.args[0].value, call.scope) is not None:
            return True
    return False


def round_trip(file: CheckedFile, call: IndexedCall, data: cst.BaseExpression, depth: int = 0) -> bool:
    """Do the uploaded values come from the device (`w = t.argmax().item()`, `[t_dev * s]`): read, then sent back?

    Measured on public code (docs/linter.md), these are the tiny uploads an
    expert changes: the value was on the device a moment ago and can stay
    there. Constants the host knows (an image's width and height) cost one
    small copy and are left to the `constants` option.
    """
    if depth > 3:
        return False
    sem = file.sem
    for node in walk(data):
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in ("item", "tolist") and not node.args:
                if sem.values.array_lib(func.value, call.scope) is not None:
                    return True
            elif sem.names.qualify(func) in ("builtins.int", "builtins.float") and node.args:
                if sem.values.array_lib(node.args[0].value, call.scope) is not None:
                    return True
        elif isinstance(node, cst.Name):
            if sem.values.device_at(node, call):
                return True  # torch.tensor([scale_dev * k]): a device value inside the Python list (as bound here)
            for how, value in sem.names.assignments(sem.names.name_of(node), call.scope):
                if how == "=" and isinstance(value, cst.BaseExpression) and round_trip(file, call, value, depth + 1):
                    return True
    return False


def _counted(file: CheckedFile, call: IndexedCall, name: cst.Name) -> bool:
    """Is the list `name` walks made of `range(...)` alone (`list(range(n))[::-1]`): step numbers?"""
    bindings = file.sem.names.assignments(file.sem.names.name_of(name), call.scope)
    if not bindings:
        return False
    for how, value in bindings:
        if how != "=" or not isinstance(value, cst.BaseExpression):
            return False
        calls = [file.sem.names.qualify(n.func) for n in walk(value) if isinstance(n, cst.Call)]
        if "builtins.range" not in calls or any(q not in PYTHON_BUILDERS for q in calls):
            return False
    return True


def python_values(file: CheckedFile, call: IndexedCall, data: cst.BaseExpression, depth: int = 0) -> bool:
    """Is the uploaded value built from Python numbers and lists (not an array the program computed)?"""
    if depth > 4:
        return False
    sem = file.sem
    if isinstance(data, (cst.Integer, cst.Float)):
        return True
    if isinstance(data, (cst.List, cst.Tuple)):
        return all(python_values(file, call, e.value, depth + 1) or sem.values.array_lib(e.value, call.scope) is None
                   and not isinstance(e.value, cst.StarredElement) for e in data.elements)
    if isinstance(data, cst.ListComp):
        return sem.values.array_lib(data.elt, call.scope) is None
    if isinstance(data, cst.BinaryOperation):
        if isinstance(data.operator, cst.Multiply) and any(
                isinstance(side, (cst.List, cst.Tuple)) and python_values(file, call, side, depth + 1)
                for side in (data.left, data.right)):
            return True  # `[i] * batch`: a list repeated, the count an int whatever names it
        return python_values(file, call, data.left, depth + 1) and python_values(file, call, data.right, depth + 1)
    if isinstance(data, cst.Subscript) and isinstance(data.value, (cst.Call, cst.Name, cst.List)):
        return python_values(file, call, data.value, depth + 1)  # `list(range(n))[::-1]`
    if isinstance(data, cst.Call):
        qualname = sem.names.qualify(data.func)
        if qualname in PYTHON_BUILDERS:
            return True
        if isinstance(data.func, cst.Attribute) and qualname is None:
            return python_values(file, call, data.func.value, depth + 1)  # torch.Tensor([[w]]).long()
        if qualname is not None and qualname.split(".")[0] in ("torch", "numpy") and data.args and \
                qualname.rpartition(".")[2] in CONVERSIONS and sem.values.array_lib(data, call.scope) is None:
            return python_values(file, call, data.args[0].value, depth + 1)  # torch.tensor([...]), np.array([...])
        return False
    if isinstance(data, cst.Name):
        bindings = sem.names.assignments(sem.names.name_of(data), call.scope)
        if not bindings:
            return False
        for how, value in bindings:
            if how in ("=", "aug") and isinstance(value, cst.BaseExpression):
                if not python_values(file, call, value, depth + 1):
                    return False
            elif how == "for" and isinstance(value, Unpack) and not value.index and isinstance(value.source, cst.Call):
                if sem.names.qualify(value.source.func) != "builtins.range":
                    return False
            elif how == "for" and isinstance(value, Unpack) and not value.index and isinstance(value.source, cst.Name):
                if not _counted(file, call, value.source):
                    return False  # `for i in indices` with `indices = list(range(n))[::-1]`
            else:
                return False
        return True
    return False


def per_call(file: CheckedFile, call: IndexedCall, use: Classified) -> bool:
    """OFF108 for a PyTorch upload of literal numbers in a function every step runs, where it waits alone.

    Literal numbers only (`torch.tensor(0., device=d)`, `torch.tensor([0.]).to(d)`): the same value every
    call, which `new_zeros`/`full` make on the device. Values computed from the input (its sizes) are often
    what a kernel needs there; judged on public code, those uploads were not what an expert changed.

    Only where the function makes no other wait (a read, a sync, a blocking
    copy of real data): beside one, a scalar's upload costs its own few
    microseconds. Said once per call site; returns whether it was said.
    """
    if use.kind != "h2d" or use.api.library != "torch" or use.data is None or not file.enabled("OFF108"):
        return False
    it = iteration_of(file, call)
    if it is None or it.hot is None or it.loop is not None or file.sem.loops.periodic(call.conds):
        return False
    if not _literal(use.data):
        return False  # `torch.as_tensor([(h // 8, w // 8), ...], device=x.device)`: sizes of this input, needed there
    calls = [c for c in file.index.calls if c.scope is call.scope and c is not call]
    if waits_anyway(file, calls):
        return False
    file.report("OFF108", call.node, api=use.api.display, values=PYTHON_VALUES, direction=use.direction,
                where=it.where(file), advice=CALL_ADVICE)
    return True


def _literal(data: cst.BaseExpression) -> bool:
    """A number literal, or a short list/tuple of them (nested), nothing computed."""
    if isinstance(data, (cst.Integer, cst.Float)):
        return True
    if isinstance(data, cst.UnaryOperation):
        return isinstance(data.expression, (cst.Integer, cst.Float))
    if isinstance(data, (cst.List, cst.Tuple)):
        return 0 < len(data.elements) <= 16 and all(
            not isinstance(e, cst.StarredElement) and _literal(e.value) for e in data.elements)
    return False
