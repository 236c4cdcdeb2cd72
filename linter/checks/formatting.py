"""Formatting one element of a device array per iteration: `f"{conf:.2f}"` in `for *box, conf, cls in det:`.

Iterating a CUDA tensor or a CuPy array yields 0-d device arrays; an
f-string that formats one (`f"{cls}"`, `f"{prob[j]:.2f}"`) calls its
`__format__`, which copies the scalar to the host and waits for the device,
once per element, like `int(v)` or `v.item()` (OFF302). A detector's
per-detection label, a classifier's top-5 line and a report's per-class row
are the usual places; reading the array once before the loop (`.tolist()`)
makes every element a Python number.

Only elements of the array the loop itself walks (not the keys or names a
function yields with them), or an element indexed by what changes in the
loop, count, and only where the element loop runs many times (inside
another loop, or in a function a step runs): a table printed once at the end
of a run is output, and a device value formatted once per step of a
training loop is a logging question (the print rule tried on real code was
mostly wrong, docs/linter.md), not an element-wise read.
"""

from __future__ import annotations

import libcst as cst

from ..analysis.loops import few, walk
from ..analysis.scopes import Loop
from .file import CheckedFile
from .registry import check
from .syncs import element_source


@check("OFF302")
def formatted_elements(file: CheckedFile) -> None:
    seen: set[int] = set()
    for loop in file.index.loops:
        if loop.kind == "comp" or not isinstance(loop.node, cst.For) or not _repeated(file, loop):
            continue
        for node in walk(loop.node.body):
            if not isinstance(node, cst.FormattedStringExpression) or id(node) in seen:
                continue
            if isinstance(node.expression, cst.Name) and not _walks_an_array(file, loop, node.expression):
                continue  # `for key, value in metrics.items()`, `for name, p in model.named_parameters()`: names
            element = element_source(file, loop.scope, loop, node.expression)
            if element is None:
                continue
            seen.add(id(node))
            file.report("OFF302", node.expression, api=f"formatting `{file.code(node.expression)}` in an f-string",
                        array=element, loop_line=file.line(loop.node))


def _walks_an_array(file: CheckedFile, loop: Loop, name: cst.Name) -> bool:
    """Is `name` the loop's element of an array it walks (`for *box, conf, cls in reversed(det)`), not part of what
    a function yields (`evaluator.run(state)`, `d.items()`, `m.named_parameters()`: keys and names among them)?"""
    node = loop.node
    if not isinstance(node, cst.For):
        return False
    source = node.iter
    while isinstance(source, cst.Call) and isinstance(source.func, cst.Name) and source.func.value in (
            "reversed", "enumerate", "list", "tuple") and source.args:
        source = source.args[0].value
    return not isinstance(source, cst.Call)


def _repeated(file: CheckedFile, loop: Loop) -> bool:
    """Does the element loop itself run many times: inside another loop (per image, per step) or in a function
    that runs once per iteration? A table printed once at the end of a run is output, not per-step work."""
    outer = loop.parent
    while outer is not None and few(outer):
        outer = outer.parent
    return outer is not None or file.sem.functions.hot(loop.scope) is not None
