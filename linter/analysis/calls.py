"""Which calls copy, allocate, synchronise or launch: the catalog applied to one use of a call.

A call's meaning depends on its arguments (`x.to(device)` copies only to a
device; `cp.asarray(d)` of a device array copies nothing), so classifying a
call asks whether values are on the device, and the device-value analysis
asks how calls classify. The two are one recursion; `Calls` owns the
analysis (`self.values`) and the memo of classifications that each pass of
its solution clears.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from .apis import Api, ApiIndex
from .idioms import array_module_variable, module_object
from .names import Names
from .scopes import IndexedCall, Scope, dotted
from .values import DeviceValues

# Names that hold a device: `device`, `devs`, `self.gpu`, `gpu_id`, `local_rank` (`.to(local_rank)` is cuda:N).
# PyTorch's legacy tensor types: `x.type(torch.FloatTensor)` moves x to the host, `torch.cuda.FloatTensor` to the GPU
TENSOR_TYPE = re.compile(r"^torch\.(cuda\.)?(?:Float|Double|Half|BFloat16|Byte|Char|Short|Int|Long|Bool)Tensor$")
# libraries besides Warp whose arrays have a `.numpy()` method (a download for some of them)
NUMPY_METHOD_LIBRARIES = frozenset({"torch", "tensorflow", "paddle", "mxnet", "oneflow", "jittor"})
DEVICE_GETTER = re.compile(r"(?:get_|current_)?device", re.I)
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


def argument(call: cst.Call, position: int | None, keyword: str | None) -> cst.BaseExpression | None:
    if keyword is not None:
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value == keyword:
                return arg.value
    if position is not None:
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if position < len(positional):
            return positional[position].value
    return None


class Calls:
    """The catalog's view of the calls of one file, memoised; owns the file's device-value analysis."""

    def __init__(self, names: Names, apis: ApiIndex) -> None:
        self.names = names
        self.apis = apis
        self._classified: dict[int, Classified | None] = {}
        self.values = DeviceValues(names, self)

    def forget(self) -> None:
        """Drop memoised classifications: they depend on device values, which a new pass may have grown."""
        self._classified.clear()

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
        qualname = self.names.qualify(call.func)
        if qualname is not None and qualname in self.apis.implicit:
            data = argument(call, 0, None)
            lib = self.values.device_lib(data, scope) if data is not None else None
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
            for api in self.apis.method(call.func.attr.value, self.names.libraries):
                use = self._method_use(api, call, scope)
                if use is not None:
                    return use
            api = self._module_sync(call.func, scope)
            if api is not None:
                return self._call_use(api, call, scope)
        return None

    def _module_sync(self, func: cst.Attribute, scope: Scope) -> Api | None:
        """`xp.bincount(...)` where `xp = cp.get_array_module(x)`: CuPy's function of that name, when it waits.

        Array-agnostic code runs on CuPy when given CuPy arrays; what CuPy's
        function then does, it does. Only the waits count, and the downloads
        (`xp.asnumpy(d)` gives a host array; on NumPy it gives back its
        argument): `xp.asarray(h)` of such code may be a NumPy no-op, and is
        no copy to report.
        """
        if not isinstance(func.value, cst.Name) or "cupy" not in self.names.libraries:
            return None
        api = self.apis.call(f"cupy.{func.attr.value}")
        if api is None or api.kind not in ("sync", "d2h"):
            return None
        return api if array_module_variable(self.names, self.names.name_of(func.value), scope) else None

    def _call_use(self, api: Api, call: cst.Call, scope: Scope) -> Classified | None:
        data = argument(call, api.arg if api.arg is not None else 0, None)
        kind = api.kind
        if api.unless_false is not None:
            flag = argument(call, None, api.unless_false)
            if isinstance(flag, cst.Name) and flag.value == "False":
                return None  # `get_from_first_device(x, as_numpy=False)`: the helper's copy is not made
        if api.direction_arg is not None:  # cudaMemcpy(..., cudaMemcpyKind.cudaMemcpyHostToDevice)
            named = dotted(argument(call, api.direction_arg, "kind"))
            if named.endswith("HostToDevice"):
                kind = "h2d"
            elif named.endswith("DeviceToHost"):
                kind = "d2h"
            else:
                return None
            return Classified(api, kind, argument(call, 1, None))
        if api.device_kwarg is not None or api.device_arg is not None:
            target = argument(call, api.device_arg, api.device_kwarg)
            where = self.destination(target, scope)
            if api.kind == "alloc" and target is None and (api.call or "").endswith("_like"):
                like = argument(call, 0, None)  # `torch.zeros_like(x)`: where x lives
                on_device = like is not None and self.values.device_at(like, self.names.call_at(call))
                return Classified(api, "alloc", None) if on_device else None
            if api.kind == "alloc":
                return Classified(api, "alloc" if where == "device" else "host-alloc", None)
            if where != "device":
                return None
        if kind == "h2d" and data is not None and self.values.device_at(data, self.names.call_at(call)):
            return None  # already on the device: no copy
        return Classified(api, kind, data)

    def _method_use(self, api: Api, call: cst.Call, scope: Scope) -> Classified | None:
        assert isinstance(call.func, cst.Attribute)
        receiver = call.func.value
        if api.receiver is not None:
            if api.receiver.startswith("offload_core."):
                if not self.is_region_handle(receiver, scope):
                    return None
            elif self.values.device_lib(receiver, scope) != api.library and not self._only_owner(api, receiver, scope):
                return None
        kind = api.kind
        if api.device_arg is not None or api.device_kwarg is not None:
            where = self.destination(argument(call, api.device_arg, api.device_kwarg), scope)
            if where is None:
                return None
            if where == "cpu":
                kind = "d2h"
        data = argument(call, api.arg, None) if api.arg is not None else receiver
        if kind == "h2d" and api.arg is None and self.values.device_at(receiver, self.names.call_at(call)):
            return None
        if kind == "h2d" and api.method in ("to", "cuda") and module_object(self.names.idx, self.names, receiver, scope):
            return None  # `self.mel.to(x.device)`: a module, moved once; later calls return it as it is
        if api.call is None and api.method in ("copy_from", "copy_to") and self._host_buffer(receiver, scope):
            kind = "d2h" if kind == "h2d" else "h2d"  # pinned.copy_from(dev_buf): the host buffer is the destination
        return Classified(api, kind, data)

    def _only_owner(self, api: Api, receiver: cst.BaseExpression, scope: Scope) -> bool:
        """Is `receiver.numpy()` Warp's download though nothing says where `receiver` came from (`example.loss`)?

        In a file that imports Warp and no other library whose arrays have a `.numpy()` (PyTorch, TensorFlow),
        an object of unknown origin with that method is a Warp array: NumPy's arrays have none.
        """
        if api.library != "warp" or self.values.array_lib(receiver, scope) is not None:
            return False
        return self.names.imports("warp") and not any(self.names.imports(m) for m in NUMPY_METHOD_LIBRARIES)

    def _host_buffer(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        """A buffer in host memory: named so (`pinned`, `host_buf`), or allocated by a pinned/host memory resource."""
        name = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else ""
        if any(word in name.lower() for word in ("pinned", "host", "cpu")):
            return True
        if isinstance(expr, cst.Name):
            for how, value in self.names.assignments(expr.value, scope):
                if how == "=" and isinstance(value, cst.Call):
                    text = self.names.idx.module.code_for_node(value.func)
                    if "Pinned" in text or "Host" in text:
                        return True
        return False

    def destination(self, expr: cst.BaseExpression | None, scope: Scope, depth: int = 0) -> str | None:
        """"device", "cpu" or None (not a device, e.g. a dtype) for a torch-style device argument."""
        if expr is None or depth > 4:
            return None
        if isinstance(expr, cst.SimpleString):
            typed = TENSOR_TYPE.match(str(expr.evaluated_value))
            if typed:
                return "device" if typed.group(1) else "cpu"  # `.type("torch.FloatTensor")`
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
            qualname = self.names.qualify(expr.func)
            if qualname == "torch.device":
                inner = self.destination(argument(expr, 0, "type"), scope, depth + 1)
                return inner or "device"
            func = expr.func
            called = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(
                func, cst.Name) else ""
            # `backend.get_device(x)`, `cp.cuda.Device(i)`, `torch.cuda.current_device()`: where the work runs
            return "device" if DEVICE_GETTER.fullmatch(called) else None
        if isinstance(expr, cst.Name):
            found = {self.destination(v, scope, depth + 1) for how, v in self.names.assignments(expr.value, scope)
                     if how in ("=", "with") and isinstance(v, cst.BaseExpression)}
            if "device" in found:
                return "device"
            if found == {"cpu"}:
                return "cpu"
            if "cpu" in expr.value.lower():
                return "cpu"  # `cpu_device`, bound elsewhere to torch.device("cpu")
            if DEVICE_NAME.search(expr.value) or self.values.array_lib(expr, scope) is not None:
                return "device"  # a device, or a tensor: `.to(grad)` goes where `grad` lives
            return None
        if isinstance(expr, cst.Attribute):
            typed = TENSOR_TYPE.match(self.names.qualify(expr) or "")
            if typed:
                return "device" if typed.group(1) else "cpu"  # `.type(torch.FloatTensor)`: a CPU tensor type
            if "cpu" in expr.attr.value.lower():
                return "cpu"  # self._cpu_device = torch.device("cpu") in __init__
            if DEVICE_NAME.search(expr.attr.value):
                return "device"
            if expr.attr.value == "device" or self.values.array_lib(expr, scope) is not None:
                return "device"  # x.device, p.grad
            return None
        if isinstance(expr, cst.Subscript) and isinstance(expr.value, (cst.Name, cst.Attribute)):
            name = expr.value.value if isinstance(expr.value, cst.Name) else expr.value.attr.value
            return "device" if DEVICE_NAME.search(name) else None  # devices[i]
        return None

    def is_offload(self, call: IndexedCall) -> bool:
        qualname = self.names.qualify(call.node.func)
        api = self.apis.calls.get(qualname) if qualname else None
        return api is not None and api.kind == "launch"

    def is_region(self, call: cst.Call) -> bool:
        qualname = self.names.qualify(call.func)
        api = self.apis.calls.get(qualname) if qualname else None
        return api is not None and api.kind == "region"

    def is_region_handle(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        if not isinstance(expr, cst.Name):
            return False
        return any(isinstance(v, cst.Call) and self.is_region(v) for _, v in self.names.assignments(expr.value, scope))
