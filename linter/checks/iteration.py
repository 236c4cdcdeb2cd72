"""Where code runs once per iteration: inside a loop of its own function, or in a function a loop runs.

The sync and copy rules began as loop rules: a `.item()` inside `for batch
in loader:`. Real training code puts most of its per-step work in
functions the loop calls (a loss, a matcher, a `forward`), often in other
files; `analysis.functions` says which functions run once per iteration
and why (`Hot`). An `Iteration` is either kind of place, and says it in a
message's `{where}`: "iteration of the loop at line 12" or "call of
`mask_rcnn_loss` (a loss, computed on every step)".

A statement of a hot function under a periodic test (`if step % 20 == 0`,
`if storage.itstime(...)`) runs every N calls, not every call, and is no
place of iteration.
"""

from __future__ import annotations

import re

from dataclasses import dataclass

import libcst as cst

from ..analysis.callgraph import Hot
from ..analysis.conditions import expand_flags
from ..analysis.loops import few, over_entries
from ..analysis.memoryblocks import by_memory
from ..analysis.scopes import IndexedCall, IndexedNode, Loop, Scope
from .file import CheckedFile


@dataclass(frozen=True)
class Iteration:
    """A loop of the node's own function, or the hot function it sits in (exactly one is set)."""

    loop: Loop | None
    hot: Hot | None
    scope: Scope

    def where(self, file: CheckedFile) -> str:
        if self.loop is not None:
            return f"iteration of the loop at {_label(file, file.line(self.loop.node))}"
        assert self.hot is not None
        return self.hot.text(file.path, lambda n: _label(file, file.line(file.index.loops[n].node)))

    @property
    def body(self) -> cst.CSTNode:
        """What runs once per iteration: the loop, or the hot function's definition."""
        return self.loop.node if self.loop is not None else self.scope.node


def _label(file: CheckedFile, line: int) -> str:
    return f"line {file.line_label(line) if file.line_label is not None else line}"


def iteration_of(file: CheckedFile, where: IndexedCall | IndexedNode, functions: bool = True) -> Iteration | None:
    """The iteration `where` runs in; with `functions` False, loops only (the rules that need one)."""
    loop = where.loop
    while loop is not None and (over_entries(loop) or few(loop) or by_memory(loop)):
        loop = loop.parent  # `for k, v in kwargs.items()`, `for lut in (a, b)`: the enclosing iteration counts
    if loop is not None:
        return Iteration(loop, None, where.scope)
    if not functions:
        return None
    hot = file.sem.functions.hot(where.scope)
    if hot is None or file.sem.loops.periodic(where.conds):
        return None
    scope = where.scope
    while scope.kind == "lambda" and scope.parent is not None:
        scope = scope.parent
    if file.sem.loops.periodic(early_exits(file, scope, where.node)):
        return None  # `if not should_log: return` above it: the rest of the step runs every N steps
    return Iteration(None, hot, scope)


def early_exits(file: CheckedFile, scope: Scope, node: cst.CSTNode) -> tuple[tuple[cst.BaseExpression, bool], ...]:
    """The tests of the `if ...: return` statements at the top of the function's body before `node`, as the
    conditions under which the function goes on (`if not should_log: return` -> `should_log`, taken), with a
    flag bound once in the function replaced by its value (`should_log = self.metrics.should_log(step)`)."""
    function = scope.node
    if not isinstance(function, cst.FunctionDef) or not isinstance(function.body, cst.IndentedBlock):
        return ()
    exits = [s for s in function.body.body if isinstance(s, cst.If) and s.orelse is None and _returns(s.body)]
    if not exits:
        return ()
    line = file.line(node)
    out: list[tuple[cst.BaseExpression, bool]] = []
    for statement in exits:
        if file.line(statement) >= line:
            break
        test, taken = statement.test, False
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            test, taken = test.expression, True
        out.append((expand_flags(test, lambda name: _bound_once(file, name, scope), depth=1), taken))
    return tuple(out)


def _returns(body: cst.BaseSuite) -> bool:
    """Does the block end by returning (`return`, `return x`)?"""
    lines = body.body if isinstance(body, cst.IndentedBlock) else [body]
    last = lines[-1] if lines else None
    small = last.body if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else []
    return bool(small) and isinstance(small[-1], cst.Return)


def _bound_once(file: CheckedFile, name: str, scope: Scope) -> cst.BaseExpression | None:
    """The one expression the function binds `name` to (`should_log = self.metrics.should_log(step)`), or None."""
    bindings = file.sem.names.assignments(name, scope)
    if len(bindings) == 1 and bindings[0][0] == "=" and isinstance(bindings[0][1], cst.BaseExpression):
        return bindings[0][1]
    return None


RANKS = re.compile(r"world_size|num_gpus|n_gpus|ngpus|nprocs|num_processes|num_ranks|n_ranks")


def over_ranks(file: CheckedFile, loop: Loop) -> bool:
    """Does the loop walk the processes of a job (`range(world_size)`, or a list built over it)?

    `[int(s.item()) for s in sizes]` after `all_gather` reads one number per
    rank: a handful, once per gather, the set-up of a collective rather than
    per-step work.
    """
    node = loop.node
    source = node.iter if isinstance(node, (cst.For, cst.CompFor)) else None
    if isinstance(source, cst.Name):
        return any(how == "=" and isinstance(v, cst.ListComp) and _range_of_ranks(v.for_in.iter)
                   for how, v in file.sem.names.assignments(source.value, loop.scope))
    return source is not None and _range_of_ranks(source)


def _range_of_ranks(source: cst.BaseExpression) -> bool:
    if not (isinstance(source, cst.Call) and isinstance(source.func, cst.Name) and source.func.value == "range"
            and source.args):
        return False
    bound = source.args[-1].value if len(source.args) == 1 else source.args[1].value
    if isinstance(bound, cst.Call) and not bound.args:
        bound = bound.func  # `range(dist.get_world_size())`
    text = bound.attr.value if isinstance(bound, cst.Attribute) else bound.value if isinstance(bound, cst.Name) else ""
    return bool(RANKS.search(text))
