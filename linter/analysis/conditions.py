"""The shapes of branch conditions that say how often a branch runs, whatever the loop around it.

`if step % 100 == 0`, `if last or step % n == 0`, `if name == "fc"`, `if shown < 3` with `shown += 1`,
`if u.itstime(...)`, `if i == n - 1`, `if first: first = False`: each is true on a few iterations or once every
N, so what the branch does is not a per-iteration cost. `loops.LoopFacts.rare_conds` asks them with what the
loop changes and counts; they read only the condition's syntax.
"""

from __future__ import annotations

import re
from typing import Callable

import libcst as cst

from .children import walk

PERIODIC_HELPER = re.compile(r"itstime|every|^should_(?:log|save|eval\w*|print|checkpoint|validate|report)$|_due$|^time_to_")


DEBUG_SWITCHES = frozenset({"check", "checks", "debug", "debug_mode", "sanity_check", "sanity_checks", "verify",
                            "validate_inputs", "check_inputs", "paranoid", "strict_checks"})


#: a divisor that counts micro-batches per optimizer step: `(i + 1) % grad_accum_steps == 0` is every step
ACCUMULATION = re.compile(r"accum", re.IGNORECASE)


def helper_says_when(test: cst.BaseExpression) -> bool:
    """`u.itstime(...)`, `(keep := u.itstime(...)) or u.itstime(...)`, `should_log(s) and rank == 0`."""
    if isinstance(test, cst.NamedExpr):
        return helper_says_when(test.value)
    if isinstance(test, cst.BooleanOperation):
        if isinstance(test.operator, cst.Or):
            return helper_says_when(test.left) and helper_says_when(test.right)
        return helper_says_when(test.left) or helper_says_when(test.right)
    if isinstance(test, cst.Call):
        func = test.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        return bool(PERIODIC_HELPER.search(name))
    return False


def debug_switch(test: cst.BaseExpression) -> bool:
    """`if check:`, `if self.debug:`, `if args.sanity_checks:`: a switch for checks that are off unless a user
    debugging turns them on (`check: bool = False`), so what it guards is no cost of an ordinary run."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return debug_switch(test.left) or debug_switch(test.right)
    name = test.attr.value if isinstance(test, cst.Attribute) else test.value if isinstance(test, cst.Name) else ""
    return name in DEBUG_SWITCHES


def equalities(test: cst.BaseExpression, taken: bool, constants: bool = True) -> list[cst.Comparison]:
    """Comparisons with a constant (any comparison, with `constants=False`) that must hold as equalities for the
    branch to run.

    `==`/`is`/`in` on the taken side, `!=`/`is not`/`not in` on the else side,
    through `and` (taken side) or `or` (else side) and `not`.
    """
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, taken = test.expression, not taken
    if isinstance(test, cst.BooleanOperation):
        joins = isinstance(test.operator, cst.And) if taken else isinstance(test.operator, cst.Or)
        return equalities(test.left, taken, constants) + equalities(test.right, taken, constants) if joins else []
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        op = test.comparisons[0].operator
        equal = isinstance(op, (cst.Equal, cst.Is, cst.In))
        unequal = isinstance(op, (cst.NotEqual, cst.IsNot, cst.NotIn))
        comparator = test.comparisons[0].comparator
        if (constant(comparator) or not constants) and ((taken and equal) or (not taken and unequal)) \
                and not accumulation_step(test):  # the optimizer's step is taken every step, not rarely
            return [test]
    return []


def every_n(comparison: cst.Comparison) -> bool:
    """`x % n == c`: true once every n values of x."""
    sides = [comparison.left, *(c.comparator for c in comparison.comparisons)]
    return any(isinstance(side, cst.BinaryOperation) and isinstance(side.operator, cst.Modulo) for side in sides)


def accumulation_step(comparison: cst.Comparison) -> bool:
    """`(i + 1) % grad_accum_steps == 0`: the optimizer's step of gradient accumulation, taken on every step of
    training (the divisor is 1 by default in most recipes), so what it reads is read per step, not periodically:
    `equalities` leaves it out."""
    sides = [comparison.left, *(c.comparator for c in comparison.comparisons)]
    return any(isinstance(side, cst.BinaryOperation) and isinstance(side.operator, cst.Modulo)
               and ACCUMULATION.search(_last_name(side.right)) for side in sides)


def _last_name(node: cst.BaseExpression) -> str:
    """`self.grad_accum` -> "grad_accum"; `n` -> "n"; anything else -> ""."""
    return node.attr.value if isinstance(node, cst.Attribute) else node.value if isinstance(node, cst.Name) else ""


def first_k_of_n(comparison: cst.Comparison) -> bool:
    """`(it % check_every) < cycle`: true on the first few of every n values of it."""
    op = comparison.comparisons[0].operator
    left = comparison.left
    return (len(comparison.comparisons) == 1 and isinstance(op, (cst.LessThan, cst.LessThanEqual))
            and isinstance(left, cst.BinaryOperation) and isinstance(left.operator, cst.Modulo))


def every_n_or_flag(test: cst.BaseExpression, taken: bool, equal_flags: bool = False) -> bool:
    """`if last_batch or step % n == 0:` (the usual logging test): every N steps, or on a flagged one
    (a name; with `equal_flags`, also an equality such as `i + 1 == n`: one step).

    The equalities are for a test inside the loop whose reads it guards; a
    test around an inner loop (`if step % e == 0 or step == total:` over an
    evaluation's batches) leaves that loop's reads per batch."""
    if not taken or not isinstance(test, cst.BooleanOperation) or not isinstance(test.operator, cst.Or):
        return False
    parts: list[cst.BaseExpression] = []
    stack: list[cst.BaseExpression] = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.BooleanOperation) and isinstance(node.operator, cst.Or):
            stack += [node.left, node.right]
        else:
            parts.append(node)
    periodic = [p for p in parts if any(every_n(c) for c in equalities(p, True))]
    flags = [p for p in parts if p not in periodic and (isinstance(p, (cst.Name, cst.Attribute)) or (
        equal_flags and isinstance(p, cst.Comparison) and len(p.comparisons) == 1
        and isinstance(p.comparisons[0].operator, cst.Equal)))]
    return bool(periodic) and len(periodic) + len(flags) == len(parts)


def conjunct_comparisons(test: cst.BaseExpression) -> list[cst.Comparison]:
    """The comparisons joined by `and` in a test (each must hold for the branch to run)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return conjunct_comparisons(test.left) + conjunct_comparisons(test.right)
    return [test] if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 else []


def bounded(comparison: cst.Comparison, counted: frozenset[str]) -> bool:
    """`count < N` / `count <= N` for a counter the loop increases: true a bounded number of times."""
    op = comparison.comparisons[0].operator
    bound = comparison.comparisons[0].comparator
    return (isinstance(op, (cst.LessThan, cst.LessThanEqual)) and isinstance(comparison.left, cst.Name)
            and comparison.left.value in counted and isinstance(bound, cst.Integer))


def constant(node: cst.BaseExpression) -> bool:
    """A literal number or string, or None/True/False."""
    return isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)) or (
        isinstance(node, cst.Name) and node.value in ("None", "True", "False"))


def counter_of(loop_node: cst.CSTNode) -> str | None:
    """The name a `for` loop counts with: `i` of `for i in range(n)` and of `for i, x in enumerate(xs)`."""
    if not isinstance(loop_node, cst.For) or not isinstance(loop_node.iter, cst.Call):
        return None
    func = loop_node.iter.func
    name = func.value if isinstance(func, cst.Name) else ""
    target = loop_node.target
    if name == "range" and isinstance(target, cst.Name):
        return target.value
    if name == "enumerate" and isinstance(target, (cst.Tuple, cst.List)) and target.elements and \
            isinstance(target.elements[0].value, cst.Name):
        return target.elements[0].value.value
    return None


def cleared(value: object) -> bool:
    """`False`, `None`, `0`: what a flag the loop only clears is set to (`if first: first = False; ...`)."""
    return (isinstance(value, cst.Name) and value.value in ("False", "None")) or (
        isinstance(value, cst.Integer) and value.value == "0")


def expand_flags(test: cst.BaseExpression, binding: Callable[[str], cst.BaseExpression | None],
                 depth: int = 3) -> cst.BaseExpression:
    """`test` with each flag name the loop sets replaced by what it is set to, through `or`, `and` and `not`.

    `is_console = step % n == 0 or last_batch`, then `is_metric = step % m == 0
    or is_console` and `if is_metric:`: the branch is periodic, but only the
    names' values say so. `binding(name)` gives the one expression the loop
    binds `name` to, or None (bound more than once, or not in the loop).
    """
    if depth <= 0:
        return test
    if isinstance(test, cst.Name):
        value = binding(test.value)
        return test if value is None else expand_flags(value, binding, depth - 1)
    if isinstance(test, cst.BooleanOperation):
        return test.with_changes(left=expand_flags(test.left, binding, depth), right=expand_flags(test.right, binding, depth))
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return test.with_changes(expression=expand_flags(test.expression, binding, depth))
    return test


def and_parts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The conjuncts of a test (`is_master(args) and (step % n == 0 or last)`: both must hold), else the test."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return and_parts(test.left) + and_parts(test.right)
    return [test]


def in_handler(node: cst.CSTNode, statements: tuple[cst.CSTNode, ...]) -> bool:
    """Is `node` on an error path of the loop whose open `statements` these are: in an `except` block, or in the
    `try` of a retry loop (its body ends in `return` or `break`, so the loop goes round again only after a failure)?

    `except torch.cuda.OutOfMemoryError: torch.cuda.empty_cache()`, `while batch_size: try: empty_cache();
    return validate(...) except RuntimeError: batch_size //= 2`: what runs there runs when something failed,
    not once per iteration of a loop that does work.
    """
    for statement in statements:
        if isinstance(statement, (cst.Try, cst.TryStar)):
            if any(inner is node for handler in statement.handlers for inner in walk(handler.body)):
                return True
            last = statement.body.body[-1] if statement.body.body else None
            ends = isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], (cst.Return, cst.Break))
            if ends and statement is statements[0] and any(
                    inner is node for inner in walk(statement.body)):
                return True
    return False
