"""A read a loop-called helper returns: judged by what the calling loop does with the value.

`def accuracy(output, target): ... return correct.float().sum().item()`,
called as `top1 += accuracy(logits, target)` in an evaluation loop, syncs
once per batch to add a number up: OFF301, though the helper alone shows
only a value handed back. The helper's read is a metric read when every
call of it in the loop that makes it hot (a loop of the same file) only
sums, records or prints the result (`acc1, acc5 = accuracy(...)` then
`top1 += acc1`); for a loop of another file, its file's summary says so
(`Summary.metric_roots`, `Hot.metric`: `metrics.append(utils.fetch(m))`
where `fetch` returns `jax.device_get(m)`). A helper called through
another function is left to what its own body says.
"""

from __future__ import annotations

import libcst as cst

from ..analysis.uses import kept_as_metric, path_to
from .file import CheckedFile
from .iteration import Iteration

RETURNED_ADVICE = ("return the device value instead and add it up on the device in the loop (`correct += "
                   "pred.eq(target).sum()`), reading the total once after it")


def returned(statement: cst.CSTNode, read: cst.CSTNode, returns: list[cst.BaseExpression]) -> bool:
    """Does the value of `read` leave the function by `return`: in the return statement itself, or assigned to a
    name the function returns (alone or in a tuple)?"""
    if isinstance(statement, cst.Return):
        return path_to(statement, read) is not None
    if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
        return False
    target = statement.targets[0].target
    if not isinstance(target, cst.Name) or path_to(statement.value, read) is None:
        return False
    for value in returns:
        parts = [e.value for e in value.elements] if isinstance(value, (cst.Tuple, cst.List)) else [value]
        if any(isinstance(p, cst.Name) and p.value == target.value for p in parts):
            return True
    return False


def caller_keeps_metric(file: CheckedFile, it: Iteration, scalar: bool) -> bool:
    """Does every call of the hot function in the loop that runs it only sum, record or print it?

    `scalar`: the function hands back one number (`.item()`), which a list keeps as a record; an array it
    downloads and hands back is a metric only where the list's names say so (`uses.kept_as_metric`).
    """
    hot = it.hot
    if hot is None or hot.kind != "loop" or hot.via is not None:
        return False
    if hot.path != file.path:
        return hot.metric  # a loop of another file: its file's summary said how the result is used
    if not 0 <= hot.loop < len(file.index.loops):
        return False
    loop = file.index.loops[hot.loop]
    sites = [c for c in loop.calls if file.sem.functions.callee(c) == hot.function]
    if not sites:
        return False
    return all(kept_as_metric(c, loop.node, file.sem.names, scalar) for c in sites)
