"""A node's children, and a visit over them, without LibCST rebuilding the tree.

LibCST's `node.visit(visitor)` and `node.children` both run the node's
`_visit_and_replace_children`, which builds a new node of every node it
passes (the transformer's contract: children may be replaced), with each
node's dataclass checks. A read-only walk pays for a copy of the tree it
never uses: on cupy's `cupyx/scipy` that rebuilding was most of LibCST's
half of the linter's CPU time.

Each node class's `_visit_and_replace_children` is one `return
Node(field=visit_*(self, "field", self.field, visitor), ...)`, and the
keyword order is the order LibCST visits in (the source order). That order
is read once per class from the method's own source, so it stays LibCST's
as LibCST changes; a class whose method has any other shape falls back to
LibCST's own `children`. `tests/linter/analysis/test_children.py` checks
the two agree on every node of real files.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any, Protocol

import libcst as cst

#: LibCST's child visitors, and what the field holds: always a node, a node or None/MaybeSentinel, a sequence
_REQUIRED, _OPTIONAL, _MANY = 0, 1, 2
_VISITS = {"visit_required": _REQUIRED, "visit_optional": _OPTIONAL, "visit_sentinel": _OPTIONAL,
           "visit_sequence": _MANY, "visit_body_sequence": _MANY, "visit_iterable": _MANY}
_UNREAD = object()
_METHODS: dict[tuple[type, type], tuple[Any, Any]] = {}
_ORDER: dict[type, tuple[tuple[str, int], ...] | None] = {}


class Visitor(Protocol):
    def on_visit(self, node: cst.CSTNode) -> bool: ...

    def on_leave(self, original_node: cst.CSTNode) -> None: ...


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """`node.children`, in LibCST's order, without rebuilding `node`."""
    cls = type(node)
    order = _ORDER.get(cls, _UNREAD)
    if order is _UNREAD:
        order = _ORDER[cls] = _field_order(cls)
    if order is None:
        return list(node.children)
    out: list[cst.CSTNode] = []
    for name, holds in order:  # type: ignore[union-attr]
        value = getattr(node, name)
        if holds == _REQUIRED:
            out.append(value)
        elif holds == _MANY:
            out.extend(value)
        elif value is not None and value is not cst.MaybeSentinel.DEFAULT:
            out.append(value)
    return out


def visit(node: cst.CSTNode, visitor: Visitor) -> None:
    """`node.visit(visitor)` for a read-only visitor: `on_visit`, the children if it says so, `on_leave`.

    The per-field hooks (`visit_<Node>_<field>`) are not called; the
    project's visitors define none.
    """
    if visitor.on_visit(node):
        for child in children(node):
            visit(child, visitor)
    visitor.on_leave(node)


STATEMENT, SMALL, OTHER = 0, 1, 2
_KINDS: dict[type, int] = {}


def statement_kind(cls: type) -> int:
    """STATEMENT (compound, or a line of small ones), SMALL (one small statement) or OTHER, once per node class
    (not an abstract-class check per node)."""
    kind = _KINDS.get(cls)
    if kind is None:
        kind = _KINDS[cls] = STATEMENT if issubclass(cls, (cst.BaseCompoundStatement, cst.SimpleStatementLine)) \
            else SMALL if issubclass(cls, cst.BaseSmallStatement) else OTHER
    return kind


def methods(visitor: type, cls: type) -> tuple[Any, Any]:
    """A visitor class's `visit_<Node>` and `leave_<Node>` for a node class (None where it has none), looked up once
    (LibCST's visitor looks them up by name for every node)."""
    found = _METHODS.get((visitor, cls))
    if found is None:
        found = _METHODS[(visitor, cls)] = (getattr(visitor, f"visit_{cls.__name__}", None),
                                            getattr(visitor, f"leave_{cls.__name__}", None))
    return found


def _field_order(cls: type) -> tuple[tuple[str, int], ...] | None:
    """The fields `cls._visit_and_replace_children` visits, in order, or None if its source is not the usual shape."""
    method = getattr(cls, "_visit_and_replace_children", None)
    if method is None:
        return None
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(method)))
    except (OSError, TypeError, SyntaxError):
        return None
    function = tree.body[0]
    if not isinstance(function, ast.FunctionDef):
        return None
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return None
    call = body[0].value
    if isinstance(call, ast.Name) and call.id == "self":
        return ()  # a leaf: `return self`
    if not isinstance(call, ast.Call) or call.args or not _constructs(call.func, cls):
        return None
    order: list[tuple[str, int]] = []
    for keyword in call.keywords:
        value = keyword.value
        if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
            continue  # `value=self.value`: data, not a child
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in _VISITS
                and len(value.args) == 4 and isinstance(value.args[1], ast.Constant)
                and value.args[1].value == keyword.arg):
            return None
        order.append((keyword.arg or "", _VISITS[value.func.id]))
    return tuple(order)


def _constructs(func: ast.expr, cls: type) -> bool:
    """`Node(...)` or `self.__class__(...)`: the method builds a node of its own class."""
    if isinstance(func, ast.Name):
        return func.id == cls.__name__
    return isinstance(func, ast.Attribute) and func.attr == "__class__" and isinstance(func.value, ast.Name) \
        and func.value.id == "self"


def walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    """Every node under `node`, the root first (iterative: expressions can be deep)."""
    out: list[cst.CSTNode] = []
    stack = [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(reversed(children(current)))
    return out
