"""Elements of a device array tested on the host one at a time: OFF302 through a truth test, not a call.

`for i ...: for j ...: v = board[i, j]; text = "" if v == -1 else ...`
reads one element per iteration as surely as `int(board[i, j])` does:
Python's truth test of the comparison copies the element to the host and
waits for the device. A renderer that draws every cell of every frame so,
or a host loop over a device array's entries, waits once per element; one
`jax.device_get(board)` (or `.tolist()`, `.get()`) before the loop reads
them all at once. The conversions (`int(v)`, `v.item()`) are `syncs`'s.
"""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import Loop, Scope
from .devicevalues import COMPARISONS, short
from .file import CheckedFile
from .registry import check
from .syncs import element_source


@check("OFF302")
def element_tests(file: CheckedFile) -> None:
    sem = file.sem
    loops = {id(loop.node): loop for loop in file.index.loops if loop.kind != "comp"}
    if not loops:
        return
    branches = {id(b.node): b for b in file.index.branches}
    for node, loop in _tests_in([loop for loop in file.index.loops if loop.parent is None], loops):
        branch = branches.get(id(node))
        if branch is not None and sem.loops.rare_conds(branch.conds, loop):
            continue
        test = node.test if isinstance(node, (cst.If, cst.IfExp, cst.While)) else None
        if test is None:
            continue
        for side, array in _element_sides(file, test, loop.scope, loop):
            file.report("OFF302", side, api=f"the test `{short(file, test)}`", array=array,
                        loop_line=file.line(loop.node))
            break


def _tests_in(outermost: list[Loop], loops: dict[int, Loop]) -> list[tuple[cst.CSTNode, Loop]]:
    """Every `if`, `while` and conditional expression inside a loop of its own function, with the innermost such
    loop (a loop's own `while` test belongs to it): one walk of each outermost loop, nothing outside loops."""
    found: dict[int, tuple[cst.CSTNode, Loop]] = {}
    stack: list[Loop | None] = [None]

    class Finder(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            loop = loops.get(id(n))
            if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                stack.append(None)  # a function defined in a loop runs when it is called, not per iteration
            elif loop is not None:
                stack.append(loop)
            if isinstance(n, (cst.If, cst.IfExp, cst.While)) and stack[-1] is not None:
                found[id(n)] = (n, stack[-1])  # a loop of a function defined in a loop is walked twice
            return True

        def on_leave(self, n: cst.CSTNode) -> None:
            if isinstance(n, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) or id(n) in loops:
                stack.pop()

    for loop in outermost:
        loop.node.visit(Finder())
    return list(found.values())


def _element_sides(file: CheckedFile, test: cst.BaseExpression, scope: Scope,
                   loop: Loop) -> list[tuple[cst.BaseExpression, str]]:
    """The sides of the test's comparisons that are one element of a device array the loop walks."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _element_sides(file, test.expression, scope, loop)
    if isinstance(test, cst.BooleanOperation):
        return _element_sides(file, test.left, scope, loop) + _element_sides(file, test.right, scope, loop)
    if not isinstance(test, cst.Comparison) or not all(isinstance(c.operator, COMPARISONS) for c in test.comparisons):
        return []
    sides = (test.left, *(c.comparator for c in test.comparisons))
    if any(isinstance(side, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)) for side in sides):
        return []  # `keys[t] == "device"`: strings, whatever the analysis thinks `keys` is
    out = []
    for side in sides:
        array = _element(file, side, scope, loop)
        if array is not None:
            out.append((side, array))
    return out


def _element(file: CheckedFile, side: cst.BaseExpression, scope: Scope, loop: Loop) -> str | None:
    """`board[i, j]`, or a name bound once to it in the loop (`v = board[i, j]`): the array, when it is on the
    device and the loop walks it."""
    value: cst.BaseExpression = side
    if isinstance(side, cst.Name):
        bindings = file.sem.names.assignments(file.sem.names.name_of(side), scope)
        if len(bindings) == 1 and bindings[0][0] == "=" and isinstance(bindings[0][1], cst.Subscript):
            value = bindings[0][1]
    if not isinstance(value, cst.Subscript) or file.sem.values.device_lib(value.value, scope) is None:
        return None
    return element_source(file, scope, loop, value)
