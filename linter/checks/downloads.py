"""Downloads per iteration only to be summed or logged: OFF301 whatever the API.

`jax.device_get(m)`, `np.asarray(loss)`, `float(cost.mean().get())` in a
loop each wait for the device to read a value the host only adds up,
appends or prints; the read rules (`syncs`) judge `.item()` and `float()`
of a device value, this module the downloads that copy an array back for
the same purpose, and says which ones are metrics by how the value is
used and what the list it goes into is called.
"""

from __future__ import annotations

import re

import libcst as cst

from ..analysis.scopes import IndexedCall
from ..analysis.uses import UseFinder, path_to
from .file import CheckedFile
from .iteration import Iteration


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
    if purpose != "metric" and not kept_metric(statement, call):
        return False
    file.report("OFF301", call.node, api=api, where=it.where(file), advice=DOWNLOAD_ADVICE.get(
        library, "add it up on the device and copy the total back once per log interval"))
    return True


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


METRIC_NAME = re.compile(r"loss|acc|metric|score|err|correct|nll|ppl|perplex|psnr|ssim|reward|return", re.I)


def kept_metric(statement: cst.CSTNode, call: IndexedCall) -> bool:
    """`losses.append(np.asarray(loss))`: a downloaded array kept in a list is a metric when its names say so.

    A download appended per batch may be data the host needs after the loop
    (embeddings, predictions) or a number to average (a loss); the names of
    the list and of the value are what tells them apart in real code.
    """
    if not isinstance(statement, cst.Expr) or not isinstance(statement.value, cst.Call):
        return False
    func = statement.value.func
    if not isinstance(func, cst.Attribute) or func.attr.value not in ("append", "extend"):
        return False
    names = [func.value] + [a.value for a in call.node.args]
    words = [n.value if isinstance(n, cst.Name) else n.attr.value if isinstance(n, cst.Attribute) else "" for n in names]
    return any(METRIC_NAME.search(w) for w in words if w)


DOWNLOAD_ADVICE = {
    "jax": "keep the device results (a list, or a running sum) and `jax.device_get` them once per log interval",
    "cupy": "add it up on the device (a CuPy scalar) and copy it back once per log interval",
    "torch": "add it up on the device (`total += x.detach()`) and copy it back once per log interval",
}
