"""Downloads per iteration only to be summed or logged: OFF301 whatever the API.

`jax.device_get(m)`, `np.asarray(loss)`, `float(cost.mean().get())` in a
loop each wait for the device to read a value the host only adds up,
appends or prints; the read rules (`syncs`) judge `.item()` and `float()`
of a device value, this module the downloads that copy an array back for
the same purpose, and says which ones are metrics by how the value is
used and what the list it goes into is called.
"""

from __future__ import annotations

import libcst as cst

from ..analysis.children import children
from ..analysis.loops import walk
from ..analysis.scopes import IndexedCall, Loop
from ..analysis.uses import UseFinder, kept_metric, path_to
from .file import CheckedFile
from .iteration import Iteration
from .returned import RETURNED_ADVICE, caller_keeps_metric, returned


def metric_download(file: CheckedFile, call: IndexedCall, it: Iteration, api: str, library: str) -> bool:
    """A download per iteration only to be summed or logged (`jax.device_get(m)`, `np.asarray(x)`): OFF301.

    JAX dispatches asynchronously; a download blocks the host until the
    value exists, so the next step cannot be queued meanwhile, and so with
    every library whose copies back wait. A download the host goes on to
    use (an argument of other work, kept in a list for after the loop) is a
    copy, the copy rules' business; only the metric use is said here.
    """
    if not file.enabled("OFF301") or (it.loop is not None and file.sem.loops.rare_branch(call, it.loop)):
        return False
    if it.loop is not None and file.sem.loops.amortised(call, it.loop, file.index.loops):
        return False  # once per outer iteration, around inner loops of whole steps
    statement = call.small or (call.stmts[-1] if call.stmts else None)
    if statement is None:
        return False
    if _uploaded_again(file, statement, call):
        return False  # `x.cpu().to(device)`: a round trip (OFF103), not a read for a metric
    kept = _converted_to_number(file, statement, call)
    purpose = UseFinder(it.body, file.sem.names.qualify, kept=kept).of_read(statement, call.node)
    if purpose == "metric" or kept_metric(statement, call):
        advice = DOWNLOAD_ADVICE.get(library, "add it up on the device and copy the total back once per log interval")
    elif it.loop is None and returned(statement, call.node, it.scope.returns) and caller_keeps_metric(file, it, kept) \
            and not _copy_helper(file, it):
        advice = RETURNED_DOWNLOAD_ADVICE.get(library, RETURNED_ADVICE)  # `return jax.device_get(m)`, kept by the loop
    elif it.loop is not None and (branch := _used_only_every_n(file, statement, call, it.loop)) is not None:
        advice = f"only the branch at line {file.line(branch)}, taken every N iterations, uses it: copy it there"
    else:
        return False
    file.report("OFF301", call.node, api=api, where=it.where(file), advice=advice)
    return True


def _used_only_every_n(file: CheckedFile, statement: cst.CSTNode, call: IndexedCall, loop: Loop) -> cst.If | None:
    """`sample = np.asarray(batch["image"][0])` every step, read only under `if step % log_every == 0:`.

    The download waits on every iteration for a value the loop uses every N; the branch that uses it (the
    first such) is returned, None when any use is outside a rare branch or there is none.
    """
    if not isinstance(statement, cst.Assign) or len(statement.targets) != 1 or statement.value is not call.node:
        return None
    target = statement.targets[0].target
    if not isinstance(target, cst.Name) or not isinstance(loop.node, (cst.For, cst.While)):
        return None
    outer = call.conds[:loop.cond_depth]
    branches: list[cst.If] = []

    def uses(node: cst.CSTNode, conds: tuple[tuple[cst.BaseExpression, bool], ...], branch: cst.If | None) -> bool:
        """False when the name is read where the iteration is not rare; else collect the branches reading it."""
        if node is statement or isinstance(node, cst.SimpleStatementLine) and statement in node.body:
            return True  # the download itself
        if isinstance(node, cst.If):
            if _reads(node.test, target.value) and not file.sem.loops.rare_conds(outer + conds, loop):
                return False
            inner = branch or node
            ok = all(uses(n, conds + ((node.test, True),), inner) for n in node.body.body)
            orelse = node.orelse
            if isinstance(orelse, cst.Else):
                return ok and all(uses(n, conds + ((node.test, False),), inner) for n in orelse.body.body)
            return ok and (orelse is None or uses(orelse, conds + ((node.test, False),), inner))
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseSmallStatement)):
            if not _reads(node, target.value):
                return True
            if not conds or not file.sem.loops.rare_conds(outer + conds, loop):
                return False
            branches.append(branch)  # type: ignore[arg-type]
            return True
        return all(uses(n, conds, branch) for n in children(node))

    body = loop.node.body
    if not all(uses(n, (), None) for n in body.body) or not branches:  # type: ignore[union-attr]
        return None
    return branches[0]


def _reads(node: cst.CSTNode, name: str) -> bool:
    """Does `node` load `name`, not only bind or delete it (`a, name = f()`, `del name`)?"""
    bound: set[int] = set()
    for n in walk(node):
        targets: list[cst.CSTNode] = []
        if isinstance(n, cst.Assign):
            targets = [t.target for t in n.targets]
        elif isinstance(n, cst.AnnAssign):  # an AugAssign reads its target
            targets = [n.target]
        elif isinstance(n, cst.Del):
            targets = [n.target]
        for t in targets:
            bound.update(id(m) for m in walk(t) if isinstance(m, cst.Name))
    return any(isinstance(n, cst.Name) and n.value == name and id(n) not in bound for n in walk(node))


def _copy_helper(file: CheckedFile, it: Iteration) -> bool:
    """Is the function a copy helper (`analysis.copyhelpers`) called from a loop of another file? The runner tells
    that file of it, and each call is judged there, where it is made, as the download it is."""
    functions = file.sem.functions
    if it.hot is None or it.hot.path == file.path:
        return False
    me = functions.qualname(it.scope)
    return any(h.function == me for h in functions.summary().copy_helpers)


def _converted_to_number(file: CheckedFile, statement: cst.CSTNode, call: IndexedCall) -> bool:
    """`float(cost.mean().get())`: the download becomes one Python number, which a list keeps as a record.

    An array downloaded and appended may be data the host uses after the
    loop; a number made of it is a value to average or log.
    """
    path = path_to(statement, call.node)
    if not path or len(path) < 3 or not isinstance(path[-3], cst.Call):
        return False
    outer = path[-3]
    return (len(outer.args) == 1 and outer.args[0].value is call.node
            and file.sem.names.qualify(outer.func) in ("builtins.float", "builtins.int", "builtins.complex"))


def _uploaded_again(file: CheckedFile, statement: cst.CSTNode, call: IndexedCall) -> bool:
    """Is the download the data of an upload around it (`x.cpu().to(device)`, `x.type(torch.FloatTensor).cuda()`)?"""
    path = path_to(statement, call.node)
    if not path or len(path) < 3 or not isinstance(path[-2], cst.Attribute) or not isinstance(path[-3], cst.Call):
        return False
    use = file.sem.calls.classify(path[-3], call.scope)
    return use is not None and use.kind == "h2d"


RETURNED_DOWNLOAD_ADVICE = {
    "jax": "return the device value instead; the calling loop can keep the device results and `jax.device_get` "
           "them once per log interval",
    "cupy": "return the device value instead and add it up on the device in the calling loop, copying the total "
            "back once",
}

DOWNLOAD_ADVICE = {
    "jax": "keep the device results (a list, or a running sum) and `jax.device_get` them once per log interval",
    "cupy": "add it up on the device (a CuPy scalar) and copy it back once per log interval",
    "torch": "add it up on the device (`total += x.detach()`) and copy it back once per log interval",
}
