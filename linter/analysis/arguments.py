"""What a file hands the project's functions: the device values it passes them, argument by argument.

A helper in one file (`def clip(boxes, size)`, `def soft_thresh(lamda, x)`)
is called with device arrays from a loop in another; inside the helper its
parameters are plain names that nothing binds, and the device-value
analysis of its own file cannot know what they hold. Each file therefore
records, for every call of a function it can name (`Functions.callee`),
which arguments are surely on the device and which are surely host values
(a number, a string, a NumPy result): `(callee, parameter, library)`, the
parameter written as its position at the call (`"0"`, after `self` for a
method) or its keyword, and `HOST` as the library of a host value. The
project joins the records (`linter.run.handed`): a parameter some call
gives a device value and no call gives a host value is a device value in
the function's own file, which is linted again knowing it.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Protocol

import libcst as cst

from .names import Names
from .reaching import Taints
from .scopes import IndexedCall, ModuleIndex, Scope
from .valuewords import MAYBE, NUMPY_CONVERSIONS

HOST = "host"  # the library written for an argument that is surely a host value
class Values(Taints, Protocol):
    """What this module needs of `values.DeviceValues`."""

    def surely_device(self, expr: cst.BaseExpression, scope: Scope) -> bool: ...


DeviceArg = tuple[str, str, str]  # (callee, parameter: position at the call or keyword, library or HOST)

_LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


def device_args(idx: ModuleIndex, names: Names, values: Values,
                callee: Callable[[IndexedCall], str | None]) -> tuple[DeviceArg, ...]:
    """Every (callee, parameter, library) this file's calls of nameable functions pass a device or host value."""
    out: set[DeviceArg] = set()
    for call in idx.calls:
        args = call.node.args
        if not args or any(a.star for a in args):
            continue  # `f(*batch)`: which parameter gets what is not known here
        target = callee(call)
        if target is None:
            continue
        position = 0
        for arg in args:
            key = arg.keyword.value if arg.keyword is not None else str(position)
            if arg.keyword is None:
                position += 1
            lib = _side(arg.value, call, names, values)
            if lib is not None:
                out.add((target, key, lib))
    return tuple(sorted(out))


def _side(value: cst.BaseExpression, call: IndexedCall, names: Names, values: Values) -> str | None:
    if isinstance(value, _LITERALS) or isinstance(value, cst.Name) and value.value in ("None", "True", "False"):
        return HOST
    if isinstance(value, cst.UnaryOperation) and isinstance(value.expression, (cst.Integer, cst.Float)):
        return HOST  # `-1`
    if isinstance(value, cst.Name) and names.is_host_array(value.value, call.scope):
        return HOST
    if isinstance(value, cst.Call) and (names.qualify(value.func) or "").split(".")[0] == "numpy":
        return HOST  # `normalise(np.ones(3))`
    if isinstance(value, cst.Attribute):
        return None  # `self.num_classes` of a module moved to the device: the analysis cannot tell an int from an array
    if isinstance(value, cst.Name) and not values.surely_device(value, call.scope):
        return None  # one binding on the device (`x = x.cuda()` of a parameter) is not what every call passes
    lib = values.taint(value, call.scope)
    if lib is None or lib.endswith(MAYBE):
        return None
    return lib


def handed_lib(handed: Mapping[str, Mapping[str, str]], function: str, name: str, positional: list[str]) -> str | None:
    """The library of the device arrays the project's files pass parameter `name` of `function`, if any.

    `positional`: the function's positional parameters, `self` left out, as its callers count them.
    """
    keys = handed.get(function)
    if not keys:
        return None
    found = keys.get(name)
    if found is None and name in positional:
        found = keys.get(str(positional.index(name)))
    return found


def host_rebound(bindings: Iterable[tuple[str, object]], names: Names) -> bool:
    """Does the function turn the parameter into a host value itself (`image = image.cpu().numpy()`,
    `x = np.asarray(x)`)? Then what callers hand it says nothing of its later uses (the analysis is not
    flow-sensitive)."""
    for how, value in bindings:
        if how != "=" or not isinstance(value, cst.Call):
            continue
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value in _DOWNLOADS:
            return True
        qualname = names.qualify(func) or ""
        if qualname in NUMPY_CONVERSIONS or qualname.endswith(".asnumpy"):
            return True
    return False


_DOWNLOADS = frozenset({"cpu", "numpy", "get", "tolist", "item", "asnumpy"})
