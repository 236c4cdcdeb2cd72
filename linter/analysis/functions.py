"""The functions of one file: their qualified names, what they call, and which run once per iteration.

`Functions` resolves a call to the qualified name of what it runs, as far
as one file can tell: a function it defines or imports (`f(...)`,
`mod.f(...)`), a method of the enclosing class (`self.losses(...)`), a
method of a local instance (`boxes = Boxes(t); boxes.clip(size)`) or of
an object a class holds (`self.matcher = Matcher(...)` in `__init__`).
Names it cannot resolve stay unresolved; the project's `callgraph.Graph`
finishes the job across files (inherited methods, imported classes).

From those calls it builds the file's `callgraph.Summary`, and answers
`hot(scope)`: why a function runs once per iteration of some loop, from
this file alone (its loops, its modules' `forward`, its losses) merged
with what the project said (`project_hot`, given by the runner).

Code that JAX traces (`@jax.jit`, `jax.jit(f)`, flax modules) runs once
per compilation, not per call, and a torch-free file has no `forward` to
run per step: roles are a PyTorch notion here.
"""

from __future__ import annotations

import re
from typing import Mapping

import libcst as cst

from .annotations import annotated_params, array_classes
from .callgraph import Hot, HotKind, Summary, hot_functions
from .loops import LoopFacts, few, over_axes, over_entries, over_parameters
from .memoryblocks import by_memory
from .names import Names
from .reaching import Taints
from .valuewords import MAYBE
from .scopes import IndexedCall, Scope, qualified_name
from .collectivehelpers import collective_helpers
from .copyhelpers import copy_helpers
from .arguments import device_args
from .uses import kept_as_metric

LOSS_NAME = re.compile(r"^(?:losses?|compute_loss(?:es)?|get_loss(?:es)?|loss_\w+|\w+_loss(?:es)?)$")
LOSS_CLASS = re.compile(r"Loss|Criterion")
STEP_NAME = re.compile(r"^(?:\w+_step|run_step|train_one_step)$")
TRACERS = frozenset({"jax.jit", "jax.pmap", "jax.vmap", "jax.grad", "jax.value_and_grad", "jax.checkpoint",
                     "jax.lax.scan", "jax.lax.fori_loop", "jax.lax.while_loop", "flax.linen.compact",
                     "jax.remat", "flax.linen.jit", "equinox.filter_jit"})


class Functions:
    """Call resolution and per-iteration functions for one file."""

    def __init__(self, names: Names, loops: LoopFacts, path: str = "",
                 project_hot: Mapping[str, Hot] | None = None, values: Taints | None = None) -> None:
        self.names = names
        self.values = values
        self.loops = loops
        self.idx = names.idx
        self.path = path
        self.project_hot = dict(project_hot or {})
        self.torch = any(q.split(".")[0] == "torch" for q in self.idx.aliases.values())
        self._qualnames: dict[int, str] = {}
        self._traced: set[str] | None = None
        self._traced_only: set[str] | None = None
        self._summary: Summary | None = None
        self._hot: dict[str, Hot] | None = None

    # -- names --------------------------------------------------------------------

    def qualname(self, scope: Scope) -> str:
        key = id(scope)
        if key not in self._qualnames:
            self._qualnames[key] = qualified_name(scope, self.idx.module_name)
        return self._qualnames[key]

    def _def_target(self, name: str, scope: Scope) -> str | None:
        """The qualified name `name` refers to from `scope`: a def or class of this file, or an import."""
        for how, value in self.names.assignments(name, scope):
            if how == "def" and isinstance(value, (cst.FunctionDef, cst.ClassDef)):
                owner = self._owner_of(name, scope)
                return f"{self.qualname(owner)}.{name}" if owner is not None else None
            if how == "import":
                return self.idx.aliases.get(name)
        return None

    def _owner_of(self, name: str, scope: Scope) -> Scope | None:
        s: Scope | None = scope
        while s is not None:
            if name in s.assigns:
                return s
            s = s.parent
            while s is not None and s.kind == "class":
                s = s.parent
        return None

    def _self_class(self, name: str, scope: Scope) -> str | None:
        """`C`'s qualified name when `name` is the first parameter of a method of class `C`."""
        s: Scope | None = scope
        while s is not None and s.kind in ("lambda",):
            s = s.parent
        if s is None or s.kind != "function" or s.parent is None or s.parent.kind != "class":
            return None
        node = s.node
        if not isinstance(node, cst.FunctionDef):
            return None
        params = [*node.params.posonly_params, *node.params.params]
        if not params or params[0].name.value != name:
            return None
        return self.qualname(s.parent)

    def _instance_of(self, name: str, scope: Scope) -> str | None:
        """The class of a local bound only to `Class(...)` calls (a capitalised callee)."""
        found: set[str] = set()
        for how, value in self.names.assignments(name, scope):
            if how != "=" or not isinstance(value, cst.Call):
                return None
            target = self._callee_name(value.func, scope)
            if target is None or not target.rpartition(".")[2][:1].isupper():
                return None
            found.add(target)
        return found.pop() if len(found) == 1 else None

    def _callee_name(self, func: cst.BaseExpression, scope: Scope) -> str | None:
        if isinstance(func, cst.Name):
            return self._def_target(func.value, scope)
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            qualname = self.names.qualify(func)
            if qualname is not None:
                return None if qualname.startswith("builtins.") else qualname
            base = self._def_target(func.value.value, scope)
            return f"{base}.{func.attr.value}" if base is not None else None
        return None

    def callee(self, call: IndexedCall) -> str | None:
        """The qualified name a call runs, as far as this file can tell (the project resolves the rest)."""
        func, scope = call.node.func, call.scope
        if isinstance(func, cst.Name):
            found = self._def_target(func.value, scope)
            if found is None:
                owner = self._instance_of(func.value, scope)  # `compute_loss = ComputeLoss(model)`, then called
                found = f"{owner}.__call__" if owner is not None else None
            return found
        if not isinstance(func, cst.Attribute):
            return None
        base, attr = func.value, func.attr.value
        if isinstance(base, cst.Name):
            owner = self._self_class(base.value, scope) or self._instance_of(base.value, scope)
            if owner is not None:
                return f"{owner}.{attr}"
            return self._callee_name(func, scope)
        if isinstance(base, cst.Attribute) and isinstance(base.value, cst.Name):
            owner = self._self_class(base.value.value, scope)  # self.box_coder.decode(...)
            if owner is not None:
                return f"{owner}.{base.attr.value}.{attr}"
        return None

    # -- traced code -----------------------------------------------------------------

    def traced(self) -> set[str]:
        """Functions JAX traces: decorated with a tracer, or passed to one (`step = jax.jit(train_step)`)."""
        if self._traced is None:
            out: set[str] = set()
            for node, scope in self.idx.functions:
                for decorator in node.decorators:
                    expr = decorator.decorator
                    target = expr.func if isinstance(expr, cst.Call) else expr
                    if isinstance(expr, cst.Call) and self.names.qualify(target) == "functools.partial" and expr.args:
                        target = expr.args[0].value
                    if self.names.qualify(target) in TRACERS:
                        out.add(self.qualname(scope))
            for call in self.idx.calls:
                if self.names.qualify(call.node.func) in TRACERS and call.node.args:
                    first = call.node.args[0].value
                    if isinstance(first, cst.Name):
                        target = self._def_target(first.value, call.scope)
                        if target is not None:
                            out.add(target)
            self._traced = out
        return self._traced

    def traced_only(self, scope: Scope) -> bool:
        """Does `scope` run only while JAX traces it: a traced function, a function defined inside one, or one
        every call of which in the file is made by such (`get_obs(...)` of a `step_fn` passed to
        `jax.jit(jax.vmap(step_fn))`)? Its Python loops unroll once, at trace time: no iteration runs later, and
        `jnp.array([...])` of numbers there is a constant of the compiled program, not an upload."""
        if not self.names.imports("jax"):
            return False
        if self._traced_only is None:
            found = set(self.traced())
            callers: dict[str, set[str | None]] = {}
            for call in self.idx.calls:
                callee = self.callee(call)
                if callee is not None:
                    callers.setdefault(callee, set()).add(self._owner(call.scope))
            changed = True
            while changed:
                changed = False
                for callee, owners in callers.items():
                    if callee not in found and owners <= found:
                        found.add(callee)
                        changed = True
            self._traced_only = found
        s: Scope | None = scope
        while s is not None and s.kind != "module":
            if s.kind == "function" and self.qualname(s) in self._traced_only:
                return True
            s = s.parent
        return False

    def _owner(self, scope: Scope) -> str | None:
        """The function a call is made in (through lambdas), None at module or class level."""
        while scope.kind == "lambda" and scope.parent is not None:
            scope = scope.parent
        return self.qualname(scope) if scope.kind == "function" else None

    # -- the summary ---------------------------------------------------------------

    def role(self, node: cst.FunctionDef, scope: Scope) -> HotKind | None:
        if not self.torch or self.qualname(scope) in self.traced():
            return None
        name = node.name.value
        in_class = scope.parent is not None and scope.parent.kind == "class"
        if name == "forward" and in_class:
            return "forward"
        if LOSS_NAME.match(name) or name == "__call__" and in_class and LOSS_CLASS.search(scope.parent.name):
            return "loss"  # `loss_fn(...)`, and a loss object's call (`ComputeLoss(model)(pred, targets)`)
        if STEP_NAME.match(name):
            return "step"
        return None

    def summary(self) -> Summary:
        if self._summary is not None:
            return self._summary
        traced = self.traced()
        functions, looping, roles = [], [], []
        for node, scope in self.idx.functions:
            q = self.qualname(scope)
            if q in traced:
                continue
            functions.append(q)
            role = self.role(node, scope)
            if role is not None:
                roles.append((q, role))
        for loop in self.idx.loops:
            if (loop.kind != "comp" and loop.scope.kind == "function" and not over_entries(loop)
                    and not over_axes(loop) and not over_parameters(loop)):  # no work of its own
                looping.append(self.qualname(loop.scope))
        roots, edges = [], []
        uses: dict[tuple[str, int], bool] = {}  # (callee, loop) -> every call there only keeps the result as a metric
        numbers = {id(loop): n for n, loop in enumerate(self.idx.loops)}
        for call in self.idx.calls:
            callee = self.callee(call)
            if callee is None:
                continue
            loop = call.loop
            while loop is not None and (few(loop) or over_entries(loop) or by_memory(loop)):
                loop = loop.parent  # `for i in range(3): f(x)`: three calls, the enclosing iteration's if any
            if loop is not None:
                if not self.loops.rare_branch(call, loop) and not self.loops.amortised(call, loop, self.idx.loops):
                    holder = self.qualname(call.scope) if call.scope.kind != "module" else ""
                    roots.append((callee, self.path, holder, numbers[id(loop)]))
                    key = (callee, numbers[id(loop)])
                    uses[key] = uses.get(key, True) and kept_as_metric(call, loop.node, self.names, scalar=False)
            elif call.scope.kind in ("function", "lambda") and not self.loops.periodic(call.conds):
                owner = call.scope
                while owner.kind == "lambda" and owner.parent is not None:
                    owner = owner.parent
                if owner.kind == "function":
                    edges.append((self.qualname(owner), callee))
        summary = Summary(
            held_calls=self._held_calls(), device_kwargs=self._device_kwargs(),
            copy_helpers=copy_helpers(self.idx, self.loops.calls, self.qualname)
            + collective_helpers(self.idx, self.names, self.qualname),
            functions=tuple(functions), looping=tuple(sorted(set(looping))), bases=self._bases(),
            attributes=self._attributes(), roles=tuple(roles), roots=tuple(dict.fromkeys(roots)),
            edges=tuple(dict.fromkeys(edges)),
            device_args=() if self.values is None else device_args(self.idx, self.names, self.values, self.callee),
            metric_roots=tuple(key for key, metric in uses.items() if metric),
            array_classes=array_classes(self.idx, self.names, self.qualname),
            annotated=annotated_params(self.idx, self.names, self.qualname),
        )
        local = hot_functions([summary])
        self._summary = Summary(**{**summary.__dict__, "hot_here": tuple(sorted(local))})
        self._hot = {**self.project_hot, **local}
        return self._summary

    def _device_kwargs(self) -> tuple[str, ...]:
        """Callees this file hands device values by keyword: `meter.update(**loss_dict)`, `log(loss=loss)`."""
        if self.values is None:
            return ()
        out: list[str] = []
        for call in self.idx.calls:
            keywords = [a.value for a in call.node.args if a.star == "**" or a.keyword is not None]
            if not keywords:
                continue
            callee = self.callee(call)
            if callee is not None and any((t := self.values.taint(v, call.scope)) and not t.endswith(MAYBE)
                                          for v in keywords):
                out.append(callee)
        return tuple(sorted(set(out)))

    def _held_calls(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """`Class.attr` -> the methods this file calls on `self.attr` (what the held object must have)."""
        out: dict[str, set[str]] = {}
        for call in self.idx.calls:
            func = call.node.func
            if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Attribute)
                    and isinstance(func.value.value, cst.Name)):
                continue
            owner = self._self_class(func.value.value.value, call.scope)
            if owner is not None:
                out.setdefault(f"{owner}.{func.value.attr.value}", set()).add(func.attr.value)
        return tuple((k, tuple(sorted(v))) for k, v in sorted(out.items()))

    def _bases(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        out = []
        for scope in self.idx.scopes:
            if scope.kind != "class" or not isinstance(scope.node, cst.ClassDef):
                continue
            bases = []
            for arg in scope.node.bases:
                target = self._callee_name(arg.value, scope.parent or scope)
                if target is not None:
                    bases.append(target)
            out.append((self.qualname(scope), tuple(bases)))
        return tuple(out)

    def _attributes(self) -> tuple[tuple[str, str], ...]:
        """`Class.attr` -> the class `self.attr = Other(...)` in `__init__` gives it."""
        out = []
        for node, scope in self.idx.functions:
            if node.name.value != "__init__":
                continue
            owner = self._self_class_of(node, scope)
            if owner is None:
                continue
            for statement in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
                if not isinstance(statement, cst.SimpleStatementLine):
                    continue
                for small in statement.body:
                    if not isinstance(small, cst.Assign) or not isinstance(small.value, cst.Call):
                        continue
                    for target in small.targets:
                        t = target.target
                        if isinstance(t, cst.Attribute) and isinstance(t.value, cst.Name) and t.value.value == owner[1]:
                            held = self._callee_name(small.value.func, scope)
                            if held is not None and held.rpartition(".")[2][:1].isupper():
                                out.append((f"{owner[0]}.{t.attr.value}", held))
        return tuple(out)

    def _self_class_of(self, node: cst.FunctionDef, scope: Scope) -> tuple[str, str] | None:
        params = [*node.params.posonly_params, *node.params.params]
        if not params or scope.parent is None or scope.parent.kind != "class":
            return None
        return self.qualname(scope.parent), params[0].name.value

    def told(self) -> tuple[str, ...]:
        """The functions of this file that only the project's call graph made hot (the runner checks them)."""
        summary = self.summary()
        return tuple(sorted(q for q in summary.functions if q in self.project_hot and q not in summary.hot_here))

    # -- the question the rules ask ---------------------------------------------------

    def hot(self, scope: Scope) -> Hot | None:
        """Why the function `scope` (or the function a lambda sits in) runs once per iteration, else None."""
        self.summary()
        assert self._hot is not None
        s: Scope | None = scope
        while s is not None and s.kind == "lambda":
            s = s.parent
        if s is None or s.kind != "function":
            return None
        return self._hot.get(self.qualname(s))

