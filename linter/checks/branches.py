"""Tests of device values per iteration: OFF104 for asserts, checks and stopping tests.

`assert torch.isfinite(loss).all()` in a training step, `if not (x >= 0).all():
raise ...` in a matcher, `while phivar > tol:` in an iterative solver: each
test turns a device value into a Python bool, which waits for the device
every time, although no call in the line says so.

- **assert / raise**: a self-check. It reads device data on the host every
  iteration to confirm what is almost always true; run it every N steps or
  in debug runs only.
- **stopping test**: a `while` test, or an `if` whose body only leaves the
  loop (`break`, `return`). The host needs the answer, but not this very
  iteration's: testing every N iterations, or the previous iteration's
  value, lets the device keep working while the host waits.
- **a select on the host**: an `if` whose arms only assign device values to
  names (`if abs(g) > r: g = r * g / abs(g)`). The host reads the test only
  to pick one of two values the device can compute and pick itself
  (`where`, `clip`), with no wait.

Other branches on device values decide what to compute next; the host
needs them now (OFF104's `control-flow` option reports the explicit reads
among them, `syncs.py`).
"""

from __future__ import annotations

import re

import libcst as cst

from ..analysis.children import children
from ..analysis.idioms import array_module_variable
from ..analysis.loops import walk
from ..analysis.scopes import IndexedNode, Loop, Scope
from ..analysis.parameters import root_name
from ..analysis.reaching import DOWNLOADS, downloaded, host_before_loop, surely_before
from ..analysis.valuewords import HOST_MODULES, HOST_PREDICATES, PREDICATES
from .devicevalues import TENSOR_METHODS, device_lib, short
from .file import CheckedFile
from .iteration import Iteration, iteration_of
from .registry import check

CHECK_ADVICE = ("a check of device data reads it on the host every time; run it every N steps or only in "
                "debug runs")
SELECT_ADVICE = ("the branch only picks a value, which the device can pick without a wait: compute both and "
                 "select (`where(cond, a, b)`, `clip`)")
STOP_ADVICE = ("test it every N iterations, or test the previous iteration's value, so that the device keeps "
               "working while the host decides")
# Exceptions that tell a caller its arguments are wrong: input validation, not a check of computed data.
VALIDATION = frozenset({"ValueError", "TypeError", "NotImplementedError", "IndexError", "KeyError", "AxisError",
                        "AttributeError", "LookupError"})
READS = frozenset({"item", "tolist"})
DOWNLOADS = frozenset({"jax.device_get", "cupy.asnumpy"})
CONVERSIONS = frozenset({"builtins.float", "builtins.int", "builtins.bool"})


@check("OFF104")
def branches(file: CheckedFile) -> None:
    loops_by_node = {id(loop.node): loop for loop in file.index.loops}
    for branch in file.index.branches:
        node = branch.node
        if isinstance(node, cst.Assert):
            _check(file, branch, node.test, "`assert` of a device value")
        elif isinstance(node, cst.Raise):
            if branch.conds and branch.conds[-1][1] and not _validates(node):  # `if not ok: raise ...`
                _check(file, branch, branch.conds[-1][0], "the check `{}`")
        elif isinstance(node, cst.While):
            loop = loops_by_node.get(id(node))
            if loop is not None and not file.sem.loops.nests_loops(loop, file.index.loops):
                _stop(file, node.test, Iteration(loop, None, branch.scope), branch.scope, branch.index)
        elif isinstance(node, cst.If) and _only_leaves(node):
            it = iteration_of(file, branch, functions=False)
            if it is None or it.loop is None or it.loop.kind == "comp" or _rare(file, branch, it.loop):
                continue
            if not file.sem.loops.nests_loops(it.loop, file.index.loops):  # else: once per batch of inner work
                _stop(file, node.test, it, branch.scope, branch.index)
        elif isinstance(node, cst.If) and _assigns_only(node):
            _select(file, branch, node)
        elif isinstance(node, cst.If) and _sets_stop_flag(node):
            it = iteration_of(file, branch)
            if it is None or (it.loop is not None and (it.loop.kind == "comp" or _rare(file, branch, it.loop)
                                                       or file.sem.loops.nests_loops(it.loop, file.index.loops))):
                continue
            _stop(file, node.test, it, branch.scope, branch.index)


@check("OFF104")
def reductions_on_the_host(file: CheckedFile) -> None:
    """`any(not th.isfinite(p.grad).all() for p in params)`: Python's any/all over device values, one sync each.

    Each element's truth is read on the host in turn, so an overflow check
    over a model's parameters waits for the device once per parameter on
    every step; stacking the flags and reducing on the device reads one.
    """
    for call in file.index.calls:
        node = call.node
        name = file.sem.names.qualify(node.func)
        if name not in ("builtins.any", "builtins.all") or len(node.args) != 1:
            continue
        gen = node.args[0].value
        if not isinstance(gen, (cst.GeneratorExp, cst.ListComp)):
            continue
        it = iteration_of(file, call)
        if it is None or (it.loop is not None and _rare(file, call, it.loop)):
            continue
        element = gen.elt.expression if isinstance(gen.elt, cst.UnaryOperation) else gen.elt
        if not _device_call(file, element, it) or device_lib(file, element, call.scope, it) is None:
            continue  # `any(x is not y for ...)`, `all(s == 1.0 for s in spacing)`: host tests
        file.report("OFF104", node, api=f"`{name[len('builtins.'):]}()` over device values (one read per element)",
                    where=it.where(file), advice="stack them and reduce on the device (`torch.stack(flags).any()`), "
                                                 "then read one value")


def _check(file: CheckedFile, branch: IndexedNode, test: cst.BaseExpression, api: str) -> None:
    it = iteration_of(file, branch)
    if it is None or (it.loop is not None and _rare(file, branch, it.loop)):
        return
    if not _reads_device(file, test, branch.scope, it):
        return
    file.report("OFF104", test, api=api.format(short(file, test)), where=it.where(file), advice=CHECK_ADVICE)


def _stop(file: CheckedFile, test: cst.BaseExpression, it: Iteration, scope: Scope, index: int) -> None:
    if (it.loop is not None and _host_in_loop(file, test, it, index)) or not _reads_device(file, test, scope, it):
        return
    file.report("OFF104", test, api=f"the stopping test `{short(file, test)}`", where=it.where(file),
                    advice=STOP_ADVICE)


def _select(file: CheckedFile, branch: IndexedNode, node: cst.If) -> None:
    """`if abs(g) > r: g = r * g / abs(g)` per iteration: report the test when it is a select the device can make.

    Three things must hold, so that the host's answer is only used to pick a
    value: the test computes on the device here (a library call in it, or a
    name the function bound to one: `n = torch.norm(c)`); the arms assign
    the same names (`m = ~s` / `m = ones(...)`), or one arm rescales what
    the test measured (`c = c / n`); and every value they assign is a device
    value (a host number chosen by a device test is the program's business).
    """
    it = iteration_of(file, branch)
    if it is None or (it.loop is not None and (it.loop.kind == "comp" or _rare(file, branch, it.loop))):
        return
    test = node.test
    if _host_truth(test) or _host_question(test) or not _computed_on_device(file, test, branch.scope, it) or \
            not _picks(file, node):
        return
    if not all(device_lib(file, s.value, branch.scope, it) is not None for s in _arm_statements(node)):
        return
    if not _reads_device(file, test, branch.scope, it):
        return
    file.report("OFF104", test, api=f"the branch `{short(file, test)}`", where=it.where(file), advice=SELECT_ADVICE)


#: words in a name that say it holds what the host knows of an array (its shape, dtype, device), not its data
METADATA_WORD = re.compile(r"shape|dtype|device|ndim", re.I)


def _host_question(test: cst.BaseExpression) -> bool:
    """A test the host answers alone: a comparison with a string (`x.mode == "RGB"`), a type or dtype question,
    a comparison of shapes or devices (`outer_shape != bc_shape`, `device == backend.cpu_device`)."""
    for node in walk(test):
        if isinstance(node, cst.Comparison) and any(
                METADATA_WORD.search(name.value) for name in _names_in(node)):
            return True
        if isinstance(node, cst.Comparison) and any(
                isinstance(side, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
                for side in [node.left, *(c.comparator for c in node.comparisons)]):
            return True
        if isinstance(node, cst.Call):
            func = node.func
            name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(
                func, cst.Name) else ""
            if name in HOST_PREDICATES or name.startswith(PREDICATES):
                return True
    return False


def _picks(file: CheckedFile, node: cst.If) -> bool:
    """Both arms assign the same names, or the one arm assigns from a name the test reads (`if n > 1: c = c / n`)."""
    statements = _arm_statements(node)
    body = [s for s in statements if _in(s, node.body)]
    rest = [s for s in statements if not _in(s, node.body)]
    if rest:
        return {_target(s) for s in body} == {_target(s) for s in rest}
    tested = {n.value for n in _names_in(node.test)} - _modules(file, node.test)
    return any(tested & {n.value for n in _names_in(s.value)} for s in body if s.value is not None)


def _modules(file: CheckedFile, test: cst.BaseExpression) -> set[str]:
    """The names in the test that stand for imported modules (`cupy` of `cupy.isnan(y)`), not values."""
    return {n.value for n in _names_in(test) if file.sem.names.qualify(n) == n.value or (
        (file.sem.names.qualify(n) or "").split(".")[0] in ("cupy", "torch", "jax", "numpy", "cupyx", "math"))}


def _in(statement: cst.CSTNode, block: cst.BaseSuite) -> bool:
    """Is the statement (this very node) one of the block's?"""
    return isinstance(block, cst.IndentedBlock) and any(
        isinstance(line, cst.SimpleStatementLine) and any(s is statement for s in line.body) for line in block.body)


def _target(statement: cst.BaseSmallStatement) -> str:
    if isinstance(statement, cst.Assign):
        target = statement.targets[0].target
    elif isinstance(statement, cst.AugAssign):
        target = statement.target
    else:
        return ""
    return target.value if isinstance(target, cst.Name) else ""


def _computed_on_device(file: CheckedFile, test: cst.BaseExpression, scope: Scope, it: Iteration) -> bool:
    """Does the test compute on the device itself (a device library's call, an array method of a device value:
    `mask.any()`), or read a name this function bound to such a computation?"""
    if _device_call(file, test, it) or _array_method(file, test, scope, it):
        return True
    for name in _names_in(test):
        for how, value in file.sem.names.assignments(name.value, scope):
            if how in ("=", "aug") and isinstance(value, cst.BaseExpression) and (
                    _device_call(file, value, it) or _array_method(file, value, scope, it)):
                return True
    return False


def _array_method(file: CheckedFile, expr: cst.BaseExpression, scope: Scope, it: Iteration) -> bool:
    """`(coords == -1).all(dim=-1)`, `mask.any()`: a reduction method called on a device value."""
    for node in walk(expr):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                node.func.attr.value in TENSOR_METHODS and device_lib(file, node.func.value, scope, it) is not None:
            return True
    return False


def _arm_statements(node: cst.If) -> list[cst.BaseSmallStatement]:
    blocks = [node.body] + ([node.orelse.body] if isinstance(node.orelse, cst.Else) else [])
    return [s for block in blocks if isinstance(block, cst.IndentedBlock)
            for line in block.body if isinstance(line, cst.SimpleStatementLine) for s in line.body]


def _assigns_only(node: cst.If) -> bool:
    """Arms (`if`, and an `else`, no `elif`) made only of assignments to plain names: `g = r * g / abs(g)`."""
    if isinstance(node.orelse, cst.If):
        return False
    blocks = [node.body] + ([node.orelse.body] if isinstance(node.orelse, cst.Else) else [])
    lines = [line for block in blocks if isinstance(block, cst.IndentedBlock) for line in block.body]
    if len(lines) != sum(len(b.body) for b in blocks if isinstance(b, cst.IndentedBlock)) or not lines or \
            not all(isinstance(line, cst.SimpleStatementLine) for line in lines):
        return False
    for statement in _arm_statements(node):
        if isinstance(statement, cst.Assign):
            if len(statement.targets) != 1 or not isinstance(statement.targets[0].target, cst.Name):
                return False
        elif isinstance(statement, cst.AugAssign):
            if not isinstance(statement.target, cst.Name):
                return False
        else:
            return False
    return True


def _validates(node: cst.Raise) -> bool:
    """`raise ValueError(...)`: a check of the caller's arguments, which belongs where it is."""
    exc = node.exc.func if isinstance(node.exc, cst.Call) else node.exc
    name = exc.attr.value if isinstance(exc, cst.Attribute) else exc.value if isinstance(exc, cst.Name) else ""
    return name in VALIDATION


def _host_in_loop(file: CheckedFile, test: cst.BaseExpression, it: Iteration, index: int) -> bool:
    """A name of the test that the loop rebinds to a host value (`t_next = float(...)`): the test reads the host.

    The device-value analysis is flow-insensitive: `t_next = image.mean()`
    before the loop and `t_next = (a - b) / c` of floats inside it make
    `t_next` a device value, but from the second iteration on the test
    sees only the loop's own binding: the last one above the test in the
    iteration, else (a `while` test) the last one of the previous iteration.
    """
    loop = it.loop
    assert loop is not None
    if _device_call(file, test, it):
        return False  # `while cp.linalg.norm(r) > tol:` reads the device whatever its arguments' names hold
    names = {n.value for n in _names_in(test)}
    events = loop.scope.events
    for name in names:
        binds = [i for i in range(loop.start, loop.end) if events[i].kind == "bind" and events[i].name == name]
        if not binds:
            continue
        before = [i for i in binds if i < index]  # (`index`: the events above the test; a `while` has none)
        last = before[-1] if before else binds[-1]  # this iteration's binding, else the previous iteration's
        how, value = events[last].extra
        if how == "=" and isinstance(value, cst.BaseExpression) and _host_at(file, value, loop, last) and \
                surely_before(file.sem.names, loop.scope, events[last].node, test):
            return True  # `next_word = next_word.item()` above `if next_word == end: break`
    return False


def _device_call(file: CheckedFile, expr: cst.BaseExpression, it: Iteration) -> bool:
    """Does `expr` compute on the device itself: a call of a device library whose result is a device value
    (`cp.abs(x).max()`, `xp.linalg.norm(r)`, `th.isfinite(p.grad).all()`)?"""
    for node in walk(expr):
        if not isinstance(node, cst.Call):
            continue
        qualname = file.sem.names.qualify(node.func)
        root = root_name(node.func)
        library = qualname is not None and qualname.split(".")[0] not in HOST_MODULES
        if (library or (root is not None and array_module_variable(file.sem.names, root.value, it.scope))) and \
                device_lib(file, node, it.scope, it) is not None:
            return True  # not `abs(t_next - t_prev)`: a builtin of names that may hold host numbers
    return False


def _host_at(file: CheckedFile, value: cst.BaseExpression, loop: Loop, index: int, depth: int = 0) -> bool:
    """Is `value` a host value when event `index` of the loop binds it?

    Its names are taken as the iteration last bound them before that point
    (and those bindings' names likewise, a few levels down): `mean =
    float(mean)` earlier in the body makes `(mean - m) / d` a host number,
    though `mean = np.average(d)` elsewhere is a device array.
    """
    values = file.sem.values
    if values.array_lib(value, loop.scope) is None or (
            isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in DOWNLOADS and downloaded(values, value, loop.scope)):
        return True  # `normx = normx.get().item()` (not `np.average(d)`, which CuPy computes for a CuPy `d`)
    calls = [n for n in walk(value) if isinstance(n, cst.Call)]
    if any((file.sem.names.qualify(c.func) or "").split(".")[0] not in HOST_MODULES for c in calls):
        return False  # `cp.abs(x).max()`: a device value whatever its names hold
    called = {id(c.func) for c in calls}
    events = loop.scope.events
    for name in _names_in(value):
        if id(name) in called:
            continue
        last = next((k for k in range(index - 1, loop.start, -1)
                     if events[k].kind == "bind" and events[k].name == name.value), None)
        if last is not None:
            how, bound = events[last].extra
            if how == "=" and isinstance(bound, cst.BaseExpression) and depth < 3 and \
                    _host_at(file, bound, loop, last, depth + 1):
                continue
            return False
        if values.array_lib(name, loop.scope) is not None and not host_before_loop(values, name, loop):
            return False  # (`normb = nrm2(b).get().item()` before the loop: a host number, whatever it was first)
    return True


def _names_in(node: cst.CSTNode) -> list[cst.Name]:
    out, stack = [], [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            out.append(current)
        elif isinstance(current, cst.Attribute):
            stack.append(current.value)
        else:
            stack.extend(children(current))
    return out


def _rare(file: CheckedFile, branch: IndexedNode, loop: Loop) -> bool:
    return file.sem.loops.rare_conds(branch.conds, loop)


def _reads_device(file: CheckedFile, test: cst.BaseExpression, scope: Scope, it: Iteration) -> bool:
    """Does deciding `test` read a device value: its truth, or an explicit `.item()`/`float()` inside it?"""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _reads_device(file, test.expression, scope, it)
    if isinstance(test, cst.BooleanOperation):
        return _reads_device(file, test.left, scope, it) or _reads_device(file, test.right, scope, it)
    if _host_truth(test) or isinstance(test, cst.Comparison) and _host_truth(test.left) and all(
            _host_truth(c.comparator) for c in test.comparisons):
        return False  # `(y is None) == (n is None)`: Python truths compared on the host
    if device_lib(file, test, scope, it) is not None:
        return True
    stack: list[cst.CSTNode] = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Lambda, cst.ListComp, cst.GeneratorExp)):
            continue
        if isinstance(node, cst.Call):
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in READS and not node.args:
                if device_lib(file, func.value, scope, it) is not None:
                    return True
            elif file.sem.names.qualify(func) in DOWNLOADS and node.args:
                return True  # `jax.device_get(flag)`: a download is a wait
            elif file.sem.names.qualify(func) in CONVERSIONS and len(node.args) == 1:
                if device_lib(file, node.args[0].value, scope, it) is not None:
                    return True
        stack.extend(children(node))
    return False


def _host_truth(expr: cst.BaseExpression) -> bool:
    """A Python bool whatever the operands hold: `x is None`, `k in table`, `not` of one, `True`/`False`."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        return _host_truth(expr.expression)
    if isinstance(expr, cst.Name):
        return expr.value in ("True", "False")
    return isinstance(expr, cst.Comparison) and all(
        isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in expr.comparisons)


def _only_leaves(node: cst.If) -> bool:
    """`if test: break` (or `return ...`): the loop's way out; an `else` is the loop's normal course."""
    if not isinstance(node.body, cst.IndentedBlock):
        return False
    statements = [s for line in node.body.body if isinstance(line, cst.SimpleStatementLine) for s in line.body]
    return len(statements) == len(node.body.body) and bool(statements) and all(
        isinstance(s, (cst.Break, cst.Return)) or _is_log(s) for s in statements) and any(
        isinstance(s, (cst.Break, cst.Return)) for s in statements)


STOP_FLAG = re.compile(r"stop|done|converge|finish|halt|terminat", re.I)


def _sets_stop_flag(node: cst.If) -> bool:
    """`if 1 + test2 <= 1: self.istop = 5`: a test whose body only raises a stop flag (a constant into a name or
    attribute that says so), which a loop's own test then reads: a stopping test one step removed."""
    if not isinstance(node.body, cst.IndentedBlock) or node.orelse is not None:
        return False
    statements = [s for line in node.body.body if isinstance(line, cst.SimpleStatementLine) for s in line.body]
    if len(statements) != len(node.body.body) or not statements:
        return False
    flagged = False
    for statement in statements:
        if isinstance(statement, (cst.Break, cst.Return)) or _is_log(statement):
            continue
        if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
            return False
        target = statement.targets[0].target
        name = target.attr.value if isinstance(target, cst.Attribute) else target.value \
            if isinstance(target, cst.Name) else ""
        if not STOP_FLAG.search(name) or not isinstance(statement.value, (cst.Integer, cst.Name)):
            return False
        if isinstance(statement.value, cst.Name) and statement.value.value not in ("True", "False"):
            return False
        flagged = True
    return flagged


def _is_log(statement: cst.BaseSmallStatement) -> bool:
    """A print or log line before the `break`."""
    if not isinstance(statement, cst.Expr) or not isinstance(statement.value, cst.Call):
        return False
    func = statement.value.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name.startswith(("print", "log", "info", "debug", "warn"))
