"""OFF303: a collective of a value in a loop, and the value read on the host in the same loop: a metric's meeting.

`dist.all_reduce(loss)` followed by `loss.item()` (or `float(loss)`,
`loss.tolist()`) in a training loop makes every rank meet every rank on
every step, and then waits for the result, only to log a number. The
profiler's OFF509 sees the same pattern at run time (a collective of a
few bytes from one line, step after step); statically the sign is that
the reduced name is read back on the host in the same loop. Reductions on
a branch taken every N steps, and in a loop run once per epoch around the
loops that do the work, are not per step and are left alone, as OFF301
leaves such reads.
"""

from __future__ import annotations

import libcst as cst

from ..analysis.collectivehelpers import COLLECTIVES
from ..analysis.scopes import IndexedCall, Loop
from .file import CheckedFile
from .registry import check

#: methods that bring a tensor's value to the host
READS = frozenset({"item", "tolist", "cpu", "numpy"})
#: builtins that do the same for a one-element tensor
CONVERSIONS = frozenset({"builtins.float", "builtins.int", "builtins.bool"})


@check("OFF303")
def collective_for_metric(file: CheckedFile) -> None:
    sem = file.sem
    for call in file.index.calls:
        loop = call.loop
        if loop is None:
            continue
        found = _reduced(file, call)
        if found is None:
            continue
        api, name = found
        if sem.loops.rare_branch(call, loop) or sem.loops.amortised(call, loop, file.index.loops):
            continue
        read = _read_of(file, loop, name)
        if read is not None:
            file.report("OFF303", call.node, api=api, read=read, loop_line=file.line(loop.node))


def _reduced(file: CheckedFile, call: IndexedCall) -> tuple[str, str] | None:
    """(how the message names the collective, the name that holds its result), or None for another call.

    `dist.all_reduce(loss)` reduces `loss` in place; a project's helper
    (`loss = reduce_tensor(loss)`, `analysis.collectivehelpers`) hands the
    reduced copy back, to the name it is assigned to.
    """
    sem = file.sem
    node = call.node
    args = node.args
    qualname = sem.names.qualify(node.func)
    if qualname in COLLECTIVES:
        if not args or args[0].keyword is not None or args[0].star or not isinstance(args[0].value, cst.Name):
            return None
        name = args[0].value.value
        return f"dist.{qualname.rsplit('.', 1)[1]}({name})", name
    use = sem.calls.classify(node, call.scope)
    small = call.small
    if use is None or not use.api.collective or not isinstance(small, cst.Assign) or small.value is not node or \
            len(small.targets) != 1 or not isinstance(small.targets[0].target, cst.Name):
        return None
    return use.api.display, small.targets[0].target.value


def _read_of(file: CheckedFile, loop: Loop, name: str) -> str | None:
    """How the loop reads `name` on the host (`loss.item()`), or None when it does not."""
    for other in loop.calls:
        if file.sem.loops.rare_branch(other, loop):
            continue
        call = other.node
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in READS and _is(func.value, name):
            return f"{name}.{func.attr.value}()"
        if file.sem.names.qualify(func) in CONVERSIONS and len(call.args) == 1 and _is(call.args[0].value, name):
            return f"{file.sem.names.qualify(func).split('.', 1)[1]}({name})"  # type: ignore[union-attr]
    return None


def _is(node: cst.BaseExpression, name: str) -> bool:
    return isinstance(node, cst.Name) and node.value == name


__all__ = ["COLLECTIVES", "collective_for_metric"]
