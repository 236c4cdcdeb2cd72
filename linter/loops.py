"""What a loop changes, and whether a call inside it reads only what stays the same.

This is OFF101's question (hoistable copy or per-iteration data) and, for
`rebound`, OFF102's. A name changes in a loop when the loop rebinds it,
stores into it, or hands it to a call that may change it in place: an
in-place method, an `out=` argument, a launch that writes it, or any
function outside the known libraries. What a call changes itself does not
make it variant (`d.set(h)` writes `d`, but writing the same `h` again
writes the same data).

A mixin of `Semantics`, which supplies `classify`, `qualify`, `launch`,
`is_offload` and `array_root`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from .index import CallSite, Loop
from .signatures import WRITES

if TYPE_CHECKING:
    from .semantics import Semantics

PURE_MODULES = frozenset({"numpy", "cupy", "cupyx", "torch", "jax", "math", "builtins", "numba", "operator"})
MUTATING_FUNCS = frozenset(
    f"{m}.{f}" for m in ("numpy", "cupy") for f in ("copyto", "put", "place", "putmask", "fill_diagonal", "random.shuffle")
) | {"random.shuffle"}
MUTATING_METHODS = frozenset(
    {"fill", "sort", "resize", "put", "itemset", "setflags", "partition", "append", "extend", "insert", "pop",
     "clear", "update", "remove", "setdefault", "popitem", "set", "copy_to_device", "fill_", "zero_"}
)
PURE_METHODS = frozenset(
    {"reshape", "astype", "copy", "ravel", "flatten", "transpose", "view", "squeeze", "swapaxes", "contiguous",
     "float", "double", "half", "int", "long", "bool", "clone", "detach", "sum", "mean", "max", "min", "std",
     "var", "conj", "dot", "mT", "numpy", "T"}
)


class LoopFacts:
    _mutated: dict[int, set[str]]
    _changed: dict[int, frozenset[str]]

    def mutated_by(self: Semantics, site: CallSite) -> set[str]:
        """Names of arrays (or other objects) a call may change in place."""
        key = id(site)
        if key not in self._mutated:
            self._mutated[key] = self._mutated_by(site)
        return self._mutated[key]

    def _mutated_by(self: Semantics, site: CallSite) -> set[str]:
        call, scope = site.node, site.scope
        out: set[str] = set()
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == "out":
                root = self.array_root(arg.value, scope)
                if root:
                    out.add(root)
        if self.is_offload(site):
            _, pairs = self.launch(site)
            for param, arg in pairs:
                if param is None or param.access in WRITES:
                    root = self.array_root(arg.value, scope)
                    if root:
                        out.add(root)
            return out
        use = self.classify(call, scope)
        if use is not None:
            if use.api.method == "set" and isinstance(call.func, cst.Attribute):
                root = self.array_root(call.func.value, scope)
                if root:
                    out.add(root)
            return out
        qualname = self.qualify(call.func)
        if qualname is not None and qualname.split(".")[0] in PURE_MODULES:
            if qualname in MUTATING_FUNCS and call.args:
                root = self.array_root(call.args[0].value, scope)
                if root:
                    out.add(root)
            return out
        if isinstance(call.func, cst.Attribute):
            method = call.func.attr.value
            if method in MUTATING_METHODS or (method.endswith("_") and not method.startswith("_")):
                root = self.array_root(call.func.value, scope)
                if root:
                    out.add(root)
            if method in PURE_METHODS:
                return out
        for arg in call.args:  # an unknown function may change what it is given
            root = self.array_root(arg.value, scope)
            if root:
                out.add(root)
        return out

    def rebound_or_stored(self: Semantics, loop: Loop) -> frozenset[str]:
        key = -id(loop)
        if key not in self._changed:
            events = loop.scope.events[loop.start:loop.end]
            self._changed[key] = frozenset(e.name for e in events if e.kind in ("bind", "store", "aug", "del"))
        return self._changed[key]

    def rebound(self: Semantics, loop: Loop) -> frozenset[str]:
        return frozenset(e.name for e in loop.scope.events[loop.start:loop.end] if e.kind in ("bind", "del"))

    def pure_call(self: Semantics, site: CallSite) -> bool:
        """A call inside a copied expression that returns the same data for the same inputs."""
        if self.classify(site.node, site.scope) is not None:
            return True
        qualname = self.qualify(site.node.func)
        if qualname is not None:
            return qualname.split(".")[0] in PURE_MODULES and qualname not in MUTATING_FUNCS
        func = site.node.func
        return isinstance(func, cst.Attribute) and func.attr.value in PURE_METHODS

    def invariant_in(self: Semantics, site: CallSite, loop: Loop) -> bool:
        """Nothing the call reads (receiver, arguments, enclosing device/stream contexts) changes in `loop`.

        What the call itself changes does not count: `d.set(h)` writes `d`, but
        doing it again with the same `h` writes the same data.
        """
        changed = set(self.rebound_or_stored(loop))
        for other in loop.calls:
            if other is not site:
                changed |= self.mutated_by(other)
        events = site.scope.events
        ranges = [site.func_range, *site.arg_ranges]
        ranges += [(w.start, w.end) for w in site.withs[loop.with_depth:]]
        for start, end in ranges:
            for event in events[start:end]:
                if event.kind == "load" and event.name in changed:
                    return False
                if event.kind in ("bind", "loop"):
                    return False  # a walrus or a comprehension inside: new values each time
                if event.kind == "call" and not self.pure_call(event.extra):
                    return False
        return True
