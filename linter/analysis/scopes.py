"""The records the indexing walk produces: scopes, their event lists, loops, calls, `with` items.

They are mutable while the walk fills them and read-only afterwards; the
checks and `Semantics` only read them. See `walk.py` for why a file is
reduced to per-scope event lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import libcst as cst

EventKind = Literal["load", "bind", "store", "aug", "del", "call", "loop", "endloop", "with", "endwith"]
ScopeKind = Literal["module", "function", "lambda", "class"]
LoopKind = Literal["for", "while", "comp"]
# How a name got a value (see Scope.assigns).
Binding = Literal["=", "aug", "for", "unpack", "with", "param", "import", "def", "other", "item", "moved"]


class Event(NamedTuple):
    """One step of a scope, in evaluation order; `extra` carries the call, loop, with item or binding."""

    kind: EventKind
    name: str
    node: cst.CSTNode
    extra: Any = None


@dataclass(frozen=True, eq=False)
class Unpack:
    """The value a name gets from tuple unpacking or as a loop target.

    `a, b = f()` binds `a` to Unpack(f(), (0,), False); `for i, (x, y) in
    enumerate(zip(xs, ys))` binds `x` to Unpack(enumerate(...), (1, 0), True):
    iterate the source, then index the element. The device-value analysis
    follows it through zip, enumerate, tuple literals, local functions that
    return tuples, and device arrays (whose rows and elements stay on the
    device).
    """

    source: cst.BaseExpression
    index: tuple[int, ...]
    iterate: bool


@dataclass(eq=False)
class Scope:
    kind: ScopeKind
    node: cst.CSTNode
    parent: Scope | None
    name: str
    events: list[Event] = field(default_factory=list)
    # name -> (how, value): how is "=", "aug", "for", "unpack", "with", "param", "import", "def", "other",
    # "item" (`name[k] = value`: what the container holds) or "moved" (`name.to(device)` as a statement,
    # which moves a module in place); the value of "for" and "unpack" is an Unpack record. "item" and
    # "moved" only feed the device-value analysis: they emit no bind event and rebind nothing.
    assigns: dict[str, list[tuple[Binding, Any]]] = field(default_factory=dict)
    params: dict[str, cst.Param] = field(default_factory=dict)
    returns: list[cst.BaseExpression] = field(default_factory=list)  # `return X` values (functions only)

    def bind(self, name: str, how: Binding, value: Any) -> None:
        self.assigns.setdefault(name, []).append((how, value))


@dataclass(eq=False)
class Loop:
    node: cst.CSTNode  # For, While or CompFor
    kind: LoopKind
    scope: Scope
    parent: Loop | None
    with_depth: int  # `with` items of the scope already open when the loop began
    stmt_depth: int  # statements of the scope open when the loop began (the loop included)
    cond_depth: int = 0  # enclosing if/IfExp tests of the scope when the loop began
    start: int = 0  # index of its "loop" event
    end: int = 0  # index of its "endloop" event
    calls: list[IndexedCall] = field(default_factory=list)


@dataclass(eq=False)
class WithItem:
    node: cst.With
    item: cst.WithItem
    call: IndexedCall | None
    asname: str | None
    start: int  # event index where the item's expression begins
    end: int = 0  # event index where it ends


@dataclass(eq=False)
class IndexedCall:
    node: cst.Call
    scope: Scope
    loops: tuple[Loop, ...]  # innermost last, this scope only
    withs: tuple[WithItem, ...]
    stmts: tuple[cst.CSTNode, ...]  # open statements of this scope, innermost last
    conds: tuple[tuple[cst.BaseExpression, bool], ...]  # enclosing if/elif/IfExp tests and the branch taken
    small: cst.CSTNode | None  # the small statement holding the call
    func_range: tuple[int, int]
    arg_ranges: tuple[tuple[int, int], ...]
    index: int = 0  # index of its "call" event

    @property
    def loop(self) -> Loop | None:
        return self.loops[-1] if self.loops else None


@dataclass(eq=False)
class IndexedNode:
    """A subscript or a branch (`if`, `while`, `assert`, `raise`) with where it runs: a call's context, no events.

    A `while` is recorded outside its own loop: its test runs once per
    iteration of it, which is the rules' business, not the index's.
    """

    node: cst.CSTNode
    scope: Scope
    loops: tuple[Loop, ...]  # innermost last, this scope only
    conds: tuple[tuple[cst.BaseExpression, bool], ...]
    small: cst.CSTNode | None
    store: bool = False  # a subscript assigned into (`a[m] = v`, `a[m] += v`)
    index: int = 0  # how many events its scope had before it: what ran above it

    @property
    def loop(self) -> Loop | None:
        return self.loops[-1] if self.loops else None


@dataclass(eq=False)
class ModuleIndex:
    module: cst.Module
    module_name: str
    aliases: dict[str, str] = field(default_factory=dict)  # local name -> qualified name
    star_imports: list[str] = field(default_factory=list)
    scopes: list[Scope] = field(default_factory=list)
    calls: list[IndexedCall] = field(default_factory=list)
    loops: list[Loop] = field(default_factory=list)
    functions: list[tuple[cst.FunctionDef, Scope]] = field(default_factory=list)  # (def, its own scope)
    names: set[str] = field(default_factory=set)
    call_of: dict[int, IndexedCall] = field(default_factory=dict)  # id(Call node) -> its IndexedCall
    subscripts: list[IndexedNode] = field(default_factory=list)  # every `a[...]`, loaded or stored into
    branches: list[IndexedNode] = field(default_factory=list)  # every `if`, `while`, `assert` and `raise`
    renamed: dict[int, str] = field(default_factory=dict)  # id(Name node) -> `y@N` for comprehension variables
    # `self.kold = ncp.abs(r)` in a method: (the method's scope, the attribute, the value), so that
    # another method's `self.kold` is known to live where the assigned value does
    self_stores: list[tuple[Scope, str, cst.BaseExpression]] = field(default_factory=list)


def dotted(node: cst.CSTNode | None) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{dotted(node.value)}.{node.attr.value}"
    return ""


def root_name(node: cst.CSTNode) -> cst.Name | None:
    """The variable at the bottom of `a.b[c].d`: the one a store into it changes."""
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        node = node.value
    return node if isinstance(node, cst.Name) else None


def target_names(target: cst.CSTNode) -> list[cst.Name]:
    """The names a `for` or comprehension target binds."""
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in target_names(e.value)]
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return []


def imported_module(module_name: str, is_package: bool, relative: int, module: str) -> str:
    """The absolute module of `from {'.' * relative}{module} import ...` written in `module_name`."""
    if not relative:
        return module
    package = module_name if is_package else module_name.rpartition(".")[0]
    for _ in range(relative - 1):
        package = package.rpartition(".")[0]
    return ".".join(p for p in (package, module) if p)


def qualified_name(scope: Scope, module_name: str) -> str:
    """`pkg.mod.Class.method`: the name the project's call graph knows a scope by."""
    parts = []
    s: Scope | None = scope
    while s is not None and s.kind != "module":
        parts.append(s.name)
        s = s.parent
    return ".".join([module_name, *reversed(parts)])
