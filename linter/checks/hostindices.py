"""Index arrays made on the host for a device array, per iteration: OFF105 and OFF107.

`q[torch.arange(n), actions]` in a step loop builds the index on the host
and copies it to the device before it can index, every step: made there
(`torch.arange(n, device=q.device)`) it costs no copy. A minibatch loop
that indexes device buffers with a NumPy index array (`b_obs[mb_inds]`,
`mb_inds` a slice of a NumPy permutation shuffled each epoch) uploads the
index with a blocking copy on every minibatch; a permutation drawn on the
device (`torch.randperm(n, device=...)`) leaves the indices where the
buffers are. Positions NumPy computes without drawing them (`v[:, ind +
np.arange(k)]` per angular order, in array-agnostic code run on CuPy) are
copied the same way, a small blocking upload per gather: OFF108, made on
the device once (`cupy.asarray(idx)` before the loop) or replaced by a
slice where they are contiguous. One finding per index and loop: the
first subscript that uses it (the other subscripts of the same index are
the same fix).
"""

from __future__ import annotations

import libcst as cst

from ..analysis.parameters import root_name
from ..analysis.scopes import IndexedNode, Scope, Unpack
from .devicevalues import device_lib, short
from .file import CheckedFile
from .iteration import Iteration, iteration_of
from .registry import check

# torch's creators of index tensors, and those of them that draw random numbers
TORCH_INDEX_CREATORS = frozenset({"torch.arange", "torch.tensor", "torch.as_tensor", "torch.LongTensor",
                                  "torch.randperm", "torch.randint"})
TORCH_RANDOM = frozenset({"torch.randperm", "torch.randint"})
# NumPy calls that shuffle an index array in place or draw one
NUMPY_SHUFFLES = frozenset({"numpy.random.shuffle", "numpy.random.permutation", "numpy.random.choice",
                            "numpy.random.randint"})
# NumPy functions that give integer positions to gather with (not drawn at random: those are OFF107's)
NUMPY_POSITIONS = frozenset({"arange", "argsort", "flatnonzero", "nonzero", "unique", "ravel_multi_index",
                             "argwhere"})
POSITIONS_ADVICE = ("make the positions on the device once (`cupy.asarray(idx)` before the loop, or `cupy.arange`), "
                    "or slice (`v[:, start:stop]`) where they are contiguous")
REPLACEMENT = {"torch": "torch.randperm(n, device=...) (sliced per minibatch)",
               "cupy": "cupy.random.permutation(n) (sliced per minibatch)"}


@check("OFF105", "OFF107", "OFF108")
def host_indices(file: CheckedFile) -> None:
    said: set[tuple[int, str]] = set()
    for sub in file.index.subscripts:
        node = sub.node
        if not isinstance(node, cst.Subscript):
            continue
        it = iteration_of(file, sub)
        if it is None or (it.loop is not None and it.loop.kind == "comp"):
            continue
        if it.loop is None and sub.loop is not None:
            continue  # a comprehension or a short loop inside a function every step runs: its own iteration
        lib = None
        for element in node.slice:
            if not isinstance(element.slice, cst.Index):
                continue
            index = element.slice.value
            found = _host_made(file, index, sub)
            if found is None:
                continue
            lib = lib or device_lib(file, node.value, sub.scope, it)
            if lib not in REPLACEMENT:
                break
            key = (id(it.loop if it.loop is not None else it.scope), file.code(index))
            if key in said or file.sem.loops.periodic(sub.conds) or (
                    it.loop is not None and file.sem.loops.rare_conds(sub.conds, it.loop)):
                continue
            said.add(key)
            _report(file, node, index, found, lib, it)


def _report(file: CheckedFile, node: cst.Subscript, index: cst.BaseExpression,
            found: tuple[str, str, cst.CSTNode], lib: str, it: Iteration) -> None:
    code, creator, at = found
    api = f"indexing `{short(file, node.value)}` with `{short(file, index)}`"
    if code == "OFF105":
        if file.enabled("OFF105"):
            file.report("OFF105", at, api=api, creator=creator,
                        replacement=f"{creator}(..., device={short(file, node.value)}.device)")
    elif code == "OFF108":
        if file.enabled("OFF108") and lib == "cupy" and not _numpy_made(file, node.value, it.scope):
            file.report("OFF108", at, api=f"indexing the CuPy array `{short(file, node.value)}` with the NumPy "
                        f"positions `{short(file, index)}`", values="them", where=it.where(file),
                        advice=POSITIONS_ADVICE)
    elif file.enabled("OFF107"):
        per_call = it.loop is None or creator in TORCH_RANDOM_VALUES  # no minibatches to slice: draw it there
        replacement = f"{creator}(..., device={short(file, node.value)}.device)" if per_call and \
            creator.startswith("torch.") else REPLACEMENT[lib]
        file.report("OFF107", at, api=api, draw=creator, replacement=replacement)


def _host_made(file: CheckedFile, index: cst.BaseExpression, sub: IndexedNode) -> tuple[str, str, cst.CSTNode] | None:
    """(rule, creator, where to say it) when the index is made on the host: a torch creator without a device, or a
    NumPy array shuffled or drawn at random (through names and slices of them)."""
    sem = file.sem
    if isinstance(index, cst.Call):
        qualname = sem.names.qualify(index.func) or ""
        if qualname in TORCH_INDEX_CREATORS and not any(a.keyword is not None and a.keyword.value == "device"
                                                        for a in index.args):
            return ("OFF107" if qualname in TORCH_RANDOM else "OFF105"), qualname, index
        return None
    if isinstance(index, cst.Name) and sem.functions.torch:
        found = _torch_host(file, index, sub, 0)
        if found is not None:
            return found  # said where the index is made: that line takes the fix
    name = root_name(index)
    if name is None or (index is not name and not _sliced(index)):
        return None
    found = _numpy_random(file, name.value, sub, depth=0)
    if found is not None:
        return found[0], found[1], index
    return ("OFF108", "numpy", index) if _numpy_positions(file, index, sub.scope) else None


def _numpy_made(file: CheckedFile, array: cst.BaseExpression, scope: Scope) -> bool:
    """Is the indexed array (through subscripts) a name some binding gets from a NumPy call (`w, s =
    numpy.linalg.eigh(t)`)? The device-value analysis answers for any binding; a NumPy result is the host's."""
    name = root_name(array)
    if name is None:
        return False
    for how, value in file.sem.names.assignments(file.sem.names.name_of(name), scope):
        source = value.source if isinstance(value, Unpack) else value
        if how in ("=", "unpack") and isinstance(source, cst.Call) and (
                file.sem.names.qualify(source.func) or "").split(".")[0] == "numpy":
            return True
    return False


def _numpy_positions(file: CheckedFile, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
    """Is `expr` an integer array NumPy made: `np.arange(k)`, `ind + np.arange(k)`, `order[start:end]` of
    `order = np.argsort(keys)`, or a name bound only to such?"""
    if depth > 6:
        return False
    if isinstance(expr, cst.Call):
        qualname = file.sem.names.qualify(expr.func) or ""
        return qualname.split(".")[0] == "numpy" and qualname.rpartition(".")[2] in NUMPY_POSITIONS
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)):
        sides = (expr.left, expr.right)
        return any(_numpy_positions(file, e, scope, depth + 1) for e in sides) and not any(
            file.sem.values.device_lib(e, scope) for e in sides)
    if isinstance(expr, cst.Subscript) and all(isinstance(e.slice, cst.Slice) for e in expr.slice):
        return _numpy_positions(file, expr.value, scope, depth + 1)  # a batch of the positions
    if isinstance(expr, cst.Name):
        bindings = file.sem.names.assignments(file.sem.names.name_of(expr), scope)
        return bool(bindings) and all(how == "=" and isinstance(value, cst.BaseExpression) and _numpy_positions(
            file, value, scope, depth + 1) for how, value in bindings)
    return False


# methods and attributes that keep a tensor where it is: `rows[..., None]`, `rand.topk(k).indices`
TORCH_KEEPING = frozenset({"topk", "sort", "argsort", "argmax", "argmin", "unsqueeze", "view", "reshape", "expand",
                           "long", "int", "flatten", "indices", "values", "t"})
TORCH_RANDOM_VALUES = frozenset({"torch.rand", "torch.randn"})


def _torch_host(file: CheckedFile, expr: cst.BaseExpression, sub: IndexedNode, depth: int,
                seen: frozenset[str] = frozenset()) -> tuple[str, str, cst.CSTNode] | None:
    """(rule, creator, the creator's call) for a torch index the function builds on the host through names: `rows =
    torch.arange(b)[..., None]`, `keep = torch.randn(b, n).topk(k).indices` (random: OFF107). A name rebound from
    itself (`rows = rows[..., None]`) counts as what it held before ("same")."""
    if depth > 4:
        return None
    sem = file.sem
    if isinstance(expr, cst.Name):
        if expr.value in seen:
            return "same", "", expr  # `rows = rows[..., None]`: what the name held before, reshaped
        bindings = sem.names.assignments(expr.value, sub.scope)
        if not bindings or any(how != "=" or not isinstance(v, cst.BaseExpression) for how, v in bindings):
            return None
        found = [_torch_host(file, v, sub, depth + 1, seen | {expr.value}) for _, v in bindings]
        made = [f for f in found if f is not None and f[0] != "same"]
        return made[0] if made and all(f is not None for f in found) else None
    if isinstance(expr, cst.Subscript):
        return _torch_host(file, expr.value, sub, depth + 1, seen)
    if isinstance(expr, cst.Attribute):
        return _torch_host(file, expr.value, sub, depth + 1, seen) if expr.attr.value in TORCH_KEEPING else None
    if not isinstance(expr, cst.Call):
        return None
    if any(a.keyword is not None and a.keyword.value == "device" for a in expr.args):
        return None
    qualname = sem.names.qualify(expr.func) or ""
    if qualname in TORCH_INDEX_CREATORS:
        return ("OFF107" if qualname in TORCH_RANDOM else "OFF105"), qualname, expr
    if qualname in TORCH_RANDOM_VALUES:
        return "OFF107", qualname, expr
    if isinstance(expr.func, cst.Attribute) and expr.func.attr.value in TORCH_KEEPING:
        return _torch_host(file, expr.func.value, sub, depth + 1, seen)
    return None


def _sliced(index: cst.BaseExpression) -> bool:
    """`b_inds[start:end]`: a slice of an array (not an element, not an attribute)."""
    return isinstance(index, cst.Subscript) and all(isinstance(e.slice, cst.Slice) for e in index.slice)


def _numpy_random(file: CheckedFile, name: str, sub: IndexedNode, depth: int) -> tuple[str, str] | None:
    """Is `name` a NumPy index array drawn at random: `np.random.permutation(n)`, or shuffled by
    `np.random.shuffle(name)` in this scope (and names bound to slices of those)?"""
    if depth > 3:
        return None
    sem = file.sem
    bindings = [value for how, value in sem.names.assignments(name, sub.scope) if how == "="]
    if not bindings:
        return None
    creator = None
    for value in bindings:
        if isinstance(value, cst.Subscript) and _sliced(value) and isinstance(value.value, cst.Name):
            found = _numpy_random(file, value.value.value, sub, depth + 1)
            if found is None:
                return None
            creator = found[1]
            continue
        if not isinstance(value, cst.Call):
            return None
        qualname = sem.names.qualify(value.func) or ""
        if qualname in NUMPY_SHUFFLES:
            creator = qualname
        elif qualname.startswith("numpy.") and _shuffler(file, name, sub) is not None:
            creator = "numpy.random.shuffle"
        else:
            return None
    return ("OFF107", creator) if creator is not None else None


def _shuffler(file: CheckedFile, name: str, sub: IndexedNode) -> str | None:
    """The call that shuffles `name` in place in its scope (`np.random.shuffle(b_inds)`), if any."""
    for call in file.index.calls:
        if call.scope is not sub.scope or not call.node.args:
            continue
        first = call.node.args[0].value
        if isinstance(first, cst.Name) and first.value == name and \
                file.sem.names.qualify(call.node.func) == "numpy.random.shuffle":
            return "numpy.random.shuffle"
    return None
