"""Device arrays a project's types declare: record classes whose fields are arrays, and parameters typed with them.

JAX code passes its state as records (`@dataclass class State: board:
chex.Array`, a `NamedTuple` of `jax.Array`s), and the functions that read
it say so only in their annotations: `def render(self, state: State)`
in a viewer that draws `state.board[i, j]` cell by cell. Nothing in the
viewer's file makes `state`, so the device-value analysis cannot see that
its fields live on the device. A class whose annotated fields include a
device array type is summarised here as an array record; a parameter
annotated with one (in its own file, or through the project: `run.handed`)
is a device value of that library, and so is what it holds.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from .names import Names
from .scopes import ModuleIndex, Scope
from .valuewords import ANNOTATIONS, MAYBE

# Field types of JAX records besides `jax.Array`: chex's alias (arrays of either side, in practice the device's
# in a record JAX steps carry).
FIELD_ANNOTATIONS = {**ANNOTATIONS, "chex.Array": "jax", "chex.ArrayDevice": "jax"}

# Field types that say a record holds host objects as well (names, lists, callables): such a class is a
# configuration with arrays in it, not a record of arrays. A number (`step_count: int`) is a leaf like the rest.
HOST_FIELD_TYPES = frozenset({"str", "bytes", "list", "dict", "tuple", "set", "List", "Dict", "Tuple", "Set",
                              "Sequence", "Mapping", "Callable", "Iterable"})

ArrayClass = tuple[str, str]  # (class, library)
Annotated = tuple[str, str, str]  # (function, parameter, annotation's qualified name)


def field_lib(names: Names, node: cst.ClassDef) -> str | None:
    """The library of the device arrays a record class's annotated fields declare (`board: chex.Array`), if any.

    A class with fields of two libraries, or with none, declares nothing; a PyTorch tensor's annotation says
    nothing of where it lives and does not count."""
    if not isinstance(node.body, cst.IndentedBlock):
        return None
    found: set[str] = set()
    for statement in node.body.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                if _host_type(names, small.annotation.annotation):
                    return None  # `link_types: str`: a configuration with arrays in it, not a record of arrays
                lib = _annotation_lib(names, small.annotation.annotation)
                if lib is not None:
                    found.add(lib)
    return found.pop() if len(found) == 1 else None


def _host_type(names: Names, annotation: cst.BaseExpression) -> bool:
    """`str`, `Sequence[int]`, `dict`, `Callable[...]`: a field the host holds (a number is a leaf like an array)."""
    target = annotation.value if isinstance(annotation, cst.Subscript) else annotation
    qualname = names.qualify(target) if isinstance(target, (cst.Name, cst.Attribute)) else None
    return (qualname or "").rpartition(".")[2] in HOST_FIELD_TYPES and (qualname or "").split(".")[0] in (
        "builtins", "typing", "collections")


def array_classes(idx: ModuleIndex, names: Names, qualname: Callable[[Scope], str]) -> tuple[ArrayClass, ...]:
    """The classes of the file whose fields are device arrays, for the project's summary."""
    out = []
    for scope in idx.scopes:
        if scope.kind == "class" and isinstance(scope.node, cst.ClassDef):
            lib = field_lib(names, scope.node)
            if lib is not None:
                out.append((qualname(scope), lib))
    return tuple(out)


def annotated_params(idx: ModuleIndex, names: Names, qualname: Callable[[Scope], str]) -> tuple[Annotated, ...]:
    """(function, parameter, annotation) for every parameter annotated with a class the file imports: what the
    project matches against its array records."""
    out = []
    for node, scope in idx.functions:
        for param in (*node.params.posonly_params, *node.params.params, *node.params.kwonly_params):
            if param.annotation is None:
                continue
            target = _record_annotation(param.annotation.annotation)
            annotation = names.qualify(target) if target is not None else None
            if annotation is not None and annotation.split(".")[0] not in names.apis.modules:
                out.append((qualname(scope), param.name.value, annotation))
    return tuple(out)


def local_record_lib(names: Names, annotation: cst.BaseExpression, scope: Scope) -> str | None:
    """The library of an annotation naming an array record class defined in the same file (`state: State`)."""
    target = _record_annotation(annotation)
    if not isinstance(target, cst.Name):
        return None
    for how, value in names.assignments(target.value, scope):
        if how == "def" and isinstance(value, cst.ClassDef):
            return field_lib(names, value)
    return None


def _record_annotation(annotation: cst.BaseExpression) -> cst.BaseExpression | None:
    """`State`, `types.State`, and the `State` of `Optional[State]`."""
    if isinstance(annotation, cst.Subscript) and isinstance(annotation.value, (cst.Name, cst.Attribute)) and \
            (annotation.value.value if isinstance(annotation.value, cst.Name) else annotation.value.attr.value) \
            == "Optional" and len(annotation.slice) == 1 and isinstance(annotation.slice[0].slice, cst.Index):
        annotation = annotation.slice[0].slice.value
    return annotation if isinstance(annotation, (cst.Name, cst.Attribute)) else None


def _annotation_lib(names: Names, annotation: cst.BaseExpression) -> str | None:
    target = _record_annotation(annotation)
    if target is None:
        return None
    lib = FIELD_ANNOTATIONS.get(names.qualify(target) or "")
    return None if lib is None or lib.endswith(MAYBE) else lib
