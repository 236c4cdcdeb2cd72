"""What the host does with a value it read from the device: the question behind the sync rules' advice.

`loss.item()` in a training loop costs a sync every step. Whether that is
worth reporting, and what to say, depends on what the value is for:

- **control**: it decides a branch, a loop bound, a shape or an index
  (`if err.item() < tol`, `range(int(n))`, `cp.eye(int(k))`). The host
  needs it now; "accumulate on the device" would be wrong advice.
- **metric**: it is only summed, appended, recorded or printed (`total +=
  loss.item()`, `meter.update(acc.item())`, `print(loss.item())`). The
  host could add it up on the device and read it once per log interval.
- **check**: it decides an `if` whose body only logs and aborts (`if not
  math.isfinite(loss.item()): sys.exit(1)`): a self-check of data that is
  almost always fine, which can run every N steps.
- **other**: anything else (a call we do not know, a return value).

The answer comes from the value's place in its statement and, when it is
assigned to a name, from every later use of that name in the loop body.
"""

from __future__ import annotations

import re
from typing import Literal

import libcst as cst

from .children import children
from .loops import walk
from .scopes import IndexedCall

Use = Literal["control", "check", "metric", "other"]
# Methods that record a value: meters, lists, loggers, progress bars, summary writers.
RECORDING_METHODS = frozenset({
    "update", "append", "extend", "add", "add_scalar", "add_scalars", "log", "log_metrics", "log_dict", "info",
    "debug", "warning", "warn", "write", "set_postfix", "set_description", "record", "put", "push", "insert",
    "appendleft", "observe", "set", "setdefault", "add_text",
})
# `storage.put_scalar(...)`, `writer.add_histogram(...)`, `tracker.track(...)`: recorders by their names' look.
RECORDING_PREFIXES = ("log", "print", "put_scalar", "add_scalar", "record", "track", "report")
# Tests of a value's type, not of the value: `isinstance(v, float)` reads nothing from the device.
TYPE_TESTS = frozenset({"builtins.isinstance", "builtins.type", "builtins.callable", "builtins.hasattr", "builtins.id"})
CONTAINER_METHODS = frozenset({"append", "extend", "insert", "appendleft", "add", "put", "push", "setdefault"})
RECORDING_FUNCTIONS = frozenset({"builtins.print", "logging.info", "logging.debug", "logging.warning", "builtins.str",
                                 "builtins.format", "builtins.repr", "builtins.round"})
NUMERIC_FUNCTIONS = frozenset({"builtins.max", "builtins.min", "builtins.abs", "builtins.float", "builtins.int",
                               "math.sqrt", "math.log", "math.exp", "numpy.sum", "numpy.mean", "numpy.asarray",
                               "numpy.array", "numpy.float32", "numpy.float64", "numpy.max", "numpy.min",
                               "math.isfinite", "math.isnan", "math.isinf", "numpy.isfinite", "numpy.isnan",
                               "numpy.isinf", "numpy.logical_and", "numpy.logical_or", "numpy.maximum",
                               "numpy.minimum", "numpy.add"})
# Functions that fold a new value into a running one: `best = max(best, acc)`, `ok = np.logical_and(g, ok)`.
ACCUMULATING = frozenset({"max", "min", "maximum", "minimum", "fmax", "fmin", "logical_and", "logical_or", "add"})
# Calls that end the program: a branch that ends in one runs at most once.
EXITS = frozenset({"sys.exit", "builtins.exit", "builtins.quit", "os._exit", "os.abort"})
CONTROL_FUNCTIONS = frozenset({"builtins.range", "builtins.slice"})


def path_to(root: cst.CSTNode, target: cst.CSTNode) -> list[cst.CSTNode] | None:
    """The nodes from `root` down to `target` (both included), or None when `target` is not under `root`."""
    stack: list[tuple[cst.CSTNode, list[cst.CSTNode]]] = [(root, [root])]
    while stack:
        node, path = stack.pop()
        if node is target:
            return path
        for child in children(node):
            stack.append((child, path + [child]))
    return None


class UseFinder:
    """Classifies uses of values read inside one loop (or one function that runs per iteration).

    `qualify` resolves names as the file imports them.
    """

    def __init__(self, loop_node: cst.CSTNode, qualify, kept: bool = True) -> None:  # type: ignore[no-untyped-def]
        """`kept`: does appending the value to a list count as recording it? Yes for a scalar read (`.item()`);
        not for a downloaded array, which the host may go on to use after the loop (embeddings, predictions)."""
        self.loop_node = loop_node
        self.qualify = qualify
        self.kept = kept

    def of_read(self, statement: cst.CSTNode, read: cst.CSTNode, depth: int = 0) -> Use:
        """The use of the value `read` (a call or expression) inside `statement` (its small statement)."""
        path = path_to(statement, read)
        if path is None:
            return "other"
        return self._classify(path, depth)

    def _classify(self, path: list[cst.CSTNode], depth: int) -> Use:
        # Walk up from the read: the first ancestor that says what the value is for decides.
        for i in range(len(path) - 2, -1, -1):
            node, child = path[i], path[i + 1]
            if isinstance(node, cst.If) and child is node.test and aborts(node.body, self.qualify):
                return "check"
            if isinstance(node, (cst.If, cst.While)) and child is node.test:
                return "control"
            if isinstance(node, cst.IfExp) and child is node.test:
                return "control"
            if isinstance(node, cst.Assert):
                return "other"
            if isinstance(node, cst.SubscriptElement) or isinstance(node, cst.Slice):
                return "control"
            if isinstance(node, cst.Comparison):
                continue
            if isinstance(node, cst.Call):
                if child is node.func:
                    continue  # `x.item()` as the receiver of a method: keep going up
                qualname = self.qualify(node.func)
                if qualname in CONTROL_FUNCTIONS:
                    return "control"
                if qualname in NUMERIC_FUNCTIONS:
                    continue  # max(n, 1), abs(x): the number goes on to where the result goes
                if qualname in RECORDING_FUNCTIONS:
                    if qualname in ("builtins.print",):
                        return "metric"
                    continue
                if isinstance(node.func, cst.Attribute):
                    name = node.func.attr.value
                    if name in CONTAINER_METHODS and not self.kept:
                        return "other"
                    if name in RECORDING_METHODS or name.startswith(RECORDING_PREFIXES):
                        return "metric"
                    if name == "format":
                        continue
                if isinstance(node.func, cst.Name) and node.func.value.startswith(("log", "print")):
                    return "metric"
                return "other"
            if isinstance(node, cst.AugAssign):
                return "metric" if child is node.value else "other"
            if isinstance(node, (cst.Assign, cst.AnnAssign)):
                if child is node.value and _accumulates(node):
                    return "metric"  # `top1 = top1 + n.item()`: an AugAssign spelled out
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                if all(isinstance(t, cst.Subscript) and _string_key(t) for t in targets):
                    return "metric"  # stats["loss"] = loss.item(): a record under a name
                if self.kept and all(isinstance(t, cst.Subscript) for t in targets):
                    return "metric"  # losses[k] = loss.item(): a scalar kept in a slot, as `append` keeps it
                targets = [e.value for t in targets for e in (t.elements if isinstance(t, (cst.Tuple, cst.List))
                                                              else [cst.Element(t)])]  # `a, b = read(...)`
                names = [t.value for t in targets if isinstance(t, cst.Name)]
                if len(names) == len(targets) and names and depth < 2:
                    return self._of_names(names, node, depth + 1)
                return "other"
            if isinstance(node, (cst.Return, cst.Yield)):
                return "other"
        return "other"

    def _of_names(self, names: list[str], assignment: cst.CSTNode, depth: int) -> Use:
        """Every later use of the names in the loop body decides; no use at all is "other"."""
        uses: list[Use] = []
        for statement, name in self._loads(names, assignment):
            if _filled_in(statement, name):
                continue  # `logs.update({"frames": n})`: entries added to the record, which says nothing of its use
            uses.append(self.of_read(statement, name, depth))
        if not uses:
            return "other"
        if "control" in uses:
            return "control"
        if "check" in uses:
            return "check"
        return "metric" if all(u == "metric" for u in uses) else "other"

    def _loads(self, names: list[str], assignment: cst.CSTNode) -> list[tuple[cst.CSTNode, cst.Name]]:
        out: list[tuple[cst.CSTNode, cst.Name]] = []
        body = self.loop_node.body if isinstance(self.loop_node, (cst.For, cst.While, cst.FunctionDef)) else None
        if body is None:
            return out
        for statement in walk(body):
            if not isinstance(statement, (cst.BaseSmallStatement, cst.If, cst.While)):
                continue
            if statement is assignment:
                continue
            scan = statement.test if isinstance(statement, (cst.If, cst.While)) else statement
            typed = {id(arg.value) for node in walk(scan) if isinstance(node, cst.Call)
                     and self.qualify(node.func) in TYPE_TESTS for arg in node.args[:1]}
            # `logger.log_dict(log_dict)`, `f(loss=x)`: an attribute's or a keyword's name is no use of a variable
            typed |= {id(node.attr) for node in walk(scan) if isinstance(node, cst.Attribute)}
            typed |= {id(arg.keyword) for node in walk(scan) if isinstance(node, cst.Call) for arg in node.args
                      if arg.keyword is not None}
            for node in walk(scan):
                if isinstance(node, cst.Name) and node.value in names and not _is_target(statement, node) \
                        and id(node) not in typed:  # `assert isinstance(v, float)` asks for no value
                    out.append((statement, node))
        return out


def kept_as_metric(call: IndexedCall, loop_node: cst.CSTNode, names, scalar: bool) -> bool:  # type: ignore[no-untyped-def]
    """Does the loop `loop_node` only sum, record or print what the call `call` (an indexed call in it) returns?

    `top1 += accuracy(out, y)`, `metrics.append(fetch(m))`: a helper's read handed back to such a call is a
    metric read (checks/returned.py), wherever the helper is defined. `scalar`: the helper hands back one
    number, so a list that keeps it records a metric; otherwise only a list whose names say so
    (`kept_metric`).
    """
    if call.small is None:
        return False
    if UseFinder(loop_node, names.qualify, kept=scalar).of_read(call.small, call.node) == "metric":
        return True
    return not scalar and kept_metric(call.small, call)


METRIC_NAME = re.compile(r"loss|acc|metric|score|err|correct|nll|ppl|perplex|psnr|ssim|reward|return|confusion",
                         re.I)


def kept_metric(statement: cst.CSTNode, call: IndexedCall) -> bool:
    """`losses.append(np.asarray(loss))`: a downloaded array kept in a list is a metric when its names say so.

    A download appended per batch may be data the host needs after the loop
    (embeddings, predictions) or a number to average (a loss); the names of
    the list and of the value are what tells them apart in real code.
    """
    if not isinstance(statement, cst.Expr) or not isinstance(statement.value, cst.Call):
        return False
    func = statement.value.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in ("append", "extend"):
        return False
    names = [func.value] + [a.value for a in call.node.args]
    words = [n.value if isinstance(n, cst.Name) else n.attr.value if isinstance(n, cst.Attribute) else "" for n in names]
    return any(METRIC_NAME.search(w) for w in words if w)


def aborts(body: cst.BaseSuite, qualify) -> bool:  # type: ignore[no-untyped-def]
    """Does the block end the program or raise, after simple statements only: `print(...); sys.exit(1)`?"""
    if isinstance(body, cst.IndentedBlock):
        if not all(isinstance(line, cst.SimpleStatementLine) for line in body.body):
            return False
        statements = [s for line in body.body for s in line.body]  # type: ignore[attr-defined]
    else:
        statements = list(body.body)  # type: ignore[attr-defined]
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, cst.Raise):
        return True
    return isinstance(last, cst.Expr) and isinstance(last.value, cst.Call) and qualify(last.value.func) in EXITS


def _filled_in(statement: cst.CSTNode, name: cst.Name) -> bool:
    """Is the statement `name.update(...)` or `name[key] = value`: more entries put into the downloaded record?"""
    if isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call):
        func = statement.value.func
        return isinstance(func, cst.Attribute) and func.value is name and func.attr.value in ("update", "setdefault")
    if isinstance(statement, cst.Assign) and len(statement.targets) == 1:
        target = statement.targets[0].target
        return isinstance(target, cst.Subscript) and target.value is name
    return False


def _is_target(statement: cst.CSTNode, name: cst.Name) -> bool:
    if isinstance(statement, cst.Assign):  # `a = ...`, `a, b = ...`
        return any(t.target is name or isinstance(t.target, (cst.Tuple, cst.List)) and any(
            e.value is name for e in t.target.elements) for t in statement.targets)
    if isinstance(statement, (cst.AnnAssign, cst.AugAssign)):
        return statement.target is name
    return False


def _string_key(target: cst.Subscript) -> bool:
    return len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index) and isinstance(
        target.slice[0].slice.value, (cst.SimpleString, cst.FormattedString))


def _accumulates(node: cst.Assign | cst.AnnAssign) -> bool:
    """`total = total + x` (or `x + total`), `best = max(best, x)`: the name on the left is added to or kept."""
    target = node.targets[0].target if isinstance(node, cst.Assign) and len(node.targets) == 1 else (
        node.target if isinstance(node, cst.AnnAssign) else None)
    value = node.value
    if not isinstance(target, cst.Name):
        return False
    if isinstance(value, cst.Call):  # `best = max(best, acc)`, `ok = np.logical_and(flag, ok)`
        func = value.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        return name in ACCUMULATING and any(
            isinstance(a.value, cst.Name) and a.value.value == target.value for a in value.args)
    if not isinstance(value, cst.BinaryOperation) or not isinstance(value.operator, (cst.Add, cst.Subtract)):
        return False
    return any(isinstance(side, cst.Name) and side.value == target.value for side in (value.left, value.right))
