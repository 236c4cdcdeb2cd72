"""Kernel signatures: which launch argument is In, Out, InOut or Owned.

OFF102, OFF201-OFF205 need to know how a kernel uses each parameter. The
signature comes from the source: an `@kernel` function's annotations
(`In`, `In[np.float32]`, `offload_core.InOut`) or a `RawKernel(...,
params={...})` / `params=[("y", InOut[...]), ...]` literal. Signatures are
plain frozen records so that a file's kernels can be cached and handed to
the files that import them (`from .kernels import daxpy`), which is how a
launch in one file is checked against a kernel defined in another.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from .names import Names
from .project import ACCESSES, KernelIndex, KernelParam, KernelSig
from .scopes import IndexedCall

Qualify = Callable[[cst.BaseExpression], "str | None"]


def access_of(annotation: cst.BaseExpression | None, qualify: Qualify) -> str | None:
    """`In`, `oc.InOut`, `In[np.float32]` -> the access name; anything else -> None (scalar)."""
    if annotation is None:
        return None
    if isinstance(annotation, cst.Subscript):
        annotation = annotation.value
    qualname = qualify(annotation)
    if qualname is None:
        return None
    head, _, last = qualname.rpartition(".")
    if last in ACCESSES and (head.split(".")[0] == "offload_core"):
        return last
    return None


def _decorated_kernel(node: cst.FunctionDef, qualify: Qualify) -> bool:
    for decorator in node.decorators:
        expr = decorator.decorator
        if isinstance(expr, cst.Call):
            expr = expr.func
        qualname = qualify(expr)
        if qualname is not None and qualname.split(".")[0] == "offload_core" and qualname.endswith(".kernel"):
            return True
    return False


def signature_of_def(node: cst.FunctionDef, module_name: str, qualify: Qualify) -> KernelSig | None:
    if not _decorated_kernel(node, qualify):
        return None
    p = node.params
    params = tuple(
        KernelParam(param.name.value, access_of(param.annotation.annotation if param.annotation else None, qualify))
        for param in (*p.posonly_params, *p.params, *p.kwonly_params)
    )
    return KernelSig(node.name.value, f"{module_name}.{node.name.value}", params)


def signature_of_rawkernel(name: str, call: cst.Call, module_name: str, qualify: Qualify) -> KernelSig | None:
    """`k = RawKernel(src, "k", params={"y": InOut[np.float64], ...})` with a literal spec."""
    qualname = qualify(call.func)
    if qualname is None or qualname.split(".")[0] != "offload_core" or not qualname.endswith(".RawKernel"):
        return None
    spec = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "params"), None)
    if spec is None and len(call.args) >= 3 and call.args[2].keyword is None:
        spec = call.args[2].value
    pairs: list[tuple[cst.BaseExpression, cst.BaseExpression]] = []
    if isinstance(spec, cst.Dict):
        for element in spec.elements:
            if not isinstance(element, cst.DictElement):
                return None
            pairs.append((element.key, element.value))
    elif isinstance(spec, (cst.List, cst.Tuple)):
        for element in spec.elements:
            value = element.value
            if not (isinstance(value, cst.Tuple) and len(value.elements) == 2):
                return None
            pairs.append((value.elements[0].value, value.elements[1].value))
    else:
        return None
    params = []
    for key, annotation in pairs:
        if not isinstance(key, cst.SimpleString):
            return None
        params.append(KernelParam(str(key.evaluated_value), access_of(annotation, qualify)))
    return KernelSig(name, f"{module_name}.{name}", tuple(params))


class Kernels:
    """The kernels one file defines (and exports) and the signatures of those it launches from other files.

    `needs` records every foreign kernel a launch looked up, with the digest
    of the signature seen (None: unknown), so that a cached result is
    linted again when that kernel's signature changes.
    """

    def __init__(self, names: Names, foreign: KernelIndex) -> None:
        self.names = names
        self.idx = names.idx
        self.foreign = foreign
        self.needs: dict[str, str | None] = {}
        self._local_kernels: dict[str, KernelSig] | None = None
        self._exports: tuple[KernelSig, ...] = ()

    def _kernels(self) -> dict[str, KernelSig]:
        if self._local_kernels is None:
            found: dict[str, KernelSig] = {}
            exports = []
            for node, scope in self.idx.functions:
                sig = signature_of_def(node, self.idx.module_name, self.names.qualify)
                if sig is not None:
                    found[node.name.value] = sig
                    if scope.parent is not None and scope.parent.kind == "module":
                        exports.append(sig)
            module_scope = self.idx.scopes[0]
            for name, values in module_scope.assigns.items():
                for how, value in values:
                    if how == "=" and isinstance(value, cst.Call):
                        sig = signature_of_rawkernel(name, value, self.idx.module_name, self.names.qualify)
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
        qualname = self.names.qualify(expr)
        if qualname is None or qualname.startswith("builtins."):
            return None
        sig = self.foreign.lookup(qualname)
        self.needs[qualname] = sig.digest() if sig is not None else None
        return sig

    def launch(self, call: IndexedCall) -> tuple[KernelSig | None, list[tuple[KernelParam | None, cst.Arg]]]:
        """An offload() call's kernel and its (array parameter, argument) pairs; parameter None when unknown."""
        args = call.node.args
        if not args or args[0].keyword is not None or args[0].star:
            return None, []
        sig = self.kernel(args[0].value)
        rest = tuple(args[1:])
        if sig is not None:
            pairs = sig.bind(rest)
            if pairs is not None:
                return sig, [(p, a) for p, a in pairs if p.is_array]
        return None, [(None, a) for a in rest if not a.star]
