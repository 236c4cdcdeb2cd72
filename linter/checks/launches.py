"""offload() launches: OFF102 (in a loop with no region keeping the arrays) and OFF201 (mutable alias).

Both read a launch through its kernel's signature: which arguments are
arrays and how the kernel uses them. Without a signature (a kernel from a
module that was not linted) OFF102 still counts arguments the file itself
created with NumPy, and OFF201 says nothing.

A region covers a launch in a loop only if it encloses the loop: a region
opened inside the loop maps and copies back on every iteration, which is
the cost OFF102 is about.
"""

from __future__ import annotations

import libcst as cst

from ..analysis.project import WRITES
from ..analysis.scopes import IndexedCall, Loop
from ..findings import Edit, Fix
from .file import CheckedFile
from .fixes import wrap_fix
from .registry import check


@check("OFF102", "OFF201")
def launches(file: CheckedFile) -> None:
    sem = file.sem
    for call in file.index.calls:
        if not sem.calls.is_offload(call):
            continue
        if file.enabled("OFF201"):
            _mutable_alias(file, call)
        if call.loop is not None and file.enabled("OFF102"):
            arrays = uncovered(file, call, call.loop)
            if arrays:
                kernel = file.code(call.node.args[0].value) if call.node.args else "?"
                fix = _region_fix(file, call.loop) if call.loop.kind != "comp" else None
                names = ", ".join(a for a, _ in arrays)
                file.report("OFF102", call.node, fix, kernel=kernel, loop_line=file.line(call.loop.node), arrays=names)


def uncovered(file: CheckedFile, call: IndexedCall, loop: Loop) -> list[tuple[str, bool]]:
    """(array, only written) for each launch argument no region around `loop` maps, in argument order."""
    sem, scope = file.sem, call.scope
    covered: set[str] = set()
    for item in call.withs[: loop.with_depth]:
        if item.call is not None and sem.calls.is_region(item.call.node):
            for arg in item.call.node.args:
                if arg.star:
                    return []
                root = sem.names.array_root(arg.value, scope)
                if root:
                    covered.add(root)
    rebound = sem.loops.rebound(loop)
    _, pairs = sem.kernels.launch(call)
    out: dict[str, bool] = {}
    for param, arg in pairs:
        root = sem.names.array_root(arg.value, scope)
        if root is None or root in covered or root in rebound:
            continue
        if param is None and not sem.names.is_host_array(root, scope):
            continue
        only_out = param is not None and param.access == "Out"
        out[root] = out.get(root, True) and only_out
    return list(out.items())


def _region_fix(file: CheckedFile, loop: Loop) -> Fix | None:
    """Wrap the outermost loop in which the arrays stay the same in `with region(...)`."""
    sem = file.sem
    target = loop
    while target.parent is not None and target.parent.kind != "comp":
        arrays = _loop_arrays(file, target.parent)
        if not arrays or any(a in sem.loops.rebound(target.parent) for a, _ in arrays):
            break
        target = target.parent
    arrays = _loop_arrays(file, target)
    if not arrays:
        return None
    aliases = {q: local for local, q in file.index.aliases.items()}
    out_name = aliases.get("offload_core.Out")
    listed = ", ".join(f"{out_name}({a})" if only_out and out_name else a for a, only_out in arrays)
    region_name = aliases.get("offload_core.region")
    edits: list[Edit] = []
    if region_name is None:
        module_alias = aliases.get("offload_core")
        if module_alias is not None:
            region_name = f"{module_alias}.region"
        else:
            region_name = "region"
            edits.append(_import_region(file))
    wrap = wrap_fix(file, target.node, f"{region_name}({listed})", f"Wrap the loop in `with {region_name}({listed}):`")
    return file.fix(wrap.title, "unsafe", [*edits, *wrap.edits])


def _loop_arrays(file: CheckedFile, loop: Loop) -> list[tuple[str, bool]]:
    found: dict[str, bool] = {}
    for call in loop.calls:
        if file.sem.calls.is_offload(call):
            for name, only_out in uncovered(file, call, loop):
                found[name] = found.get(name, True) and only_out
    return list(found.items())


def _import_region(file: CheckedFile) -> Edit:
    """An import line after the module's last top-level import (or at the top)."""
    last = None
    for statement in file.module.body:
        if isinstance(statement, cst.SimpleStatementLine) and all(
            isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body
        ):
            last = statement
    if last is None:
        return Edit(0, 0, f"from offload_core import region{file.newline}")
    _, end = file.line_span(last)
    return Edit(end, end, f"from offload_core import region{file.newline}")


def _mutable_alias(file: CheckedFile, call: IndexedCall) -> None:
    sem = file.sem
    sig, pairs = sem.kernels.launch(call)
    if sig is None:
        return
    roots = [(param, sem.names.array_root(arg.value, call.scope)) for param, arg in pairs]
    for i, (param, root) in enumerate(roots):
        if param is None or root is None or param.access not in WRITES:
            continue
        for j, (other, other_root) in enumerate(roots):
            if j != i and other is not None and other_root == root:
                file.report(
                    "OFF201", call.node, array=root, kernel=sig.name, access=param.access,
                    param=param.name, other=other.name,
                )
                return
