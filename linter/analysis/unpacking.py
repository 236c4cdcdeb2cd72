"""Where the parts of an unpacked or iterated value live: `for x, y in zip(xs, ys)`, `a, b = f()`.

`values.DeviceValues` asks this when a target is bound to a part of
something (`Unpack`): an element of a device array is on the device, the
second of `enumerate(rows)` is a row, `v` of `losses.items()` is a loss,
`x, xupdate = self.step(x)` takes the parts of what the method returns.
"""

from __future__ import annotations

from typing import Protocol

import libcst as cst

from .classes import own_method
from .idioms import parameters_of_module
from .names import Names
from .scopes import ModuleIndex, Scope, Unpack
from .valuewords import stronger


class Values(Protocol):
    """What this module needs of `values.DeviceValues`."""

    names: Names
    idx: ModuleIndex

    def taint(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> str | None: ...


class Unpacking:
    """The unpacking questions of one file's device-value analysis (which it holds)."""

    def __init__(self, values: Values) -> None:
        self.values = values
        self._unpacking: set[tuple[int, tuple[int, ...]]] = set()  # returns being unpacked: recursion guard

    def taint(self, unpack: Unpack, scope: Scope, depth: int = 0) -> str | None:
        """Where the part of `unpack.source` a target binds lives (see `scopes.Unpack`)."""
        source: cst.BaseExpression = unpack.source
        index = list(unpack.index)
        if unpack.iterate:
            if isinstance(source, cst.Call) and isinstance(source.func, cst.Name) and source.func.value in (
                    "zip", "enumerate", "reversed", "sorted", "list", "tuple") and self.values.names.qualify(source.func) in (
                    f"builtins.{source.func.value}",):
                kind = source.func.value
                args = [a.value for a in source.args if a.keyword is None and not a.star]
                if kind == "zip":
                    if not index or not 0 <= index[0] < len(args):
                        return None
                    return self.element(args[index[0]], index[1:], scope, depth)
                if kind == "enumerate":
                    if not index or index[0] != 1 or not args:
                        return None
                    return self.element(args[0], index[1:], scope, depth)
                if args and kind in ("reversed", "sorted", "list", "tuple"):
                    return self.element(args[0], index, scope, depth)
                return None
            if isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute) and not source.args \
                    and source.func.attr.value in ("items", "keys"):
                if source.func.attr.value == "keys" or index[:1] != [1]:
                    return None  # a dict's keys are names, not arrays
                return self.element(source.func.value, index[1:], scope, depth)  # `for k, v in losses.items()`
            if isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute) and index[:1] == [0] \
                    and source.func.attr.value.startswith("named_"):
                return None  # `for name, m in model.named_modules()`: a name, whatever the module holds
            if parameters_of_module(source) and "torch" in self.values.names.libraries:
                named = source.func.attr.value.startswith("named_")  # type: ignore[union-attr]
                return "torch" if index == ([1] if named else []) else None  # `for name, p in m.named_parameters()`
            return self.element(source, index, scope, depth)
        if isinstance(source, (cst.Tuple, cst.List)) and index:
            elements = [e.value for e in source.elements]
            if index[0] < len(elements) and not any(isinstance(e, cst.StarredElement) for e in source.elements):
                inner = elements[index[0]]
                return self.taint(Unpack(inner, tuple(index[1:]), False), scope, depth + 1) if index[1:] \
                    else self.values.taint(inner, scope)
            return None
        if isinstance(source, cst.Call) and isinstance(source.func, cst.Name) and index:
            local = self.values.names.local_function(source.func.value, scope)
            if local is not None:
                return self.return_element(local, tuple(index))
        if isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute) and index:
            method = own_method(self.values.idx, source.func, scope)
            if method is not None:
                return self.return_element(method, tuple(index))  # `x, xupdate = self.step(x)`
        return self.values.taint(source, scope)

    def element(self, iterable: cst.BaseExpression, index: list[int], scope: Scope, depth: int) -> str | None:
        """An element of iterating `iterable` (then indexed): a device array's rows and items are device values."""
        if depth > 6:
            return None
        if isinstance(iterable, (cst.Tuple, cst.List)):
            found = None
            for e in iterable.elements:
                found = stronger(found, self.values.taint(e.value, scope))
            return found
        return self.values.taint(iterable, scope)

    def return_element(self, function: Scope, index: tuple[int, ...]) -> str | None:
        """Where part `index` of what `function` returns lives (`a, b = f()`)."""
        key = (id(function), index)
        if key in self._unpacking:
            return None  # a recursive function: its own call adds nothing
        self._unpacking.add(key)
        try:
            found = None
            for value in function.returns:
                found = stronger(found, self.taint(Unpack(value, index, False), function, 1))
            return found
        finally:
            self._unpacking.discard(key)
