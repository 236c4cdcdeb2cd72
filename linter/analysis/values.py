"""Which expressions are device arrays: a small taint analysis per scope, across the functions of a file.

A name is a device value of library L when an assignment gives it the
result of an L copy or allocation, an operation on an L device value, a
method of one, or a call that takes one. The last rule is what real
training code needs: `loss = criterion(model(x), y)` after `x =
x.to(device)` is a device tensor although nothing tells the linter what
`criterion` is (PyTorch functions and modules return tensors on the device
of their inputs). Inside one file the analysis also follows

- tuple unpacking and loop targets (`loss, out = step(x)`, `for h, w in
  zip(hs, ws)`: an element of a device array is on the device),
- the functions the file defines: a call of a local function is a device
  value when one of its `return` values is, and a parameter is one when
  every call of the function in the file passes one,
- annotations: `x: cp.ndarray` is on the device; `x: torch.Tensor` is a
  tensor that may be on either side ("maybe", written `torch?`).

"Maybe" values serve only the rules whose fix is right wherever the tensor
lives (reading a tensor element by element is slow on the CPU too); every
rule that claims a host<->device copy asks `device_lib`, which answers for
certain device values only. Known host results stay host: `x.shape`,
`x.size(0)`, `len(x)`, `x.item()`, `x.get()`, NumPy functions.

Classifying a call asks about device values and the analysis asks how
calls classify: `DeviceValues` belongs to the file's `Calls`, which clears
its memo of classifications after each pass of the solution.
"""

from __future__ import annotations

from typing import Any, Mapping, Protocol

import libcst as cst

from .names import Names
from .parameters import bound_arg, forward_input, method_calls, positional_params
from .classes import buffer_names, method_class, own_method
from .annotations import local_record_lib
from .arguments import handed_lib, host_rebound
from .idioms import array_module, module_comparison
from .reaching import host_arm, host_when_reached
from .unpacking import Unpacking
from .scopes import Binding, IndexedCall, Scope, Unpack, qualified_name

from .jaxsteps import compiled, jax_step, jitted
from .valuewords import (
    MAYBE, HOST_ATTRS, HOST_METHODS, PREDICATES, IO_METHODS, ANNOTATIONS, MODEL_NAME, TORCH_NOT_TENSORS, TENSOR_ATTRS, VARIABLE_ATTRS, ARRAY_BUILTINS, HOST_MODULES,
    NUMPY_CONVERSIONS, array_module_name, random_key, string_or_host_result, stronger, strip,
)


class Classifier(Protocol):
    """What the analysis needs of the call classifier that owns it (`calls.Calls`)."""

    def classify(self, call: cst.Call, scope: Scope) -> Any: ...

    def forget(self) -> None: ...


class DeviceValues:
    """The device values of one file: a fixpoint over its scopes, solved on the first question."""

    def __init__(self, names: Names, calls: Classifier) -> None:
        self.names = names
        self.calls = calls
        self.idx = names.idx
        # the solution: per scope, name -> taint; per function scope, the taint of its return values
        self._taints: dict[int, dict[str, str]] = {}
        self._returns: dict[int, str | None] = {}
        self._solved = False
        self._solving = False
        self.unpacking = Unpacking(self)
        self._fed: set[tuple[int, str]] | None = None
        self._attrs: dict[tuple[int, str], str] = {}  # (class scope, attribute) -> what `self.attr = ...` stores
        self._buffer_names: dict[int, set[str]] | None = None
        # what the project's callers hand this file's functions (`run.handed`): function -> parameter -> library
        self.handed: Mapping[str, Mapping[str, str]] = {}

    # -- the questions checks ask ---------------------------------------------------------

    def device_lib(self, expr: cst.BaseExpression, scope: Scope) -> str | None:
        """The library of a value surely on the device, else None."""
        lib = self.taint(expr, scope)
        return lib if lib is not None and not lib.endswith(MAYBE) else None

    def array_lib(self, expr: cst.BaseExpression, scope: Scope) -> str | None:
        """The library of a value that is a GPU library's array, on the device or maybe on it."""
        return strip(self.taint(expr, scope))

    def surely_device(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        """Every binding of the name is a device value (`x = x.cuda()` for a parameter `x` is not)."""
        if not isinstance(expr, cst.Name):
            return self.device_lib(expr, scope) is not None
        values = [(how, v) for how, v in self.names.assignments(self.names.name_of(expr), scope) if how not in ("item", "moved")]
        assigned = [v for how, v in values if how != "aug"]
        return bool(assigned) and len(assigned) == sum(1 for how, _ in values if how == "=") and all(
            isinstance(v, cst.BaseExpression) and self.device_lib(v, scope) is not None for v in assigned
        )

    def device_at(self, expr: cst.BaseExpression, call: IndexedCall | None) -> bool:
        """Is `expr` surely on the device where `call` runs? Names are judged by the bindings that reach it.

        `rsq = r * r; rsq = cp.asarray(rsq)` and then `cp.asarray(rsq)` in a
        loop: the flow-insensitive answer (some binding is a host value) would
        call the loop's `asarray` a copy; the last binding before the call,
        and any binding later in an enclosing loop (reaching around the back
        edge), are what the call sees.
        """
        if call is None:
            return False
        if self.surely_device(expr, call.scope):
            return True
        if not isinstance(expr, cst.Name) or self.names.name_of(expr) not in call.scope.assigns:
            return False
        events = call.scope.events
        name = self.names.name_of(expr)
        before = [e for e in events[:call.index] if e.kind == "bind" and e.name == name]
        if not before:
            return False
        reaching = [before[-1]]
        if call.loops:
            outer = call.loops[0]
            reaching += [e for e in events[call.index:outer.end] if e.kind == "bind" and e.name == name]
        for event in reaching:
            how, value = event.extra
            if how != "=" or not isinstance(value, cst.BaseExpression) or self.device_lib(value, call.scope) is None:
                return False
        return True

    def produces_device_value(self, call: IndexedCall) -> bool:
        return self.device_lib(call.node, call.scope) is not None

    # -- the analysis ----------------------------------------------------------------------

    def taint(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> str | None:
        if depth > 24:
            return None
        if isinstance(expr, cst.Name):
            name = self.names.name_of(expr)
            owner = self._owner(name, scope)
            found = self._names(owner).get(name)
            if found is None and not self._solving and self.fed_to_model(name, owner):
                return "torch"
            return found
        if array_module(expr):
            return "cupy"  # `xp = cp.get_array_module(x)`, `device.xp`: code written to run on CuPy
        if isinstance(expr, cst.Call):
            return self._call_taint(expr, scope, depth)
        if isinstance(expr, (cst.BinaryOperation, cst.BooleanOperation)):
            return stronger(self.taint(expr.left, scope, depth + 1), self.taint(expr.right, scope, depth + 1))
        if isinstance(expr, cst.Comparison) and not module_comparison(self.names, expr, scope):  # not `xp != np`
            out = self.taint(expr.left, scope, depth + 1)
            for target in expr.comparisons:
                if not isinstance(target.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)):
                    out = stronger(out, self.taint(target.comparator, scope, depth + 1))
            return out
        if isinstance(expr, cst.UnaryOperation):
            return None if isinstance(expr.operator, cst.Not) else self.taint(expr.expression, scope, depth + 1)
        if isinstance(expr, cst.Subscript):
            keyed = self._keyed_entry(expr, scope, depth)
            if keyed is not False:
                return keyed
            return self.taint(expr.value, scope, depth + 1)
        if isinstance(expr, cst.Attribute):
            attr = expr.attr.value
            held = self._self_attribute(expr, scope)
            if held is not None:
                return held  # `self.kold`, assigned a device value in another method
            if attr in HOST_ATTRS or attr.startswith("_") or isinstance(expr.value, cst.Name) and self.names.qualify(expr.value):
                return None  # x.shape, x.dtype, a library's private bookkeeping (df._data); np.pi
            found = self.taint(expr.value, scope, depth + 1)  # x.T, out.logits, features.relu2_2
            if found is None and expr.attr.value in TENSOR_ATTRS and "torch" in self.names.libraries:
                return "torch" + MAYBE  # p.grad, p.data: a tensor, wherever it lives
            if found is None and expr.attr.value in VARIABLE_ATTRS and self.names.imports("chainer"):
                # loss.array: the array a Chainer Variable wraps, on the device where the model is (a model's
                # outputs are, as PyTorch's are); param.grad, v.data may be anything's
                return "cupy" if expr.attr.value == "array" else "cupy" + MAYBE
            return found
        if isinstance(expr, cst.IfExp):
            return stronger(self.taint(expr.body, scope, depth + 1), self.taint(expr.orelse, scope, depth + 1))
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
            return self.taint(expr.elt, scope, depth + 1)  # `[{k: v.to(device) ...} for t in targets]`
        if isinstance(expr, cst.DictComp):
            return self.taint(expr.value, scope, depth + 1)  # `{k: v * w[k] for k, v in losses.items()}`
        if isinstance(expr, cst.Dict):
            found = None
            for element in expr.elements:
                if isinstance(element, cst.DictElement):
                    found = stronger(found, self.taint(element.value, scope, depth + 1))
            return found
        return None

    def _keyed_entry(self, expr: cst.Subscript, scope: Scope, depth: int) -> str | None | bool:
        """`ckpt["iter_num"]` where every binding of `ckpt` is a dict literal: the taint of that entry's values.

        A checkpoint dict (`{"model": model.state_dict(), "iter_num": iter_num}`)
        holds tensors and numbers; the number read back is no device value.
        False where the bindings do not say (a call, a parameter): the caller
        falls back to the taint of the whole container.
        """
        if len(expr.slice) != 1 or not isinstance(expr.slice[0].slice, cst.Index) or not isinstance(expr.value, cst.Name):
            return False
        key = expr.slice[0].slice.value
        if not isinstance(key, cst.SimpleString):
            return False
        bindings = [v for how, v in self.names.assignments(self.names.name_of(expr.value), scope) if how == "="]
        if not any(isinstance(v, cst.Dict) for v in bindings):
            return False
        found: str | None = None
        seen = False
        for value in bindings:
            if isinstance(value, cst.Name) and value.value == "None":
                continue
            if not isinstance(value, cst.Dict):
                if self.taint(value, scope, depth + 1) is not None:
                    return False  # also bound to something the analysis knows as device data
                continue
            for element in value.elements:
                if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString) \
                        and element.key.evaluated_value == key.evaluated_value:
                    seen = True
                    found = stronger(found, self.taint(element.value, scope, depth + 1))
        return found if seen else False  # a key added later (`batch["y"] = y.cuda()`): the container says

    def _call_taint(self, call: cst.Call, scope: Scope, depth: int) -> str | None:
        use = self.calls.classify(call, scope)
        if use is not None:
            if use.kind in ("h2d", "alloc") and use.api.result_on_device or use.api.collective:
                return use.api.library
            return None
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("values", "items") and not call.args:
            return self.taint(func.value, scope, depth + 1)  # `sum(losses.values())`: the dict's tensors
        qualname = self.names.qualify(func)
        if qualname is not None:
            head = qualname.split(".")[0]
            if qualname in ARRAY_BUILTINS:
                return self._args_taint(call, scope, depth)  # abs(d), sum(d): the array's own __abs__, __add__
            if head == "numpy" and qualname not in NUMPY_CONVERSIONS and any(
                    self.taint(a.value, scope, depth + 1) == "cupy" for a in call.args) and \
                    not host_arm(self.names, call, scope):  # `else: np.fft.ifft(self.ref)` of `if self.CUDA:`
                return "cupy"  # np.sqrt(d), np.linalg.norm(d): CuPy answers NumPy's dispatch with a CuPy array
            if head in HOST_MODULES:
                return None
            if qualname == "torch.load":
                return None  # a checkpoint: a dict of state dicts and numbers (`ckpt["iter_num"]`), not an array
            found = self._args_taint(call, scope, depth)
            if found is None and head == "torch" and qualname.count(".") == 1 and qualname[6:7].islower() \
                    and qualname[6:] not in TORCH_NOT_TENSORS:
                return "torch" + MAYBE  # torch.cat(...), torch.where(...): a tensor, wherever its inputs live
            return found
        if isinstance(func, cst.Name):
            local = self.names.local_function(func.value, scope)
            if local is not None:
                found = self.return_taint(local)
                if found is None and "jax" in self.names.libraries and jitted(self.names, local):
                    return "jax"  # a compiled step (`@jax.jit`, `@nnx.jit`): its outputs stay on the device
                return found
        if self._model_output(func, scope):
            return "torch"
        if "jax" in self.names.libraries and (jax_step(func) or compiled(self.names, func, scope)):
            return "jax"
        if isinstance(func, cst.Attribute):
            if string_or_host_result(func, call):
                return None  # `m.load_state_dict(sd)` (key names), `s.split(",")` (strings)
            method = own_method(self.idx, func, scope)
            if method is not None:
                found = self.return_taint(method)  # `self.step(x)`: what the class's own method returns
                if found is not None:
                    return found
            receiver = self.taint(func.value, scope, depth + 1)
            if receiver is not None:
                return None if func.attr.value in HOST_METHODS or func.attr.value.startswith(PREDICATES) else receiver
            if func.attr.value in IO_METHODS:
                return None  # f.pread(buf) -> a future, fh.write(buf) -> a byte count: host objects
            return self._args_taint(call, scope, depth)
        callee = self.taint(func, scope, depth + 1) if isinstance(func, cst.Subscript) else None
        return callee or self._args_taint(call, scope, depth)

    def fed_to_model(self, name: str, scope: Scope) -> bool:
        """Is the name an argument of a model call in its scope (`logits = model(input_ids)`)?

        In a PyTorch file a model computes on the device its parameters live
        on, so what it is given is already there; the batch it was taken from
        (`input_ids = batch["input_ids"]`) came from the same loader.
        """
        if "torch" not in self.names.libraries:
            return False
        key = (id(scope), name)
        if self._fed is None:
            self._fed = set()
            for call in self.idx.calls:
                func = call.node.func
                callee = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(
                    func, cst.Name) else ""
                if not MODEL_NAME.match(callee):
                    continue
                for arg in call.node.args:
                    root = arg.value
                    while isinstance(root, (cst.Subscript, cst.Attribute)):
                        root = root.value
                    if isinstance(root, cst.Name):
                        self._fed.add((id(call.scope), self.names.name_of(root)))
            for scope_id, fed in list(self._fed):  # `x = batch["x"]` fed to the model: the batch holds device values
                scope_of = next((s for s in self.idx.scopes if id(s) == scope_id), None)
                for how, value in self.names.assignments(fed, scope_of) if scope_of is not None else ():
                    if how == "unpack" and isinstance(value, Unpack) and isinstance(value.source, (cst.Tuple, cst.List)):
                        elements = value.source.elements
                        value = elements[value.index[0]].value if value.index and value.index[0] < len(elements) else None
                    while isinstance(value, (cst.Subscript, cst.Attribute)):
                        value = value.value
                    if isinstance(value, cst.Name):
                        self._fed.add((scope_id, self.names.name_of(value)))
        return key in self._fed

    def _model_output(self, func: cst.BaseExpression, scope: Scope) -> bool:
        """`model(x)`, `self.model(x)`, `criterion(out, y)` in a PyTorch file: what the step computes, on the device.

        Training and inference code hands its models their inputs and takes
        their outputs and losses as they come; in a file that imports torch
        those live on the GPU, unless the model was moved to the CPU here.
        """
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if "torch" not in self.names.libraries or not MODEL_NAME.match(name):
            return False
        if isinstance(func, cst.Name):
            for how, value in self.names.assignments(name, scope):
                if how == "moved" and isinstance(value, cst.Call) and "cpu" in self.names.idx.module.code_for_node(value):
                    return False
        return True

    def _args_taint(self, call: cst.Call, scope: Scope, depth: int) -> str | None:
        """A function or module we do not know, applied to a device value, returns one (certain taints only)."""
        if not self.names.libraries:
            return None
        for arg in call.args:
            if "jax" in self.names.libraries and random_key(arg):
                continue  # JAX threads PRNG keys through builders and factories: `make_actor(actor_key, ...)`
            lib = self.taint(arg.value, scope, depth + 1)
            if lib is not None and not lib.endswith(MAYBE):
                return lib
        if isinstance(call.func, cst.Name):
            lib = self.taint(call.func, scope, depth + 1)  # calling a model that was moved to the device
            if lib is not None and not lib.endswith(MAYBE):
                return lib
        return None

    def _module_name(self, name: str, value: Any) -> str | None:
        """"cupy" for `xp = ndi.module()`, `ncp = get_module(backend)`: an array-agnostic library's array module
        (a name or attribute bound to anything but a module it imports, such as `xp = np`)."""
        if array_module_name(name) and not (isinstance(value, cst.BaseExpression) and self.names.qualify(value)):
            return "cupy"
        return None

    def _self_attribute(self, expr: cst.Attribute, scope: Scope) -> str | None:
        """What the methods of `scope`'s class store in `self.<attr>` (`expr` is `self.<attr>`), else None."""
        if not self.idx.self_stores and not self._buffers():
            return None
        owner = method_class(expr.value, scope)
        if owner is None:
            return None
        if not self._solving:
            self._solve()
        found = self._attrs.get((id(owner), expr.attr.value))
        if found is None and expr.attr.value in self._buffers().get(id(owner), ()):
            return "torch"  # a module buffer lives where the module does; its steps run on the GPU
        return found

    def _buffers(self) -> dict[int, set[str]]:
        if self._buffer_names is None:
            self._buffer_names = buffer_names(self.idx) if "torch" in self.names.libraries else {}
        return self._buffer_names

    def _owner(self, name: str, scope: Scope) -> Scope:
        s: Scope | None = scope
        while s is not None:
            if name in s.assigns:
                return s
            s = s.parent
        return scope

    def _names(self, scope: Scope) -> dict[str, str]:
        """The device names of a scope: from the file's solution (while solving, the values so far)."""
        self._solve()
        return self._taints.get(id(scope), {})

    def _solve(self) -> None:
        """Every scope's device names and every function's return, as one fixpoint over the file.

        Each pass evaluates every binding (and every `return`) against the
        previous pass's values, so a pass costs one walk over the file and no
        question recurses into another scope's unfinished answer; taints only
        grow (nothing < maybe < device), so a few passes settle it. Call
        classifications depend on device values (is this `.get()` a CuPy
        array's?), so they are forgotten after each pass and after the end.
        """
        if self._solved or self._solving:
            return
        self._solving = True
        try:
            for _ in range(12):
                changed = False
                self.calls.forget()
                for scope in self.idx.scopes:
                    table = self._taints.setdefault(id(scope), {})
                    for name, values in scope.assigns.items():
                        old = table.get(name)
                        best = old
                        if best is not None and not best.endswith(MAYBE):
                            continue
                        for how, value in values:
                            best = stronger(best, self._binding_taint(name, how, value, scope))
                            if best is not None and not best.endswith(MAYBE):
                                break
                        if best != old and best is not None:
                            table[name] = best
                            changed = True
                    if scope.kind == "function":
                        found = None
                        for value in scope.returns:
                            found = stronger(found, self.taint(value, scope))
                        if found != self._returns.get(id(scope)):
                            self._returns[id(scope)] = found
                            changed = True
                for method, attr, value in self.idx.self_stores:
                    assert method.parent is not None
                    key = (id(method.parent), attr)
                    old_attr = self._attrs.get(key)
                    if old_attr is not None and not old_attr.endswith(MAYBE):
                        continue
                    found = self._module_name(attr, value) or self.taint(value, method)  # `self.ncp = ...`
                    best = found if found is not None and not found.endswith(MAYBE) else old_attr  # surely only
                    if best != old_attr and best is not None:
                        self._attrs[key] = best
                        changed = True
                if not changed:
                    break
        finally:
            self._solving = False
            self._solved = True
            self.calls.forget()

    def _binding_taint(self, name: str, how: Binding, value: Any, scope: Scope) -> str | None:
        if how == "=" and self._module_name(name, value) or how == "import" and name in self.names.array_modules:
            return "cupy"  # `xp = ndi.module()`, `from aspire.numeric import xp`: an array module, meant for CuPy
        if how in ("=", "aug", "item", "moved") and isinstance(value, cst.BaseExpression):
            return self.taint(value, scope)
        if how in ("for", "unpack") and isinstance(value, Unpack):
            return self.unpacking.taint(value, scope)
        if how == "param" and isinstance(value, cst.Param):
            return self._param_taint(name, value, scope)
        return None

    def return_taint(self, function: Scope) -> str | None:
        """The taint of what the function returns (the fixpoint's answer)."""
        self._solve()
        return self._returns.get(id(function))

    def _param_taint(self, name: str, param: cst.Param, scope: Scope) -> str | None:
        if param.annotation is not None:
            qualname = self.names.qualify(param.annotation.annotation)
            lib = ANNOTATIONS.get(qualname or "") or local_record_lib(self.names, param.annotation.annotation, scope)
            if lib is None and self.handed:  # an array record of another file (`run.handed`)
                lib = handed_lib(self.handed, qualified_name(scope, self.idx.module_name), name, [])
            if lib is not None:
                return lib
        return self._param_from_calls(name, scope)

    def _param_from_calls(self, name: str, function: Scope) -> str | None:
        """A parameter every in-file call of the function gives a device value is one.

        A method's callers are the other methods of its class calling it on
        `self`; an input of a PyTorch module's `forward` is on the device.
        """
        node = function.node
        if not isinstance(node, cst.FunctionDef):
            return None
        if forward_input(self.names, function, name):
            return "torch"
        positional = positional_params(node)
        method = bool(positional) and positional[0] in ("self", "cls") and function.parent is not None \
            and function.parent.kind == "class"
        calls = method_calls(self.names, function) if method else self.names.calls_of(function)
        if method:
            positional = positional[1:]
        if not calls:
            return None if host_rebound(self.names.assignments(name, function), self.names) else handed_lib(
                self.handed, qualified_name(function, self.idx.module_name), name, positional)
        found: str | None = None
        for call in calls:
            arg = bound_arg(call.node, positional, name)
            if arg is None or not call.loops and host_when_reached(self, arg, call.scope, call.index, call.node):
                return None
            lib = self.taint(arg, call.scope)
            if lib is None or lib.endswith(MAYBE):
                return None
            found = lib
        return found

