"""Loops over blocks as large as the free memory allows: sub-steps of what encloses them, not loops of steps.

HPC code sizes its blocks to the device's free memory (`blksize =
int(get_avail_mem() / row_bytes)`, then `for p0, p1 in prange(0, n,
blksize)`), so that the loop runs as few times as the memory permits, each
iteration a large share of the work. A wait in such a loop costs once per
block, next to that block's work; what it does costs once per iteration of
what encloses it, if anything does, as in a short literal loop
(`loops.few`). gpu4pyscf's QM/MM Ewald sums are of this kind.
"""

from __future__ import annotations

import re

import libcst as cst

from .loops import walk
from .scopes import Loop

#: a name or call that says how much memory is free (or may be used): what a block size made to fit it reads
MEMORY = re.compile(r"mem_?avail|avail_?mem|free_?mem|mem_?free|memgetinfo|mem_get_info|max_?memory|available_memory",
                    re.I)


def by_memory(loop: Loop) -> bool:
    """`for p0, p1 in prange(0, n, blksize)` where `blksize = int(get_avail_mem() / ...)`: blocks as large as the
    device's free memory allows.

    Such a loop is written to run as few times as the memory permits, each
    iteration a large share of the whole work; a sync in it costs once per
    block, next to that block's work, not once per step of a loop: what it
    does costs once per iteration of what encloses it, if anything does (as
    in a `few` loop). It is still work of its own for a loop around it (an
    outer loop that runs it is not a step loop of small steps). Only the
    step of a `range`-like call counts (its third argument, or a `step=`),
    bound in the loop's scope before it, in some binding from an expression
    that names free memory (`get_avail_mem()`, `memGetInfo()`,
    `torch.cuda.mem_get_info()`, `max_memory`).
    """
    node = loop.node
    if not isinstance(node, cst.For) or not isinstance(node.iter, cst.Call):
        return False
    args = node.iter.args
    step = next((a.value for a in args if a.keyword is not None and a.keyword.value in ("step", "blksize")), None)
    if step is None and len(args) >= 3 and args[2].keyword is None:
        step = args[2].value
    return isinstance(step, cst.Name) and _from_memory(step.value, loop, 2)


def _from_memory(name: str, loop: Loop, depth: int) -> bool:
    """Is `name` bound before the loop from an expression that names free memory, directly or through names
    bound so (`free, total = memGetInfo()`; `blk = int(free / row)`)?"""
    for e in loop.scope.events[:loop.start]:
        if e.kind != "bind" or e.name != name or not isinstance(e.extra, tuple) or e.extra[0] not in ("=", "unpack"):
            continue
        value = getattr(e.extra[1], "source", e.extra[1])
        if not isinstance(value, cst.BaseExpression):
            continue
        for n in walk(value):
            if isinstance(n, cst.Attribute) and MEMORY.search(n.attr.value):
                return True
            if isinstance(n, cst.Name) and (MEMORY.search(n.value) or depth > 0 and n.value != name
                                            and _from_memory(n.value, loop, depth - 1)):
                return True
    return False
