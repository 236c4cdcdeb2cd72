"""What the names in one file mean: imports, device values, array aliases, kernels, API calls.

The checks ask questions ("is this call a host->device copy?", "is `d` a
device array?", "which array does `t` alias?", "what does this loop
change?"); this module answers them from the ModuleIndex, lazily and with
memoisation, so a file that has no loop never pays for loop analysis.

Device-ness is a small flow-insensitive taint pass per scope: a name is a
device value of library L when some assignment gives it the result of an L
copy or allocation, an operation on an L device value, or a method of one.
Nothing else is a device value, which is what keeps `dict.get("k")` and
`queue.get()` from looking like `cupy.ndarray.get()`. Comparisons are not
taint sources on purpose: `(pred == labels).sum().item()` in a training loop
is the idiom the rules must leave alone.
"""

from __future__ import annotations

import builtins
import re
from dataclasses import dataclass

import libcst as cst

from .apis import Api, ApiIndex
from .scopes import IndexedCall, ModuleIndex, Scope
from .scopes import dotted
from .loops import LoopFacts
from .values import DeviceValues
from .kernels import signature_of_def, signature_of_rawkernel
from .project import KernelIndex, KernelParam, KernelSig

BUILTINS = frozenset(dir(builtins))
OFFLOAD_NAMES = frozenset({"offload", "region", "kernel", "RawKernel", "In", "Out", "InOut", "Owned"})
VIEW_METHODS = frozenset({"reshape", "view", "ravel", "transpose", "swapaxes", "squeeze", "diagonal", "T", "detach"})
ALIAS_ATTRS = frozenset({"T", "mT", "H", "real", "imag", "flat", "data"})  # same memory
# Names that hold a device: `device`, `devs`, `self.gpu`, `gpu_id`, `local_rank` (`.to(local_rank)` is cuda:N).
DEVICE_NAME = re.compile(r"(?:^|_)(?:(?:device|dev|gpu|cuda)(?:s|_ids?|_index|_idx)?|(?:local_)?rank)$", re.I)


@dataclass(frozen=True)
class Classified:
    """A call the catalog knows, with what the checks need about this use of it."""

    api: Api
    kind: str  # the effective kind: `.to("cpu")` is d2h though `.to` is listed h2d; "host-alloc" for host creators
    data: cst.BaseExpression | None  # the copied value

    @property
    def direction(self) -> str:
        return {"h2d": "host->device", "d2h": "device->host"}.get(self.kind, self.kind)


def _arg(call: cst.Call, position: int | None, keyword: str | None) -> cst.BaseExpression | None:
    if keyword is not None:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == keyword:
                return arg.value
    if position is not None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if position < len(positional):
            return positional[position].value
    return None


class Semantics(LoopFacts, DeviceValues):
    """Answers for one file; create one per lint."""

    def __init__(self, idx: ModuleIndex, apis: ApiIndex, foreign: KernelIndex) -> None:
        self.idx = idx
        self.apis = apis
        self.foreign = foreign
        libs = {apis.modules[q.split(".")[0]] for q in idx.aliases.values() if q.split(".")[0] in apis.modules}
        libs |= {apis.modules[m.split(".")[0]] for m in idx.star_imports if m.split(".")[0] in apis.modules}
        self.libraries = frozenset(libs)
        self.needs: dict[str, str | None] = {}
        self._taints: dict[int, dict[str, str]] = {}
        self._returns: dict[int, str | None] = {}
        self._solved = False
        self._solving = False
        self._unpacking: set[tuple[int, tuple[int, ...]]] = set()
        self._defs: dict[int, Scope] | None = None
        self._calls_by_name: dict[str, list[IndexedCall]] | None = None
        self._classified: dict[int, Classified | None] = {}
        self._changed: dict[int, frozenset[str]] = {}
        self._mutated: dict[int, set[str]] = {}
        self._local_kernels: dict[str, KernelSig] | None = None
        self._exports: tuple[KernelSig, ...] = ()

    # -- names ------------------------------------------------------------------------

    def qualify(self, expr: cst.BaseExpression) -> str | None:
        if isinstance(expr, cst.Name):
            name = expr.value
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

    def site_of(self, node: cst.CSTNode | None) -> IndexedCall | None:
        return self.idx.call_of.get(id(node)) if node is not None else None

    # -- API calls ----------------------------------------------------------------------

    def classify(self, call: cst.Call, scope: Scope) -> Classified | None:
        """The catalog's view of one call, memoised.

        Classifying a copy asks whether its argument is already on the device,
        which may ask about this very call again (`x = cp.asarray(x)`); the
        memo holds None while the call is being classified, so the inner
        question gets "not known to be a copy" instead of recursing forever.
        """
        key = id(call)
        if key in self._classified:
            return self._classified[key]
        self._classified[key] = None
        result = self._classify(call, scope)
        if key in self._classified:  # not cleared by a pass of the device-value solution meanwhile
            self._classified[key] = result
        return result

    def _classify(self, call: cst.Call, scope: Scope) -> Classified | None:
        qualname = self.qualify(call.func)
        if qualname is not None and qualname in self.apis.implicit:
            data = _arg(call, 0, None)
            lib = self.device_lib(data, scope) if data is not None else None
            for api in self.apis.implicit[qualname]:
                if api.library == lib:
                    return Classified(api, api.kind, data)
            return None
        if qualname is not None:
            api = self.apis.call(qualname)
            if api is not None:
                return self._call_use(api, call, scope)
            if not isinstance(call.func, cst.Attribute) or self.apis.library_of(qualname) is None:
                return None
        if isinstance(call.func, cst.Attribute):
            for api in self.apis.method(call.func.attr.value, self.libraries):
                use = self._method_use(api, call, scope)
                if use is not None:
                    return use
        return None

    def _call_use(self, api: Api, call: cst.Call, scope: Scope) -> Classified | None:
        data = _arg(call, api.arg if api.arg is not None else 0, None)
        kind = api.kind
        if api.direction_arg is not None:  # cudaMemcpy(..., cudaMemcpyKind.cudaMemcpyHostToDevice)
            named = dotted(_arg(call, api.direction_arg, "kind"))
            if named.endswith("HostToDevice"):
                kind = "h2d"
            elif named.endswith("DeviceToHost"):
                kind = "d2h"
            else:
                return None
            return Classified(api, kind, _arg(call, 1, None))
        if api.device_kwarg is not None or api.device_arg is not None:
            where = self.destination(_arg(call, api.device_arg, api.device_kwarg), scope)
            if api.kind == "alloc":
                return Classified(api, "alloc" if where == "device" else "host-alloc", None)
            if where != "device":
                return None
        if kind == "h2d" and data is not None and self.device_at(data, self.site_of(call)):
            return None  # already on the device: no copy
        return Classified(api, kind, data)

    def _method_use(self, api: Api, call: cst.Call, scope: Scope) -> Classified | None:
        assert isinstance(call.func, cst.Attribute)
        receiver = call.func.value
        if api.receiver is not None:
            if api.receiver.startswith("offload_core."):
                if not self.is_region_handle(receiver, scope):
                    return None
            elif self.device_lib(receiver, scope) != api.library:
                return None
        kind = api.kind
        if api.device_arg is not None or api.device_kwarg is not None:
            where = self.destination(_arg(call, api.device_arg, api.device_kwarg), scope)
            if where is None:
                return None
            if where == "cpu":
                kind = "d2h"
        data = _arg(call, api.arg, None) if api.arg is not None else receiver
        if kind == "h2d" and api.arg is None and self.device_at(receiver, self.site_of(call)):
            return None
        return Classified(api, kind, data)

    def destination(self, expr: cst.BaseExpression | None, scope: Scope, depth: int = 0) -> str | None:
        """"device", "cpu" or None (not a device, e.g. a dtype) for a torch-style device argument."""
        if expr is None or depth > 4:
            return None
        if isinstance(expr, cst.SimpleString):
            text = str(expr.evaluated_value).lower()
            if text.startswith("cpu"):
                return "cpu"
            return "device" if text.startswith(("cuda", "xpu", "mps", "hip", "gpu")) else None
        if isinstance(expr, cst.Integer):
            return "device"
        if isinstance(expr, cst.IfExp):
            options = {self.destination(expr.body, scope, depth + 1), self.destination(expr.orelse, scope, depth + 1)}
            return "device" if "device" in options else ("cpu" if options == {"cpu"} else None)
        if isinstance(expr, cst.Call):
            qualname = self.qualify(expr.func)
            if qualname == "torch.device":
                inner = self.destination(_arg(expr, 0, "type"), scope, depth + 1)
                return inner or "device"
            return None
        if isinstance(expr, cst.Name):
            found = {self.destination(v, scope, depth + 1) for how, v in self.assignments(expr.value, scope)
                     if how in ("=", "with") and isinstance(v, cst.BaseExpression)}
            if "device" in found:
                return "device"
            if found == {"cpu"}:
                return "cpu"
            if DEVICE_NAME.search(expr.value) or self.array_lib(expr, scope) is not None:
                return "device"  # a device, or a tensor: `.to(grad)` goes where `grad` lives
            return None
        if isinstance(expr, cst.Attribute):
            if DEVICE_NAME.search(expr.attr.value):
                return "device"
            if expr.attr.value == "device" or self.array_lib(expr, scope) is not None:
                return "device"  # x.device, p.grad
            return None
        if isinstance(expr, cst.Subscript) and isinstance(expr.value, (cst.Name, cst.Attribute)):
            name = expr.value.value if isinstance(expr.value, cst.Name) else expr.value.attr.value
            return "device" if DEVICE_NAME.search(name) else None  # devices[i]
        return None

    def is_offload(self, site: IndexedCall) -> bool:
        qualname = self.qualify(site.node.func)
        api = self.apis.calls.get(qualname) if qualname else None
        return api is not None and api.kind == "launch"

    def is_region(self, call: cst.Call) -> bool:
        qualname = self.qualify(call.func)
        api = self.apis.calls.get(qualname) if qualname else None
        return api is not None and api.kind == "region"

    def is_region_handle(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        if not isinstance(expr, cst.Name):
            return False
        return any(isinstance(v, cst.Call) and self.is_region(v) for _, v in self.assignments(expr.value, scope))

    def produces_device_value(self, site: IndexedCall) -> bool:
        return self.device_lib(site.node, site.scope) is not None

    # -- local functions (for the device-value analysis) ---------------------------------------

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
            for site in self.idx.calls:
                if isinstance(site.node.func, cst.Name):
                    by_name.setdefault(site.node.func.value, []).append(site)
            self._calls_by_name = by_name
        return [site for site in self._calls_by_name.get(function.name, ())
                if self.local_function(function.name, site.scope) is function]

    def is_host_array(self, name: str, scope: Scope) -> bool:
        for how, value in self.assignments(name, scope):
            if how == "=" and isinstance(value, cst.Call):
                qualname = self.qualify(value.func)
                if qualname is not None and qualname.split(".")[0] == "numpy":
                    return True
        return False

    # -- arrays and aliases -----------------------------------------------------------

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

    # -- kernels ------------------------------------------------------------------------

    def _kernels(self) -> dict[str, KernelSig]:
        if self._local_kernels is None:
            found: dict[str, KernelSig] = {}
            exports = []
            for node, scope in self.idx.functions:
                sig = signature_of_def(node, self.idx.module_name, self.qualify)
                if sig is not None:
                    found[node.name.value] = sig
                    if scope.parent is not None and scope.parent.kind == "module":
                        exports.append(sig)
            module_scope = self.idx.scopes[0]
            for name, values in module_scope.assigns.items():
                for how, value in values:
                    if how == "=" and isinstance(value, cst.Call):
                        sig = signature_of_rawkernel(name, value, self.idx.module_name, self.qualify)
                        if sig is not None:
                            found[name] = sig
                            exports.append(sig)
            self._local_kernels = found
            self._exports = tuple(exports)
        return self._local_kernels

    def exports(self) -> tuple[KernelSig, ...]:
        self._kernels()
        return self._exports

    def kernel(self, expr: cst.BaseExpression) -> KernelSig | None:
        if isinstance(expr, cst.Name) and expr.value in self._kernels() and expr.value not in self.idx.aliases:
            return self._kernels()[expr.value]
        qualname = self.qualify(expr)
        if qualname is None or qualname.startswith("builtins."):
            return None
        sig = self.foreign.lookup(qualname)
        self.needs[qualname] = sig.digest() if sig is not None else None
        return sig

    def launch(self, site: IndexedCall) -> tuple[KernelSig | None, list[tuple[KernelParam | None, cst.Arg]]]:
        """An offload() call's kernel and its (array parameter, argument) pairs; parameter None when unknown."""
        args = site.node.args
        if not args or args[0].keyword is not None or args[0].star:
            return None, []
        sig = self.kernel(args[0].value)
        rest = tuple(args[1:])
        if sig is not None:
            pairs = sig.bind(rest)
            if pairs is not None:
                return sig, [(p, a) for p, a in pairs if p.is_array]
        return None, [(None, a) for a in rest if not a.star]

    # -- loops --------------------------------------------------------------------------
