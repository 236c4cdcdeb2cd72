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

from ..analysis.scopes import Loop
from .file import CheckedFile
from .registry import check

#: torch.distributed's collectives whose first argument holds the result (reduced, sent or gathered into);
#: `*_single` are PyTorch 2.13's names of the `*_tensor` pair
COLLECTIVES = frozenset(f"torch.distributed.{name}" for name in (
    "all_reduce", "reduce", "broadcast", "all_gather_into_tensor", "reduce_scatter_tensor",
    "all_gather_single", "reduce_scatter_single"))
#: methods that bring a tensor's value to the host
READS = frozenset({"item", "tolist", "cpu", "numpy"})
#: builtins that do the same for a one-element tensor
CONVERSIONS = frozenset({"builtins.float", "builtins.int", "builtins.bool"})


@check("OFF303")
def collective_for_metric(file: CheckedFile) -> None:
    sem = file.sem
    for call in file.index.calls:
        loop = call.loop
        if loop is None or sem.names.qualify(call.node.func) not in COLLECTIVES:
            continue
        args = call.node.args
        if not args or args[0].keyword is not None or args[0].star or not isinstance(args[0].value, cst.Name):
            continue
        name = args[0].value.value
        if sem.loops.rare_branch(call, loop) or sem.loops.amortised(call, loop, file.index.loops):
            continue
        read = _read_of(file, loop, name)
        if read is not None:
            file.report("OFF303", call.node, api=f"dist.{sem.names.qualify(call.node.func).rsplit('.', 1)[1]}({name})",
                       read=read, loop_line=file.line(loop.node))


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
