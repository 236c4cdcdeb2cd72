"""What indexing a device array costs per iteration: OFF104 for masks and counts, OFF108 for Python-list indices.

`u[aux < 0] = 1` in a CuPy iteration looks like pure device work, but a
boolean mask gives an array whose size depends on the data: CuPy counts
the mask's True elements and waits for that count on the host before it
can index, on every iteration. `cupy.where(mask, a, b)` and
`cupy.copyto(u, 1, where=mask)` do the same work without the count.
PyTorch does the same for `t[mask]` (and for `t[mask] = v` with a tensor
`v`; a Python scalar becomes `masked_fill_`, which does not count). In
PyTorch code the rule keeps to loops over elements, instances or levels
(a mask inside `forward` may be how the model selects its outputs); in
CuPy code it also reads the functions a loop runs once per iteration.

A Python list as an index (`v[:, [-1]]`, `maps[[i]]`, `t[:, [0, 2]]`) is
turned into an index tensor on the host and uploaded with a blocking copy
every time (OFF108); a slice (`v[:, -1:]`, `maps[i:i + 1]`) or a device
index made once does the same without the copy.

The same holds for `nonzero()` whose result only gives a count
(`x.nonzero().numel()`, `len(torch.nonzero(m))`): the count is a sum the
device can keep (`m.sum()`), read only where the host needs it.
"""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import IndexedNode, Scope
from ..analysis.uses import path_to
from .devicevalues import device_lib, is_mask, short
from .file import CheckedFile
from .iteration import iteration_of
from .pythonvalues import LOOP_ADVICE, PYTHON_VALUES
from .registry import check

ADVICE = {
    "cupy": ("CuPy counts the mask on the host before it indexes; use `cupy.where(mask, a, b)` to select, "
             "`cupy.copyto(a, v, where=mask)` to write and a masked sum (`(a * mask).sum()`) to reduce"),
    "torch": ("PyTorch counts the mask on the host before it indexes; use `torch.where(mask, a, b)`, a masked sum "
              "(`(a * mask).sum()`), or index with `mask.nonzero()` computed once"),
}
# A NumPy mask indexing a CuPy array is copied to the device and counted there on every use: two waits where
# positions computed once on the device (or a device mask kept beside the host one) need none.
HOST_MASK_ADVICE = ("CuPy uploads a NumPy mask and counts it before it indexes, every time; turn it into device "
                    "positions once (`cupy.asarray(numpy.flatnonzero(mask))`) or keep a device copy of the mask "
                    "and use `cupy.where`/`cupy.copyto(..., where=mask)`")
COUNTS = frozenset({"numel", "nelement", "size", "__len__"})
NONZERO = frozenset({"nonzero", "argwhere", "flatnonzero"})


@check("OFF104", "OFF108", "OFF301", "OFF302")
def indexing(file: CheckedFile) -> None:
    seen: set[int] = set()
    for sub in file.index.subscripts:
        if id(sub.node) in seen:
            continue
        seen.add(id(sub.node))
        if file.enabled("OFF104"):
            _mask_index(file, sub)
        if file.enabled("OFF108"):
            _list_index(file, sub)
        if file.enabled("OFF301") and sub.store:
            _host_store(file, sub)
    if file.enabled("OFF104"):
        _counts(file)


def _host_store(file: CheckedFile, sub: IndexedNode) -> None:
    """`losses[k] = loss` per iteration, `losses` a host tensor: a blocking copy of each device value to record it."""
    node = sub.node
    statement = sub.small
    if not isinstance(statement, cst.Assign) or not isinstance(node.value, cst.Name) or sub.loop is None:
        return
    it = iteration_of(file, sub)
    if it is None or it.loop is None or _rare(file, sub):
        return
    sem = file.sem
    if sem.values.device_lib(statement.value, sub.scope) is None or not _host_buffer(file, node.value, sub):
        return
    value = statement.value
    if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) and file.enabled("OFF302"):
        file.report("OFF302", node, api=f"copying `{short(file, value)}` into the host array `{node.value.value}`",
                    array=value.value.value, where=it.where(file))  # element by element: one sync each
        return
    file.report("OFF301", node, api=f"storing a device value into the host array `{node.value.value}`",
                where=it.where(file), advice=f"allocate `{node.value.value}` on the device and read it once "
                                             "after the loop")


def _host_buffer(file: CheckedFile, name: cst.Name, sub: IndexedNode) -> bool:
    """Is `name` bound only to arrays made on the host (`torch.zeros(n)`, `np.empty(n)`)?"""
    sem = file.sem
    bindings = sem.names.assignments(sem.names.name_of(name), sub.scope)
    values = [v for how, v in bindings if how == "="]
    if not values or len(values) != len([b for b in bindings if b[0] not in ("item",)]):
        return False
    for value in values:
        if not isinstance(value, cst.Call):
            return False
        use = sem.calls.classify(value, sub.scope)
        qualname = sem.names.qualify(value.func) or ""
        if not (use is not None and use.kind == "host-alloc" or qualname.split(".")[0] == "numpy"):
            return False
    return True


def _list_index(file: CheckedFile, sub: IndexedNode) -> None:
    """`t[:, [0, 2]]`, `t[[i]]` of a device tensor per iteration: an index tensor built and uploaded each time."""
    node = sub.node
    assert isinstance(node, cst.Subscript)
    lists = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index) and isinstance(e.slice.value, cst.List)]
    if not lists or any(isinstance(el, cst.StarredElement) for lst in lists for el in lst.elements):
        return
    it = iteration_of(file, sub)
    if it is None or device_lib(file, node.value, sub.scope, it) not in ("torch", "cupy"):
        return
    if file.sem.loops.periodic(sub.conds) or (it.loop is not None and _rare(file, sub)):
        return
    file.report("OFF108", node, api=f"indexing `{short(file, node.value)}` with the Python list "
                f"`{short(file, lists[0])}`", values=PYTHON_VALUES, where=it.where(file), advice=LOOP_ADVICE)


def _mask_index(file: CheckedFile, sub: IndexedNode) -> None:
    node = sub.node
    assert isinstance(node, cst.Subscript)
    mask = _mask_part(node)
    if mask is None:
        return
    it = iteration_of(file, sub)
    if it is None or not is_mask(file, mask, sub.scope):
        return
    mask_lib = device_lib(file, mask, sub.scope, it)
    lib = device_lib(file, node.value, sub.scope, it)
    if mask_lib is None and (lib != "cupy" or not _host_mask(file, mask, sub.scope)):
        return  # a host mask of a host array, or a "mask" of unknown making (a loop's `mask`, perhaps positions)
    if lib is None and mask_lib == "cupy":
        lib = mask_lib  # only a CuPy array takes a CuPy mask (NumPy refuses to convert it)
    if lib not in ADVICE:
        return
    if lib == "torch":
        if it.loop is None or it.loop.kind == "comp" or (sub.store and _scalar_stored(file, sub)):
            return
    if file.sem.loops.periodic(sub.conds) or (it.loop is not None and _rare(file, sub)):
        return
    if mask_lib is None:
        file.report("OFF104", node, api=f"indexing the CuPy array `{short(file, node.value)}` with the host mask "
                    f"`{short(file, mask)}` (uploaded, then counted)", where=it.where(file), advice=HOST_MASK_ADVICE)
        return
    file.report("OFF104", node, api=f"indexing `{short(file, node.value)}` with the boolean mask "
                f"`{short(file, mask)}`", where=it.where(file), advice=ADVICE[lib])


def _host_mask(file: CheckedFile, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> bool:
    """Is `expr` a boolean array the host makes: a comparison of host values, `~m`, `m & n` of such, NumPy's
    `isnan(h)`, a class's `self.radial_mask`, or a name bound only to such? A name that is a mask only by what
    it is called (`for ao, mask in blocks`) may hold device positions, and is not one."""
    if depth > 6:
        return False
    values = file.sem.values
    if isinstance(expr, cst.Comparison):
        return is_mask(file, expr, scope) and values.device_lib(expr, scope) is None
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.BitInvert):
        return _host_mask(file, expr.expression, scope, depth + 1)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
        return _host_mask(file, expr.left, scope, depth + 1) and _host_mask(file, expr.right, scope, depth + 1)
    if isinstance(expr, cst.Attribute):
        return isinstance(expr.value, cst.Name) and expr.value.value == "self" and is_mask(file, expr, scope)
    if isinstance(expr, cst.Call):
        qualname = file.sem.names.qualify(expr.func) or ""
        return qualname.split(".")[0] == "numpy" and is_mask(file, expr, scope)
    if isinstance(expr, cst.Name):
        bindings = file.sem.names.assignments(file.sem.names.name_of(expr), scope)
        return bool(bindings) and all(how == "=" and isinstance(value, cst.BaseExpression) and _host_mask(
            file, value, scope, depth + 1) for how, value in bindings)
    return False


def _mask_part(node: cst.Subscript) -> cst.BaseExpression | None:
    """The one index of `a[m]`, `a[..., m]`, `a[:, m]`, `a[m, 1:]`: the others are slices or `...`, which count
    nothing (a slice of another axis does not make the mask's count known)."""
    rest = [p for p in (element.slice for element in node.slice)
            if not (isinstance(p, cst.Slice) or isinstance(p, cst.Index) and isinstance(p.value, cst.Ellipsis))]
    if len(rest) != 1 or not isinstance(rest[0], cst.Index):
        return None
    return rest[0].value


def _rare(file: CheckedFile, sub: IndexedNode) -> bool:
    loop = sub.loop
    assert loop is not None
    return file.sem.loops.rare_conds(sub.conds, loop)


def _scalar_stored(file: CheckedFile, sub: IndexedNode) -> bool:
    """`t[mask] = 0`, `t[mask] = segment_id`: a number, which PyTorch writes with masked_fill (no count).

    A name or attribute the analysis does not know as an array (`self.num_classes`, a counter) is
    taken for a number; an array value (`t[mask] = src[mask]`) takes the counting path.
    """
    statement = sub.small
    value = statement.value if isinstance(statement, (cst.Assign, cst.AugAssign)) else None
    if isinstance(value, cst.UnaryOperation):
        value = value.expression
    if isinstance(value, (cst.Name, cst.Attribute)) and not (isinstance(value, cst.Name) and value.value in (
            "True", "False")):
        return file.sem.values.array_lib(value, sub.scope) is None
    return isinstance(value, (cst.Integer, cst.Float)) or (isinstance(value, cst.Name) and value.value in (
        "True", "False"))


def _counts(file: CheckedFile) -> None:
    """`x.nonzero().numel()`, `len(torch.nonzero(m))`, `m.nonzero().size(0)` per iteration: a count the device keeps."""
    sem = file.sem
    for call in file.index.calls:
        func = call.node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else None
        qualname = sem.names.qualify(func)
        if name not in NONZERO and (qualname or "").rpartition(".")[2] not in NONZERO:
            continue
        it = iteration_of(file, call)
        if it is None or call.small is None:
            continue
        data = func.value if qualname is None and isinstance(func, cst.Attribute) else (
            call.node.args[0].value if call.node.args else None)
        if data is None:
            continue
        method_of_step = qualname is None and sem.functions.torch and (
            it.hot is not None or sem.functions.hot(call.scope) is not None)  # `x.nonzero()` in a loss: a tensor's
        if not method_of_step and device_lib(file, data, call.scope, it) is None:
            continue
        path = path_to(call.small, call.node)
        if not path or len(path) < 2 or not _counted(file, path):
            continue
        if file.sem.loops.periodic(call.conds):
            continue
        file.report("OFF104", call.node, api=f"counting with `{short(file, call.node)}`", where=it.where(file),
                    advice="its size depends on the data, so the host waits for it; count on the device with "
                           "`mask.sum()` and read the count only where the host needs it")


def _counted(file: CheckedFile, path: list[cst.CSTNode]) -> bool:
    """Is the nonzero result (last in `path`) only measured: `.numel()`, `.size(0)`, `.shape[0]`, `len(...)`?"""
    parent = path[-2]
    if isinstance(parent, cst.Attribute) and parent.attr.value in COUNTS | {"shape"}:
        return True
    if isinstance(parent, cst.Arg) and len(path) >= 3 and isinstance(path[-3], cst.Call):
        return file.sem.names.qualify(path[-3].func) == "builtins.len"
    return False
