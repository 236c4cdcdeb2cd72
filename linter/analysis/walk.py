"""One walk over a file's syntax tree that records everything the checks ask about.

The linter parses each file once and walks the tree once. The walk does not
judge anything: it records, per scope (module, function, lambda, class), a
flat list of events in evaluation order (a name loaded, bound, stored into,
a call, a loop or `with` opening and closing) plus the calls, loops and
`with` items with their context. Every check then reads these lists, which
is what lets all checks share one pass: loop invariance is a question about
the events between a loop's start and end, flow checks (use after move,
round trips, host access in a region) replay the event list in order, and
a loop's body is replayed twice to see what one iteration leaves for the next.

Evaluation order matters for the flow checks, so the visitor drives the
traversal itself where Python evaluates children out of source order: the
value of an assignment before its targets, a `for` loop's iterable before
the loop, a comprehension's first iterable in the enclosing scope.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from .children import SMALL, STATEMENT, methods, statement_kind, visit
from .classes import is_self
from .scopes import (Binding, Event, EventKind, IndexedCall, IndexedNode, Loop, LoopKind, ModuleIndex, Scope, ScopeKind,
                     Unpack, WithItem, dotted, imported_module, target_names)


class Indexer(cst.CSTVisitor):
    """Builds a ModuleIndex; use `build_index`."""

    def __init__(self, module: cst.Module, module_name: str, is_package: bool) -> None:
        super().__init__()
        self.idx = ModuleIndex(module, module_name)
        self.is_package = is_package
        self.scope = self._new_scope("module", module, None, module_name)
        self.loops: list[Loop] = []
        self.withs: list[WithItem] = []
        self.stmts: list[cst.CSTNode] = []
        self.small: cst.CSTNode | None = None
        self.conds: list[tuple[cst.BaseExpression, bool]] = []
        self.comp_names: list[dict[str, str]] = []  # comprehension targets in force, name -> its own name
        self._comp_counter = 0
        self.call_of = self.idx.call_of

    # -- plumbing -----------------------------------------------------------------

    def _new_scope(self, kind: ScopeKind, node: cst.CSTNode, parent: Scope | None, name: str) -> Scope:
        scope = Scope(kind, node, parent, name)
        self.idx.scopes.append(scope)
        return scope

    def _emit(self, kind: EventKind, name: str, node: cst.CSTNode, extra: Any = None) -> None:
        self.scope.events.append(Event(kind, name, node, extra))

    def _bind(self, name: str, node: cst.CSTNode, how: Binding, value: cst.CSTNode | None) -> None:
        self.idx.names.add(name)
        self.scope.bind(name, how, value)
        self._emit("bind", name, node, (how, value))

    def _place(self, node: cst.CSTNode, store: bool = False) -> IndexedNode:
        scope = self.scope
        return IndexedNode(node, scope, tuple(self.loops), tuple(self.conds), self.small, store, len(scope.events))

    def _in_new_scope(self, scope: Scope, body: list[cst.CSTNode]) -> None:
        saved = (self.scope, self.loops, self.withs, self.stmts, self.small, self.conds)
        self.scope, self.loops, self.withs, self.stmts, self.small, self.conds = scope, [], [], [], None, []
        for child in body:
            visit(child, self)
        self.scope, self.loops, self.withs, self.stmts, self.small, self.conds = saved

    def on_visit(self, node: cst.CSTNode) -> bool:
        kind = statement_kind(type(node))
        if kind == STATEMENT:
            self.stmts.append(node)
        elif kind == SMALL:
            self.small = node
        visit_node = methods(type(self), type(node))[0]
        return visit_node is None or visit_node(self, node) is not False

    def on_leave(self, original_node: cst.CSTNode) -> None:
        leave_node = methods(type(self), type(original_node))[1]
        if leave_node is not None:
            leave_node(self, original_node)
        kind = statement_kind(type(original_node))
        if kind == STATEMENT:
            if self.stmts and self.stmts[-1] is original_node:
                self.stmts.pop()
        elif kind == SMALL:
            self.small = None

    def _store_target(self, target: cst.CSTNode, how: Binding, value: Any, path: tuple[int, ...] = ()) -> None:
        """Bind a target; the elements of a tuple target get Unpack values (see model.Unpack).

        `value` is the assigned expression, or for a loop target (how "for")
        the iterable; `path` is the position inside nested tuple targets.
        """
        if isinstance(target, cst.Name):
            name = self._local(target)
            if how == "for":
                value = Unpack(value, path, True) if isinstance(value, cst.BaseExpression) else None
            elif path and how == "=":
                how, value = "unpack", Unpack(value, path, False) if isinstance(value, cst.BaseExpression) else None
            self._bind(name, target, how, value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            star = next((k for k, e in enumerate(target.elements) if isinstance(e.value, cst.StarredElement)), None)
            n = len(target.elements)
            for k, element in enumerate(target.elements):
                inner = element.value
                if isinstance(inner, cst.StarredElement):
                    self._store_target(inner, "other" if how in ("=", "for") else how, None)
                else:
                    # `for *box, conf, cls in rows`: after a star, count from the end
                    position = k if star is None or k < star else k - n
                    self._store_target(inner, how, value, (*path, position))
        elif isinstance(target, cst.StarredElement):
            self._store_target(target.value, how, None)
        elif isinstance(target, (cst.Subscript, cst.Attribute)):
            if isinstance(target, cst.Subscript):
                self.idx.subscripts.append(self._place(target, store=True))
            base = target
            while isinstance(base, (cst.Subscript, cst.Attribute)):
                if isinstance(base, cst.Subscript):
                    for element in base.slice:
                        visit(element, self)
                base = base.value
            if isinstance(base, cst.Name):
                self._emit("store", base.value, target)
                if how == "=" and not path and isinstance(target, cst.Attribute) and target.value is base \
                        and isinstance(value, cst.BaseExpression) and is_self(self.scope, base.value):
                    self.idx.self_stores.append((self.scope, target.attr.value, value))  # `self.kold = ...`
                if how == "=" and not path and isinstance(target, cst.Subscript) and target.value is base \
                        and isinstance(value, cst.BaseExpression):
                    self.scope.bind(base.value, "item", value)
            else:
                visit(base, self)
        else:
            visit(target, self)

    def _loop_start(self, node: cst.CSTNode, kind: LoopKind) -> Loop:
        loop = Loop(node, kind, self.scope, self.loops[-1] if self.loops else None, len(self.withs), len(self.stmts),
                    len(self.conds))
        loop.start = len(self.scope.events)
        self._emit("loop", "", node, loop)
        self.loops.append(loop)
        self.idx.loops.append(loop)
        return loop

    def _loop_end(self, loop: Loop) -> None:
        self.loops.pop()
        loop.end = len(self.scope.events)
        self._emit("endloop", "", loop.node, loop)

    # -- names and imports ------------------------------------------------------------

    def _local(self, node: cst.Name) -> str:
        """The name a load or target refers to: a comprehension's target is its own variable.

        Python scopes `y` in `[int(y) for y in s]` to the comprehension, so it
        is a different variable from a `y` the function binds elsewhere; the
        index calls it `y@N` (N: the comprehension) and records the rename for
        the node, which `Semantics.name_of` reads back.
        """
        for mapping in reversed(self.comp_names):
            renamed = mapping.get(node.value)
            if renamed is not None:
                self.idx.renamed[id(node)] = renamed
                return renamed
        return node.value

    def visit_Name(self, node: cst.Name) -> bool:
        self.idx.names.add(node.value)
        self._emit("load", self._local(node), node)
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        visit(node.value, self)
        return False

    def visit_Subscript(self, node: cst.Subscript) -> bool:
        self.idx.subscripts.append(self._place(node))
        return True

    def visit_Assert(self, node: cst.Assert) -> bool:
        self.idx.branches.append(self._place(node))
        return True

    def visit_Raise(self, node: cst.Raise) -> bool:
        self.idx.branches.append(self._place(node))
        return True

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            full = dotted(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
                self.idx.aliases[local] = full
            else:
                local = full.split(".")[0]
                self.idx.aliases[local] = local
            self._bind(local, alias, "import", None)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        module = imported_module(self.idx.module_name, self.is_package, len(node.relative),
                                 dotted(node.module) if node.module is not None else "")
        if isinstance(node.names, cst.ImportStar):
            self.idx.star_imports.append(module)
            return False
        for alias in node.names:
            name = dotted(alias.name)
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
            self.idx.aliases[local] = f"{module}.{name}" if module else name
            self._bind(local, alias, "import", None)
        return False

    def visit_Global(self, node: cst.Global) -> bool:
        return False

    def visit_Nonlocal(self, node: cst.Nonlocal) -> bool:
        return False

    # -- assignments --------------------------------------------------------------

    def visit_Assign(self, node: cst.Assign) -> bool:
        visit(node.value, self)
        for target in node.targets:
            self._store_target(target.target, "=", node.value)
        return False

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        if node.value is not None:
            visit(node.value, self)
            self._store_target(node.target, "=", node.value)
        return False

    def visit_AugAssign(self, node: cst.AugAssign) -> bool:
        visit(node.value, self)
        if isinstance(node.target, cst.Name):
            name = node.target.value
            self._emit("load", name, node.target)
            self.scope.bind(name, "aug", node.value)
            self._emit("aug", name, node.target, node)
        else:
            visit(node.target, self)
            self._store_target(node.target, "aug", None)
        return False

    def visit_NamedExpr(self, node: cst.NamedExpr) -> bool:
        visit(node.value, self)
        self._store_target(node.target, "=", node.value)
        return False

    def visit_Del(self, node: cst.Del) -> bool:
        targets = node.target.elements if isinstance(node.target, (cst.Tuple, cst.List)) else [node.target]
        for target in targets:
            value = target.value if isinstance(target, cst.BaseElement) else target
            if isinstance(value, cst.Name):
                self._emit("del", value.value, value)
            else:
                self._store_target(value, "other", None)
        return False

    # -- calls --------------------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> bool:
        events = self.scope.events
        start = len(events)
        visit(node.func, self)
        func_range = (start, len(events))
        arg_ranges = []
        for arg in node.args:
            s = len(events)
            visit(arg.value, self)
            arg_ranges.append((s, len(events)))
        call = IndexedCall(
            node, self.scope, tuple(self.loops), tuple(self.withs), tuple(self.stmts), tuple(self.conds), self.small,
            func_range, tuple(arg_ranges),
        )
        call.index = len(events)
        self._emit("call", "", node, call)
        self.idx.calls.append(call)
        self.call_of[id(node)] = call
        for loop in self.loops:
            loop.calls.append(call)
        return False

    # -- loops ----------------------------------------------------------------------

    def visit_For(self, node: cst.For) -> bool:
        visit(node.iter, self)
        loop = self._loop_start(node, "for")
        self._store_target(node.target, "for", node.iter)
        visit(node.body, self)
        self._loop_end(loop)
        if node.orelse is not None:
            visit(node.orelse, self)
        return False

    def visit_While(self, node: cst.While) -> bool:
        self.idx.branches.append(self._place(node))
        loop = self._loop_start(node, "while")
        visit(node.test, self)
        visit(node.body, self)
        self._loop_end(loop)
        if node.orelse is not None:
            visit(node.orelse, self)
        return False

    def _comprehension(self, for_in: cst.CompFor, elements: list[cst.CSTNode], first: bool) -> None:
        if first:
            visit(for_in.iter, self)  # the outermost iterable runs once, outside the loop
        loop = self._loop_start(for_in, "comp")
        self._comp_counter += 1
        self.comp_names.append({n.value: f"{n.value}@{self._comp_counter}" for n in target_names(for_in.target)})
        self._store_target(for_in.target, "for", for_in.iter)
        for cond in for_in.ifs:
            visit(cond.test, self)
        if for_in.inner_for_in is not None:
            visit(for_in.inner_for_in.iter, self)
            self._comprehension(for_in.inner_for_in, elements, False)
        else:
            for element in elements:
                visit(element, self)
        self._loop_end(loop)
        self.comp_names.pop()

    def visit_ListComp(self, node: cst.ListComp | cst.SetComp | cst.GeneratorExp) -> bool:
        self._comprehension(node.for_in, [node.elt], True)
        return False

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node: cst.DictComp) -> bool:
        self._comprehension(node.for_in, [node.key, node.value], True)
        return False

    # -- branches and returns -------------------------------------------------------------

    def visit_Expr(self, node: cst.Expr) -> bool:
        """`model.to(device)` / `model.cuda()` as a statement moves a module in place (see Scope.assigns)."""
        value = node.value
        visit(node.value, self)
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            if value.func.attr.value in ("to", "cuda", "cpu") and isinstance(value.func.value, cst.Name):
                self.scope.bind(value.func.value.value, "moved", node.value)
                break
            value = value.func.value
        return False

    def visit_If(self, node: cst.If) -> bool:
        self.idx.branches.append(self._place(node))
        visit(node.test, self)
        self.conds.append((node.test, True))
        visit(node.body, self)
        self.conds[-1] = (node.test, False)
        if node.orelse is not None:
            visit(node.orelse, self)
        self.conds.pop()
        return False

    def visit_IfExp(self, node: cst.IfExp) -> bool:
        visit(node.test, self)
        self.conds.append((node.test, True))
        visit(node.body, self)
        self.conds[-1] = (node.test, False)
        visit(node.orelse, self)
        self.conds.pop()
        return False

    def visit_Return(self, node: cst.Return) -> bool:
        if node.value is not None:
            visit(node.value, self)
            self.scope.returns.append(node.value)
        return False

    # -- with, try, match -------------------------------------------------------------

    def visit_With(self, node: cst.With) -> bool:
        opened = 0
        for item in node.items:
            start = len(self.scope.events)
            visit(item.item, self)
            asname = None
            if item.asname is not None:
                self._store_target(item.asname.name, "with", item.item)
                if isinstance(item.asname.name, cst.Name):
                    asname = item.asname.name.value
            entry = WithItem(node, item, self.call_of.get(id(item.item)), asname, start, len(self.scope.events))
            self.withs.append(entry)
            self._emit("with", "", node, entry)
            opened += 1
        visit(node.body, self)
        for _ in range(opened):
            entry = self.withs.pop()
            self._emit("endwith", "", node, entry)
        return False

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> bool:
        if node.type is not None:
            visit(node.type, self)
        if node.name is not None:
            self._store_target(node.name.name, "other", None)
        visit(node.body, self)
        return False

    def visit_ExceptStarHandler(self, node: cst.ExceptStarHandler) -> bool:
        visit(node.type, self)
        if node.name is not None:
            self._store_target(node.name.name, "other", None)
        visit(node.body, self)
        return False

    def visit_MatchAs(self, node: cst.MatchAs) -> bool:
        if node.pattern is not None:
            visit(node.pattern, self)
        if node.name is not None:
            self._store_target(node.name, "other", None)
        return False

    def visit_MatchStar(self, node: cst.MatchStar) -> bool:
        if node.name is not None:
            self._store_target(node.name, "other", None)
        return False

    def visit_MatchMapping(self, node: cst.MatchMapping) -> bool:
        for element in node.elements:
            visit(element.key, self)
            visit(element.pattern, self)
        if node.rest is not None:
            self._store_target(node.rest, "other", None)
        return False

    def visit_MatchKeywordElement(self, node: cst.MatchKeywordElement) -> bool:
        visit(node.pattern, self)
        return False

    # -- definitions --------------------------------------------------------------

    def _parameters(self, params: cst.Parameters, scope: Scope) -> None:
        everything = [*params.posonly_params, *params.params, *params.kwonly_params]
        for extra in (params.star_arg, params.star_kwarg):
            if isinstance(extra, cst.Param):
                everything.append(extra)
        for param in everything:
            if param.default is not None:
                visit(param.default, self)
        for param in everything:
            scope.params[param.name.value] = param
            scope.bind(param.name.value, "param", param)
            scope.events.append(Event("bind", param.name.value, param.name, ("param", param)))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        for decorator in node.decorators:
            visit(decorator.decorator, self)
        scope = Scope("function", node, self.scope, node.name.value)
        self.idx.scopes.append(scope)
        self._parameters(node.params, scope)
        self._bind(node.name.value, node.name, "def", node)
        self.idx.functions.append((node, scope))
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else node.body.body
        self._in_new_scope(scope, list(body))
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        scope = Scope("lambda", node, self.scope, "<lambda>")
        self.idx.scopes.append(scope)
        self._parameters(node.params, scope)
        self._in_new_scope(scope, [node.body])
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        for decorator in node.decorators:
            visit(decorator.decorator, self)
        for arg in (*node.bases, *node.keywords):
            visit(arg.value, self)
        scope = Scope("class", node, self.scope, node.name.value)
        self.idx.scopes.append(scope)
        body = node.body.body if isinstance(node.body, cst.IndentedBlock) else node.body.body
        self._in_new_scope(scope, list(body))
        self._bind(node.name.value, node.name, "def", node)
        return False


def build_index(module: cst.Module, module_name: str = "__main__", is_package: bool = False) -> ModuleIndex:
    indexer = Indexer(module, module_name, is_package)
    for statement in module.body:
        visit(statement, indexer)
    return indexer.idx

