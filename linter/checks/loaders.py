"""Data loaders whose batches reach the GPU without overlap: OFF109.

A PyTorch DataLoader without `pin_memory=True` hands out batches in
ordinary (pageable) host memory. Copying such a batch to the GPU goes
through a staging buffer at a fraction of the link's speed and always
blocks the host, so `non_blocking=True` cannot overlap it with compute.
The rule connects a loader to the loop that consumes it, in the same file:
the loader is bound to a name, and a `for` loop iterates that name
(directly, or through `enumerate`, `tqdm`, `zip`, `iter`), either in the
same scope or in a function of the file that receives the loader as an
argument; inside the loop the batch (the loop target) is copied to the
device, or the loop iterates the DataLoader call itself. A loader whose
`pin_memory` is an expression (a flag) or that is built with `**kwargs`
of unknown content is the user's choice and is not reported; a dict made in
the same scope with literal keys (`kw = dict(pin_memory=True)`) is read. A pinned
loader whose batches are copied with a plain `.to(device)` is reported at
the copy: PyTorch then still waits for the copy (a stream synchronisation
per batch), which `non_blocking=True` removes.
"""

from __future__ import annotations

import libcst as cst

from ..analysis.scopes import IndexedCall, Loop, Scope, Unpack
from ..findings import Edit
from .file import CheckedFile
from .registry import check

WRAPPERS = frozenset({"enumerate", "tqdm", "zip", "iter", "islice", "trange"})


@check("OFF109")
def loader_copies(file: CheckedFile) -> None:
    _with_loader(file)
    _mixed(file)


def _with_loader(file: CheckedFile) -> None:
    sem = file.sem
    for call in file.index.calls:
        qualname = sem.names.qualify(call.node.func) or ""
        if not (qualname.startswith("torch.") and qualname.endswith(".DataLoader")):
            continue
        pinned = _pinned(file, call)
        name = _bound_name(call)
        if pinned is None:
            continue
        for loop in file.index.loops:
            if loop.kind != "for" or not (_iterates_the_call(loop, call) if name is None
                                          else _consumes(file, loop, name, call.scope)):
                continue
            copies = _batch_copies(file, loop)
            if not copies:
                continue
            if not pinned:
                file.report("OFF109", call.node, _pin_fix(file, call), batches=_of_loader(file, call),
                           loop_line=file.line(loop.node), how="from pageable memory",
                           advice="pass pin_memory=True to the DataLoader and copy with .to(device, non_blocking=True)")
                break
            for copy in copies:  # pinned, but each copy still waits: `.to(device)` without non_blocking
                if not _non_blocking(copy.node):
                    file.report("OFF109", copy.node, _non_blocking_fix(file, copy), batches=_of_loader(file, call),
                               loop_line=file.line(loop.node), how="with a blocking copy from pinned memory",
                               advice="pass non_blocking=True, so the host queues the step while the copy runs")
            break


def _of_loader(file: CheckedFile, call: IndexedCall) -> str:
    line = file.line(call.node)
    return f"the batches of the DataLoader at line {file.line_label(line) if file.line_label is not None else line}"


def _mixed(file: CheckedFile) -> None:
    """A loop that copies one part of its batch with `non_blocking=True` and another part without.

    `imgs.to(device, non_blocking=True)` says the batch is pinned (a loader
    built in another file, `pin_memory=True`): the author meant the copies to
    overlap, and `targets.to(device)` beside it still waits for its copy
    (a stream synchronisation per batch), wherever the loader was made.
    """
    for loop in file.index.loops:
        if loop.kind != "for":
            continue
        copies = _batch_copies(file, loop)
        overlapped = [c for c in copies if _non_blocking(c.node)]
        if not overlapped:
            continue
        for copy in copies:
            if _non_blocking(copy.node) or file.reported("OFF109", copy.node) or \
                    file.sem.loops.rare_branch(copy, loop):
                continue
            func = copy.node.func
            part = file.code(func.value) if isinstance(func, cst.Attribute) else file.code(copy.node)
            line = file.line(overlapped[0].node)
            file.report("OFF109", copy.node, _non_blocking_fix(file, copy), batches=f"copies of `{part}` from the batch",
                        how=f"with a blocking copy while line {file.line_label(line) if file.line_label else line} "
                            "copies another part with non_blocking=True,", loop_line=file.line(loop.node),
                        advice="pass non_blocking=True here too, so the host queues the step while the copy runs")


def _pinned(file: CheckedFile, call: IndexedCall) -> bool | None:
    """True/False for a literal `pin_memory=` (also in a `**kwargs` dict made in the scope with literal keys),
    False when absent, None when an expression or an unknown `**kwargs` decides."""
    for arg in call.node.args:
        if arg.star == "**":
            known = _dict_pin(file, arg.value, call.scope)
            if known is None or known:
                return known
            continue
        if arg.keyword is not None and arg.keyword.value == "pin_memory":
            return _literal_bool(arg.value)
    return False


def _literal_bool(value: cst.BaseExpression) -> bool | None:
    if isinstance(value, cst.Name) and value.value in ("True", "False"):
        return value.value == "True"
    return None


def _dict_pin(file: CheckedFile, value: cst.BaseExpression, scope: Scope) -> bool | None:
    """`**kw` with `kw = dict(pin_memory=True, num_workers=3)` (or a literal dict of string keys) bound once in
    the scope: what it says of pin_memory (False when it does not name it); None when unknown."""
    if not isinstance(value, cst.Name):
        return None
    bindings = [(how, v) for how, v in file.sem.names.assignments(value.value, scope)
                if not (how == "param" and isinstance(v, cst.Param) and isinstance(v.default, cst.Name)
                        and v.default.value == "None")]  # `kw=None` then `if kw is None: kw = dict(...)`
    if len(bindings) != 1 or bindings[0][0] != "=" or _mutated(file, value.value, scope):
        return None
    made = bindings[0][1]
    if isinstance(made, cst.Call) and isinstance(made.func, cst.Name) and made.func.value == "dict":
        if any(a.star for a in made.args):
            return None
        for a in made.args:
            if a.keyword is not None and a.keyword.value == "pin_memory":
                return _literal_bool(a.value)
        return False
    if isinstance(made, cst.Dict):
        for element in made.elements:
            if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
                return None
            if element.key.evaluated_value == "pin_memory":
                return _literal_bool(element.value)
        return False
    return None


def _mutated(file: CheckedFile, name: str, scope: Scope) -> bool:
    """`kw.update(cuda_kwargs)`, `kw["pin_memory"] = flag`: the dict changes after it is made."""
    for call in file.index.calls:
        func = call.node.func
        if call.scope is scope and isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and \
                func.value.value == name and func.attr.value in ("update", "setdefault", "__setitem__", "pop"):
            return True
    return any(sub.store and sub.scope is scope and isinstance(sub.node, cst.Subscript) and
               isinstance(sub.node.value, cst.Name) and sub.node.value.value == name for sub in file.index.subscripts)


def _iterates_the_call(loop: Loop, call: IndexedCall) -> bool:
    """`for images, labels in DataLoader(...)`: the loop iterates the loader itself (through wrappers)."""
    node = loop.node.iter if isinstance(loop.node, cst.For) else None
    while isinstance(node, cst.Call) and node is not call.node and isinstance(node.func, (cst.Name, cst.Attribute)) \
            and node.args:
        func = node.func.value if isinstance(node.func, cst.Name) else node.func.attr.value
        if func not in WRAPPERS:
            return False
        node = node.args[0].value
    return node is call.node and loop.scope is call.scope


def _bound_name(call: IndexedCall) -> str | None:
    statement = call.small
    if isinstance(statement, (cst.Assign, cst.AnnAssign)) and statement.value is call.node:
        targets = [t.target for t in statement.targets] if isinstance(statement, cst.Assign) else [statement.target]
        if len(targets) == 1 and isinstance(targets[0], cst.Name):
            return targets[0].value
    return None


def _iterated_name(loop: Loop) -> cst.Name | None:
    node = loop.node.iter if isinstance(loop.node, cst.For) else None
    while isinstance(node, cst.Call) and isinstance(node.func, (cst.Name, cst.Attribute)) and node.args:
        func = node.func.value if isinstance(node.func, cst.Name) else node.func.attr.value
        if func not in WRAPPERS:
            return None
        node = node.args[0].value
    return node if isinstance(node, cst.Name) else None


def _consumes(file: CheckedFile, loop: Loop, name: str, scope: Scope) -> bool:
    """Does the loop iterate the loader bound to `name` in `scope`?"""
    iterated = _iterated_name(loop)
    if iterated is None:
        return False
    if loop.scope is scope or _nested_in(loop.scope, scope):
        return iterated.value == name and not (loop.scope is not scope and iterated.value in loop.scope.assigns)
    # a function of the file that receives the loader: every call passing `name` for that parameter
    function = loop.scope
    param = iterated.value
    if param not in function.params or not isinstance(function.node, cst.FunctionDef):
        return False
    positional = [p.name.value for p in (*function.node.params.posonly_params, *function.node.params.params)]
    for call in file.sem.names.calls_of(function):
        for k, arg in enumerate(call.node.args):
            hit = (arg.keyword is not None and arg.keyword.value == param) or (
                arg.keyword is None and not arg.star and k < len(positional) and positional[k] == param)
            if hit and isinstance(arg.value, cst.Name) and arg.value.value == name and call.scope is scope:
                return True
    return False


def _nested_in(inner: Scope, outer: Scope) -> bool:
    s = inner.parent
    while s is not None:
        if s is outer:
            return True
        s = s.parent
    return False


def _batch_copies(file: CheckedFile, loop: Loop) -> list[IndexedCall]:
    """The host->device copies, inside the loop, of what the loop target holds (the batch)."""
    sem = file.sem
    targets = {name for name, values in loop.scope.assigns.items()
               for how, value in values if how == "for" and isinstance(value, Unpack)
               and isinstance(loop.node, cst.For) and value.source is loop.node.iter}
    out: list[IndexedCall] = []
    for call in loop.calls if targets else ():
        use = sem.calls.classify(call.node, call.scope)
        if use is None or use.kind != "h2d" or use.api.library != "torch" or use.data is None:
            continue
        root = use.data
        while isinstance(root, (cst.Subscript, cst.Attribute)):
            root = root.value
        if isinstance(root, cst.Name) and root.value in targets:
            out.append(call)
    return out


def _non_blocking(call: cst.Call) -> bool:
    """`non_blocking=` given (True, or a flag: the author chose)."""
    return any(a.keyword is not None and a.keyword.value in ("non_blocking", "async") for a in call.args) or any(
        a.star == "**" for a in call.args)


def _non_blocking_fix(file: CheckedFile, call: IndexedCall):  # type: ignore[no-untyped-def]
    node = call.node
    start, end = file.span(node)
    close = file.source.rfind(")", start, end)
    if close < 0:
        return None
    text = ", non_blocking=True" if node.args else "non_blocking=True"
    return file.fix("Copy with non_blocking=True", "unsafe", [Edit(close, close, text)])


def _pin_fix(file: CheckedFile, call: IndexedCall):  # type: ignore[no-untyped-def]
    node = call.node
    if not node.args:
        return None
    last = node.args[-1]
    start, end = file.span(last.value)
    return file.fix("Add pin_memory=True", "unsafe", [Edit(end, end, ", pin_memory=True")])
