"""What the names of one file refer to: imports, bindings, local functions, the arrays views share.

Every other part of the analysis asks these questions; they read only the
syntax index (and the catalog's module names, to resolve star imports), so
the answers need no device-value solution and are cheap to memoise.
"""

from __future__ import annotations

import builtins

import libcst as cst

from .apis import ApiIndex
from .scopes import IndexedCall, ModuleIndex, Scope
from .valuewords import array_module_name

BUILTINS = frozenset(dir(builtins))
OFFLOAD_NAMES = frozenset({"offload", "region", "kernel", "RawKernel", "In", "Out", "InOut", "Owned"})
VIEW_METHODS = frozenset({"reshape", "view", "ravel", "transpose", "swapaxes", "squeeze", "diagonal", "T", "detach"})
ALIAS_ATTRS = frozenset({"T", "mT", "H", "real", "imag", "flat", "data"})  # same memory


class Names:
    """Name resolution for one file; the device-value analysis, call classification and loop facts share one."""

    def __init__(self, idx: ModuleIndex, apis: ApiIndex) -> None:
        self.idx = idx
        self.apis = apis
        libs = {apis.modules[q.split(".")[0]] for q in idx.aliases.values() if q.split(".")[0] in apis.modules}
        libs |= {apis.modules[m.split(".")[0]] for m in idx.star_imports if m.split(".")[0] in apis.modules}
        # `from aspire.numeric import xp`: the project's own array module, NumPy or CuPy as its configuration
        # says; code written against it is read as `xp = cupy.get_array_module(x)` is, as code meant to run on
        # CuPy. A library imported under such a name (`import numpy as xp`) is that library.
        self.array_modules = frozenset(
            local for local, qualname in idx.aliases.items()
            if array_module_name(local) and "." in qualname and qualname.split(".")[0] not in apis.modules)
        if self.array_modules:
            libs.add("cupy")
        self.libraries = frozenset(libs)
        self._roots = frozenset(q.split(".")[0] for q in idx.aliases.values())
        self._defs: dict[int, Scope] | None = None
        self._calls_by_name: dict[str, list[IndexedCall]] | None = None

    def imports(self, module: str) -> bool:
        """Does the file import the top-level module `module` (under any name)?"""
        return module in self._roots

    def qualify(self, expr: cst.BaseExpression) -> str | None:
        if isinstance(expr, cst.Name):
            name = expr.value
            if name in self.array_modules:
                return None  # a variable holding an array module, as `xp = get_array_module(x)` binds one
            qualname = self.idx.aliases.get(name)
            if qualname is not None:
                return qualname
            for module in self.idx.star_imports:
                candidate = f"{module}.{name}"
                if candidate in self.apis.calls or (module.split(".")[0] == "offload_core" and name in OFFLOAD_NAMES):
                    return candidate
            if name in BUILTINS:
                return f"builtins.{name}"
            return None
        if isinstance(expr, cst.Attribute):
            base = self.qualify(expr.value)
            return f"{base}.{expr.attr.value}" if base is not None and not base.startswith("builtins.") else None
        return None

    def name_of(self, node: cst.Name) -> str:
        """The variable a Name node is: its text, or `y@N` inside the comprehension that binds `y`."""
        return self.idx.renamed.get(id(node), node.value)

    def assignments(self, name: str, scope: Scope) -> list[tuple[str, cst.CSTNode | None]]:
        """The bindings of `name` visible from `scope` (its own, else the nearest enclosing one's)."""
        s: Scope | None = scope
        while s is not None:
            if name in s.assigns:
                return s.assigns[name]
            s = s.parent
            while s is not None and s.kind == "class":
                s = s.parent
        return []

    def call_at(self, node: cst.CSTNode | None) -> IndexedCall | None:
        """The index's record of a Call node (None for a node that is not a recorded call)."""
        return self.idx.call_of.get(id(node)) if node is not None else None

    def local_function(self, name: str, scope: Scope) -> Scope | None:
        """The scope of the function `name` refers to from `scope`, when this file defines it (once)."""
        defs = [v for how, v in self.assignments(name, scope) if how == "def"]
        if len(defs) != 1 or not isinstance(defs[0], cst.FunctionDef):
            return None
        return self._function_scopes().get(id(defs[0]))

    def _function_scopes(self) -> dict[int, Scope]:
        if self._defs is None:
            self._defs = {id(node): scope for node, scope in self.idx.functions}
        return self._defs

    def calls_of(self, function: Scope) -> list[IndexedCall]:
        """The calls in this file that call `function` by its plain name."""
        if self._calls_by_name is None:
            by_name: dict[str, list[IndexedCall]] = {}
            for call in self.idx.calls:
                if isinstance(call.node.func, cst.Name):
                    by_name.setdefault(call.node.func.value, []).append(call)
            self._calls_by_name = by_name
        return [call for call in self._calls_by_name.get(function.name, ())
                if self.local_function(function.name, call.scope) is function]

    def is_host_array(self, name: str, scope: Scope) -> bool:
        for how, value in self.assignments(name, scope):
            if how == "=" and isinstance(value, cst.Call):
                qualname = self.qualify(value.func)
                if qualname is not None and qualname.split(".")[0] == "numpy":
                    return True
        return False

    def array_root(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> str | None:
        """The array whose memory `expr` is: through views, `.T`, reshape, In(x) and alias assignments."""
        if depth > 10:
            return None
        if isinstance(expr, cst.Name):
            values = [v for how, v in self.assignments(expr.value, scope) if how == "="]
            if values and len(values) == len(self.assignments(expr.value, scope)):
                roots = {self.array_root(v, scope, depth + 1) if isinstance(v, cst.BaseExpression) else None for v in values}
                if len(roots) == 1:
                    (root,) = roots
                    if root is not None and root != expr.value:
                        return root
            return expr.value
        if isinstance(expr, cst.Subscript):
            return self.array_root(expr.value, scope, depth + 1)
        if isinstance(expr, cst.Attribute) and expr.attr.value in ALIAS_ATTRS:
            return self.array_root(expr.value, scope, depth + 1)
        if isinstance(expr, cst.Call):
            func = expr.func
            qualname = self.qualify(func)
            if qualname is not None:
                head, _, last = qualname.rpartition(".")
                if head.split(".")[0] == "offload_core" and last in ("In", "Out", "InOut", "Owned") and expr.args:
                    return self.array_root(expr.args[0].value, scope, depth + 1)
                if head == "numpy" and last in VIEW_METHODS | {"asarray"} and expr.args:
                    return self.array_root(expr.args[0].value, scope, depth + 1)
                return None
            if isinstance(func, cst.Attribute) and func.attr.value in VIEW_METHODS:
                return self.array_root(func.value, scope, depth + 1)
        return None
