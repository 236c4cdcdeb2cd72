"""What a loop changes, and whether a call inside it reads only what stays the same.

This is OFF101's question (hoistable copy or per-iteration data) and, for
`rebound`, OFF102's. A name changes in a loop when the loop rebinds it,
stores into it, or hands it to a call that may change it in place: an
in-place method, an `out=` argument, a launch that writes it, or any
function outside the known libraries. What a call changes itself does not
make it variant (`d.set(h)` writes `d`, but writing the same `h` again
writes the same data).

Random draws are never invariant (`cp.random.rand(n)` returns new numbers
each call, so hoisting it changes what the program computes), and neither
is anything in a loop that switches the current device
(`cupy.cuda.Device(i).use()`, `torch.cuda.set_device(i)` with `i` changing):
the same call then targets another device each time.

The module also answers the questions the sync rules ask of a loop: is a
condition loop-invariant (an opt-in flag), is a branch taken only on the
iterations where a changing value equals a constant (`if step % 100 == 0`,
`if name == "fc"`: not every iteration), and does a loop nest other loops
(a sync once per epoch is paid once per thousand steps).

`LoopFacts` reads the file's names, call classifications and kernels;
it keeps its own memo of what each loop and call changes.
"""

from __future__ import annotations

import re

import libcst as cst

from .calls import Calls
from .children import children, walk
from .conditions import (and_parts, bounded, cleared, conjunct_comparisons, constant, counter_of, debug_switch,
                         equalities, every_n, every_n_or_flag, expand_flags, first_k_of_n, helper_says_when,
                         in_handler)
from .kernels import Kernels
from .names import Names
from .project import WRITES
from .scopes import Event, IndexedCall, Loop

PURE_MODULES = frozenset({"numpy", "cupy", "cupyx", "torch", "jax", "math", "builtins", "numba", "operator"})
MUTATING_FUNCS = frozenset(
    f"{m}.{f}" for m in ("numpy", "cupy") for f in ("copyto", "put", "place", "putmask", "fill_diagonal", "random.shuffle")
) | {"random.shuffle", "builtins.next", "builtins.input", "builtins.open", "builtins.iter"}  # next(loader): a new batch
MUTATING_METHODS = frozenset(
    {"fill", "sort", "resize", "put", "itemset", "setflags", "partition", "append", "extend", "insert", "pop",
     "clear", "update", "remove", "setdefault", "popitem", "set", "copy_to_device", "fill_", "zero_"}
)
PURE_METHODS = frozenset(
    {"reshape", "astype", "copy", "ravel", "flatten", "transpose", "view", "squeeze", "swapaxes", "contiguous",
     "float", "double", "half", "int", "long", "bool", "clone", "detach", "sum", "mean", "max", "min", "std",
     "var", "conj", "dot", "mT", "numpy", "T"}
)


RANDOM_PREFIXES = ("numpy.random.", "cupy.random.", "cupyx.random.", "random.", "torch.rand", "torch.randn",
                   "torch.randint", "torch.randperm", "torch.normal", "torch.bernoulli", "torch.multinomial",
                   "torch.poisson", "torch.distributions.", "numba.cuda.random.")
# Helpers whose answer is "now is one of the every-N steps": `u.itstime(...)`, `should_log(step)`.
DEVICE_SWITCHES = frozenset({"torch.cuda.set_device", "cupy.cuda.runtime.setDevice", "numba.cuda.select_device",
                             "jax.default_device"})


def is_random(qualname: str | None) -> bool:
    """A draw from a random generator: a new value on every call."""
    return qualname is not None and qualname.startswith(RANDOM_PREFIXES)


class LoopFacts:
    """What the loops of one file change, and which calls and conditions in them stay the same."""

    def __init__(self, names: Names, calls: Calls, kernels: Kernels) -> None:
        self.names = names
        self.calls = calls
        self.kernels = kernels
        self._mutated: dict[int, set[str]] = {}
        self._changed: dict[int, frozenset[str]] = {}

    # -- what a loop changes -------------------------------------------------------------

    def mutated_by(self, call: IndexedCall) -> set[str]:
        """Names of arrays (or other objects) a call may change in place."""
        key = id(call)
        if key not in self._mutated:
            self._mutated[key] = self._mutated_by(call)
        return self._mutated[key]

    def _mutated_by(self, call: IndexedCall) -> set[str]:
        node, scope = call.node, call.scope
        out: set[str] = set()
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "out":
                root = self.names.array_root(arg.value, scope)
                if root:
                    out.add(root)
        if self.calls.is_offload(call):
            _, pairs = self.kernels.launch(call)
            for param, arg in pairs:
                if param is None or param.access in WRITES:
                    root = self.names.array_root(arg.value, scope)
                    if root:
                        out.add(root)
            return out
        use = self.calls.classify(node, scope)
        if use is not None:
            if use.api.method is not None and use.api.arg is not None and isinstance(node.func, cst.Attribute):
                root = self.names.array_root(node.func.value, scope)  # d.set(h), buf.copy_from(h): writes d, buf
                if root:
                    out.add(root)
            elif use.api.method is not None and use.api.arg is None and node.args:
                root = self.names.array_root(node.args[0].value, scope)  # buf.copy_to(h): writes h
                if root:
                    out.add(root)
            return out
        qualname = self.names.qualify(node.func)
        if qualname is not None and qualname.split(".")[0] in PURE_MODULES:
            if qualname in MUTATING_FUNCS and node.args:
                root = self.names.array_root(node.args[0].value, scope)
                if root:
                    out.add(root)
            return out
        if isinstance(node.func, cst.Attribute):
            method = node.func.attr.value
            if method in MUTATING_METHODS or (method.endswith("_") and not method.startswith("_")):
                root = self.names.array_root(node.func.value, scope)
                if root:
                    out.add(root)
            if method in PURE_METHODS:
                return out
        for arg in node.args:  # an unknown function may change what it is given, in a list too (`outputs=[c]`)
            values = [e.value for e in arg.value.elements] if isinstance(arg.value, (cst.List, cst.Tuple)) else [
                arg.value]
            for value in values:
                root = self.names.array_root(value, scope)
                if root:
                    out.add(root)
        return out

    def rebound_or_stored(self, loop: Loop) -> frozenset[str]:
        key = -id(loop)
        if key not in self._changed:
            events = loop.scope.events[loop.start:loop.end]
            self._changed[key] = frozenset(e.name for e in events if e.kind in ("bind", "store", "aug", "del"))
        return self._changed[key]

    def rebound(self, loop: Loop) -> frozenset[str]:
        return frozenset(e.name for e in loop.scope.events[loop.start:loop.end] if e.kind in ("bind", "del"))

    def pure_call(self, call: IndexedCall) -> bool:
        """A call inside a copied expression that returns the same data for the same inputs."""
        qualname = self.names.qualify(call.node.func)
        if is_random(qualname):
            return False
        if self.calls.classify(call.node, call.scope) is not None:
            return True
        if qualname is not None:
            return qualname.split(".")[0] in PURE_MODULES and qualname not in MUTATING_FUNCS
        func = call.node.func
        return isinstance(func, cst.Attribute) and func.attr.value in PURE_METHODS

    def changed_in(self, loop: Loop, but: IndexedCall | None = None) -> set[str]:
        """Names the loop rebinds, stores into, or hands to a call that may change them (except `but`'s)."""
        changed = set(self.rebound_or_stored(loop))
        for other in loop.calls:
            if other is not but:
                changed |= self.mutated_by(other)
        return changed

    def switches_device(self, loop: Loop) -> bool:
        """Does the loop make another device current on some iteration (`Device(i).use()`, `set_device(i)`)?"""
        changed = self.changed_in(loop)
        for call in loop.calls:
            func = call.node.func
            qualname = self.names.qualify(func)
            target: cst.BaseExpression | None = None
            if qualname in DEVICE_SWITCHES and call.node.args:
                target = call.node.args[0].value
            elif isinstance(func, cst.Attribute) and func.attr.value == "use" and isinstance(func.value, cst.Call):
                if (self.names.qualify(func.value.func) or "").endswith("cuda.Device") and func.value.args:
                    target = func.value.args[0].value
            if target is not None and not self.expression_invariant(target, loop, changed):
                return True
        return False

    def expression_invariant(self, expr: cst.BaseExpression, loop: Loop, changed: set[str] | None = None) -> bool:
        """`expr` reads nothing the loop changes and calls nothing that may answer differently."""
        changed = self.changed_in(loop) if changed is None else changed
        for node in walk(expr):
            if isinstance(node, cst.Name) and node.value in changed:
                return False
            if isinstance(node, cst.Call):
                call = self.names.call_at(node)
                if call is None or not self.pure_call(call):
                    return False
            if isinstance(node, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp, cst.NamedExpr)):
                return False
        return True

    def rare_branch(self, call: IndexedCall, loop: Loop) -> bool:
        """The call runs only on iterations where a changing value equals a constant.

        `if step % log_every == 0:`, `if name == "Dense_1":`, `x if a.size != 0
        else cp.asarray([0])` (the else of a `!=`): a branch like that is taken
        once or every N iterations, so what it does is not a per-iteration cost.
        """
        return self.rare_conds(call.conds, loop) or in_handler(call.node, call.stmts[loop.stmt_depth:])

    def rare_conds(self, conds: tuple[tuple[cst.BaseExpression, bool], ...], loop: Loop) -> bool:
        """`rare_branch` for a statement's enclosing conditions (see there)."""
        if self.periodic(conds):
            return True  # `if step % 500 == 0:` around the loop too: it runs every N steps
        if self.periodic(tuple((part, taken) for test, taken in conds[loop.cond_depth:]
                               for part in (and_parts(expand_flags(test, lambda name: self._bound_once(name, loop)))
                                            if taken else [test])), equal_flags=True):
            return True  # `is_log = step % n == 0 or last` set in the loop, `if is_log:`; `if master and (...)`
        changed = self.changed_in(loop)
        counted = self.counted_in(loop)
        for test, taken in conds[loop.cond_depth:]:
            if taken and any(bounded(c, counted) for c in conjunct_comparisons(test)):
                return True  # `if shown < 3:` with `shown += 1` in the loop: the first few times only
            for comparison in equalities(test, taken, constants=False):
                sides = [comparison.left, *(c.comparator for c in comparison.comparisons)]
                if constant(sides[-1]):
                    if not all(self.expression_invariant(side, loop, changed) for side in sides):
                        return True  # `if name == "fc":` for a changing name
                elif len(sides) == 2 and any(self._counts(a, loop, counted) and self._settled(b, loop, counted)
                                             for a, b in (sides, sides[::-1])):
                    return True  # `if i == n - 1:`, `if step == start_step:`: one iteration of a counted loop
            if taken and isinstance(test, cst.Name) and self._only_cleared(test.value, loop):
                return True  # `if first: first = False; ...`: the first iteration only
        return False

    def _counts(self, side: cst.BaseExpression, loop: Loop, counted: frozenset[str]) -> bool:
        """Is `side` a counter of the loop: its `range`/`enumerate` index, or a name it increases with `+=`?"""
        return isinstance(side, cst.Name) and (side.value in counted or side.value == counter_of(loop.node))

    def _settled(self, expr: cst.BaseExpression, loop: Loop, counted: frozenset[str]) -> bool:
        """`n - 1`, `self.steps`: names the loop neither rebinds nor counts, and no calls (stores into other
        attributes of `self` do not unsettle `self.steps`)."""
        moving = self.rebound(loop) | counted
        return all(not isinstance(node, cst.Call) and not (isinstance(node, cst.Name) and node.value in moving)
                   for node in walk(expr))

    @staticmethod
    def _bound_once(name: str, loop: Loop) -> cst.BaseExpression | None:
        """The one expression the loop binds `name` to with `=`, or None."""
        binds = _binds_in(name, loop)
        if len(binds) != 1 or not isinstance(binds[0].extra, tuple) or binds[0].extra[0] != "=":
            return None
        value = binds[0].extra[1]
        return value if isinstance(value, cst.BaseExpression) else None

    def _only_cleared(self, name: str, loop: Loop) -> bool:
        """Does the loop bind `name` only to False/None/0 (a flag that, once cleared, stays so)?"""
        binds = _binds_in(name, loop)
        return bool(binds) and all(isinstance(e.extra, tuple) and e.extra[0] == "=" and cleared(e.extra[1])
                                   for e in binds)

    def periodic(self, conds: tuple[tuple[cst.BaseExpression, bool], ...], equal_flags: bool = False) -> bool:
        """A condition true once every N iterations: `step % n == 0`, `last or step % n == 0`, `u.itstime(...)`."""
        for test, taken in conds:
            if any(every_n(comparison) for comparison in equalities(test, taken)) or every_n_or_flag(
                    test, taken, equal_flags):
                return True
            if taken and any(first_k_of_n(c) for c in conjunct_comparisons(test)):
                return True  # `if (it % check_every) < cycle:`: a check every check_every iterations
            if taken and (helper_says_when(test) or debug_switch(test)):
                return True  # a helper that says when to log (`u.itstime(step, ...)`); `if check:`, off by default
        return False

    def counted_in(self, loop: Loop) -> frozenset[str]:
        """Names the loop increases with `+=` (counters)."""
        return frozenset(e.name for e in loop.scope.events[loop.start:loop.end] if e.kind == "aug")

    def guarded_by_flag(self, call: IndexedCall, loop: Loop) -> bool:
        """The call sits under an `if` whose test does not change in the loop: an opt-in (`if args.sync:`)."""
        changed = self.changed_in(loop)
        return any(self.expression_invariant(test, loop, changed) for test, _ in call.conds[loop.cond_depth:])

    def nests_loops(self, loop: Loop, loops: list[Loop]) -> bool:
        """Does another loop of the same scope run inside this one (an epoch loop around a step loop)?"""
        return any(other.parent is loop and other.kind != "comp" and not few(other) for other in loops)

    def amortised(self, call: IndexedCall, loop: Loop, loops: list[Loop]) -> bool:
        """A sync once per outer iteration: the loop runs inner loops and does no device work of its own,
        or an inner loop steps an optimizer or an environment (each inner iteration is a whole step).

        `for epoch ...: for batch ...: step(); print(loss.item())` syncs once per
        epoch, after thousands of steps. A step loop with a short inner loop
        (`for p in model.parameters(): ...`) still does its forward and backward
        directly: its syncs are per step, and so does a step loop whose inner
        loop accumulates gradients (`optimizer.step()` stays in the outer loop).
        """
        if any(other.loop is loop and self._runs_steps(other, loops) for other in loop.calls):
            return True  # `update_ppo(state, storage)`: epochs of minibatch steps in a function of this file
        if not self.nests_loops(loop, loops) or any(c.loop is loop and steps_an_optimizer(c.node) for c in loop.calls):
            return False  # a step loop that evaluates every epoch in an inner loop still reads per step
        if any(other.loop is not None and other.loop is not loop and self._counted_inside(other.loop, loop)
               and steps_an_optimizer(other.node) for other in loop.calls):
            return True  # PPO's iteration: a rollout of env steps, then epochs of minibatch steps
        statement = call.small
        for other in loop.calls:
            if other.loop is not loop or other is call or (statement is not None and other.small is statement):
                continue
            if self.calls.classify(other.node, other.scope) is not None or self.calls.values.produces_device_value(other):
                return False
        return True

    def _runs_steps(self, call: IndexedCall, loops: list[Loop]) -> bool:
        """Does `f(...)` call a function of this file whose own loop steps an optimizer or an environment?

        JAX training scripts put the epochs of minibatch updates in a local
        function (`def update_ppo(...)`: `for epoch ...: for start ...:
        state = state.apply_gradients(...)`) and call it once per iteration,
        after a rollout: a read in the calling loop comes once per thousands
        of steps, as with the loops written inline.
        """
        func = call.node.func
        if not isinstance(func, cst.Name):
            return False
        defs = [value for how, value in self.names.assignments(func.value, call.scope) if how == "def"]
        if len(defs) != 1 or not isinstance(defs[0], cst.FunctionDef):
            return False
        target = defs[0]
        return any(inner.scope.node is target and inner.kind != "comp" and not few(inner)
                   and any(steps_an_optimizer(c.node) for c in inner.calls) for inner in loops)

    @staticmethod
    def _counted_inside(inner: Loop, outer: Loop) -> bool:
        """Is `inner` a loop of its own (no comprehension, no short literal loop) nested in `outer`?"""
        if inner.kind == "comp" or few(inner):
            return False
        node = inner.parent
        while node is not None and node is not outer:
            node = node.parent
        return node is outer

    def invariant_in(self, call: IndexedCall, loop: Loop) -> bool:
        """Nothing the call reads (receiver, arguments, enclosing device/stream contexts) changes in `loop`.

        What the call itself changes does not count: `d.set(h)` writes `d`, but
        doing it again with the same `h` writes the same data.
        """
        if self.switches_device(loop):
            return False
        changed = self.changed_in(loop, but=call)
        events = call.scope.events
        ranges = [call.func_range, *call.arg_ranges]
        ranges += [(w.start, w.end) for w in call.withs[loop.with_depth:]]
        for start, end in ranges:
            for event in events[start:end]:
                if event.kind == "load" and event.name in changed:
                    return False
                if event.kind in ("bind", "loop"):
                    return False  # a walrus or a comprehension inside: new values each time
                if event.kind == "call" and not self.pure_call(event.extra):
                    return False
        return True


OPTIMIZER = re.compile(r"optim|^opt$|_opt$|scaler", re.I)
ENVIRONMENT = re.compile(r"env", re.I)


def steps_an_optimizer(call: cst.Call) -> bool:
    """A whole step of work per call: `optimizer.step()`, `self.q_optimizer.step()`, `scaler.step(opt)`, flax's
    `state.apply_gradients(...)`, Chainer's `optimizer.update(...)`, or an environment's step (`envs.step(actions)`:
    a rollout)."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return False
    if func.attr.value == "apply_gradients":
        return True
    receiver = func.value
    name = receiver.attr.value if isinstance(receiver, cst.Attribute) else (
        receiver.value if isinstance(receiver, cst.Name) else "")
    if func.attr.value == "update" and OPTIMIZER.search(name):
        return True  # Chainer's `optimizer.update(model, x, t)`: forward, backward and step
    return func.attr.value == "step" and bool(OPTIMIZER.search(name) or ENVIRONMENT.search(name))


def over_entries(loop: Loop) -> bool:
    """A loop over a dict's entries or the function's own `*args`/`**kwargs`: as long as a record, not data.

    `{k: a[keep] for k, a in props.items()}`, `for k, v in kwargs.items():
    v = v.item()` in a meter's `update(**losses)`: a handful of entries per
    call. What such a loop does costs once per iteration of what encloses
    it (the caller's training loop), not as a loop of its own.
    """
    node = loop.node
    if not isinstance(node, (cst.For, cst.CompFor)):
        return False
    source = node.iter
    if isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute) and not source.args:
        return source.func.attr.value in ("items", "keys", "values")
    if isinstance(source, cst.Name) and _a_dict(source.value, loop):
        return True  # `token_counts = {"raw": ..., "pad": ...}` then `for key in token_counts:`
    function = loop.scope.node
    if not isinstance(source, cst.Name) or not isinstance(function, cst.FunctionDef):
        return False
    params = function.params
    return any(isinstance(p, cst.Param) and p.name.value == source.value for p in (params.star_arg, params.star_kwarg))


def _binds_in(name: str, loop: Loop) -> list[Event]:
    """The loop's bind events of `name`, in order."""
    return [e for e in loop.scope.events[loop.start:loop.end] if e.kind == "bind" and e.name == name]


def _a_dict(name: str, loop: Loop) -> bool:
    """Is `name` bound in the loop's scope, before it, only to dicts (a literal, a comprehension, `dict(...)`)?"""
    binds = [e.extra[1] for e in loop.scope.events[:loop.start]
             if e.kind == "bind" and e.name == name and isinstance(e.extra, tuple) and e.extra[0] == "="]
    return bool(binds) and all(isinstance(v, (cst.Dict, cst.DictComp)) or (
        isinstance(v, cst.Call) and isinstance(v.func, cst.Name) and v.func.value == "dict") for v in binds)


#: counts that name a handful by convention: density matrices or spin channels of a quantum-chemistry step (1-2)
FEW_SETS = frozenset({"nset", "n_set", "nsets", "n_dm", "ndm", "n_dms", "nspin", "n_spin", "nspins"})


def few(loop: Loop) -> bool:
    """A loop over a short literal (`for lut in (a, b)`, `range(3)`): sub-steps of one iteration, not inner work."""
    node = loop.node
    if not isinstance(node, (cst.For, cst.CompFor)):
        return False
    it = node.iter
    if isinstance(it, (cst.List, cst.Tuple)):
        return len(it.elements) <= 8
    if isinstance(it, cst.Name) and _short_default(it.value, loop):
        return True  # `for k in topk` with `topk=(1, 5)`: the caller's handful of values
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value.lstrip("_") in ("range", "xrange") \
            and len(it.args) == 1:  # `_range = range` shadowed by a module's own `range`
        bound = it.args[0].value
        if isinstance(bound, cst.Integer):
            return int(bound.value) <= 8
        if _axis_count(bound):
            return True  # `range(len(x.shape))`, `range(x.ndim)`
        name = bound.attr.value if isinstance(bound, cst.Attribute) else bound.value if isinstance(
            bound, cst.Name) else ""
        return name in ("ndim", "dim", "ndims", "num_dims", "n_dims") or name in FEW_SETS  # one pass per axis or set
    return False


def _short_default(name: str, loop: Loop) -> bool:
    """Is `name` a parameter of the loop's function, never rebound there, whose default is a short literal?"""
    scope = loop.scope
    while scope.kind not in ("function", "module") and scope.parent is not None:
        scope = scope.parent
    param = scope.params.get(name)
    if param is None or any(how != "param" for how, _ in scope.assigns.get(name, [])):
        return False
    default = param.default
    return isinstance(default, (cst.Tuple, cst.List)) and len(default.elements) <= 8


def over_parameters(loop: Loop) -> bool:
    """`for p in self.master_params`, `for p in model.parameters()`: one pass per weight of a model, sub-steps of
    the step that runs it (a gradient norm, an overflow check), not work of its own."""
    node = loop.node
    if not isinstance(node, cst.For):
        return False
    it = node.iter
    if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and \
            it.func.attr.value in ("parameters", "named_parameters"):
        return True
    if isinstance(it, cst.Call) and it.args:
        it = it.args[0].value  # `zip(params, grads)`, `list(self.model_params)`
    name = it.attr.value if isinstance(it, cst.Attribute) else it.value if isinstance(it, cst.Name) else ""
    return "param" in name.lower()


def over_axes(loop: Loop) -> bool:
    """`while len(res.shape) < len(shape): res = res[..., None]`: a pass per missing axis, no work of its own."""
    node = loop.node
    if not isinstance(node, cst.While) or not isinstance(node.test, cst.Comparison):
        return False
    sides = [node.test.left, *(c.comparator for c in node.test.comparisons)]
    return any(_axis_count(side) for side in sides)


def _axis_count(node: cst.BaseExpression) -> bool:
    """`len(x.shape)`, `x.ndim`, `x.dim()`: how many axes an array has."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "len" and node.args:
        inner = node.args[0].value
        return isinstance(inner, cst.Attribute) and inner.attr.value in ("shape", "size")
    if isinstance(node, cst.Attribute):
        return node.attr.value == "ndim"
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "dim" \
        and not node.args
