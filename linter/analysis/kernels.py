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

from .project import ACCESSES, KernelParam, KernelSig


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
