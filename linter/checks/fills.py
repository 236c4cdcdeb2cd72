"""A device scalar as the fill value of a new tensor: OFF104, a read per iteration.

`torch.full((b, 1, 1, 1), alphas[index], device=device)` with `alphas` on
the GPU (a module buffer, a schedule moved there) is a read: PyTorch takes
the fill value as a Python number, so it copies the 0-d tensor back and
waits for the device before it can fill, every sampling step (a DDIM
sampler does it three times a step). The same value broadcast on the
device (`alphas[index].expand(b, 1, 1, 1)`, or `alphas[index].view(1, 1, 1,
1)` in the arithmetic) costs no wait.
"""

from __future__ import annotations

import libcst as cst

from ..analysis.calls import argument
from ..analysis.scopes import IndexedCall
from .devicevalues import short
from .file import CheckedFile
from .iteration import iteration_of
from .registry import check

FILLS = frozenset({"torch.full", "torch.full_like"})


@check("OFF104")
def device_fills(file: CheckedFile) -> None:
    if not file.sem.functions.torch:
        return
    for call in file.index.calls:
        name = file.sem.names.qualify(call.node.func)
        if name not in FILLS:
            continue
        value = argument(call.node, 1, "fill_value")
        if value is None:
            continue
        it = iteration_of(file, call)
        if it is None or (it.loop is not None and file.sem.loops.rare_branch(call, it.loop)) or _debugging(file, call):
            continue
        if file.sem.values.device_lib(value, call.scope) != "torch":
            continue
        if isinstance(value, cst.Name) and not file.sem.values.device_at(value, call):
            continue  # `t = torch.full(..., fill_value=t)` where the bindings that reach it hold a Python number
        file.report("OFF104", call.node, api=f"{name} with the device value `{short(file, value)}` as its fill",
                    where=it.where(file),
                    advice="PyTorch reads a tensor fill value on the host; broadcast it on the device instead "
                           "(`value.expand(shape)`, or `value.view(1, ...)` in the arithmetic)")


def _debugging(file: CheckedFile, call: IndexedCall) -> bool:
    """Under a test of a debugging switch (`if debug_percentile is not None:`): not what a training step runs."""
    module = file.index.module
    return any("debug" in module.code_for_node(test).lower() for test, taken in call.conds if taken)
