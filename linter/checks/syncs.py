"""Synchronisation in loops: OFF104 (avoidable sync per iteration), OFF301 (sync for a metric),
OFF302 (a device array read element by element).

Every sync in a loop is one of two things. A **wait** (`torch.cuda.synchronize()`,
`stream.synchronize()`, `x.block_until_ready()`) returns nothing; a **read**
(`.item()`, `.tolist()`, `float(d)`) brings a value to the host. Measured on
public code (docs/linter.md), most waits in loops are deliberate: they time
something (the loop reads a clock or an event's elapsed time), they are an
opt-in (`if args.sync_step:`, a test that does not change in the loop), or
they wait for a different device's or chunk's work on each iteration. Those
are left alone; the rest are OFF104.

A read is judged by where its value comes from and what it is for:

- an element of a device array iterated by the loop (`for v in d: int(v)`,
  `[t.item() for t in d]`, `d[i]` with a changing `i`): OFF302, one sync
  per element where one `.tolist()` before the loop does;
- a value that does not change in the loop: OFF104, read it once before;
- a value computed in the loop that is only summed, recorded or printed:
  OFF301, accumulate on the device and read it once per log interval;
- a value computed in the loop that decides control flow or a shape: the
  host needs it now, nothing is reported (option `control-flow` of OFF104
  reports it with advice to test every N iterations).

A read on a branch taken only when a changing value equals a constant
(`if step % log_every == 0`) is not per iteration, and neither is one in a
loop that runs other loops (once per epoch); both are left alone.
"""

from __future__ import annotations

import re

import libcst as cst

from ..analysis.reaching import host_before_loop, host_read
from ..analysis.parameters import root_name
from ..analysis.scopes import IndexedCall, Loop, Scope, Unpack
from ..analysis.uses import UseFinder, aborts, kept_metric, path_to
from .branches import CHECK_ADVICE
from .constants import once
from .downloads import metric_download
from .file import CheckedFile
from .iteration import Iteration, iteration_of, over_ranks
from .registry import check
from .returned import RETURNED_ADVICE, caller_keeps_metric, returned

# Clocks read around a sync that a timing loop needs (`s = datetime.datetime.now(); jax.block_until_ready(f())`).
TIMERS = frozenset({
    "time.time", "time.perf_counter", "time.monotonic", "time.process_time", "time.perf_counter_ns", "time.time_ns",
    "time.monotonic_ns", "timeit.default_timer", "cupy.cuda.get_elapsed_time", "cupyx.profiler.benchmark",
    "datetime.datetime.now", "datetime.datetime.utcnow",
})
TIMER_METHODS = frozenset({"elapsed_time", "get_elapsed_time", "elapsed", "tic", "toc"})
READ_METHODS = frozenset({"item", "tolist"})  # for tensors that may be on the device
#: functions of a one-off phase, where emptying the allocator's cache between layers or shards is the point
MEMORY_PHASE = re.compile(r"restore|checkpoint|save|quantiz|profile|benchmark|calibrat|export|convert|offload",
                          re.IGNORECASE)


@check("OFF104", "OFF301", "OFF302")
def syncs(file: CheckedFile) -> None:
    sem = file.sem
    conversions = frozenset(file.options("OFF104").get("conversions", ()))
    exits = {id(b.node.test): b.node for b in file.index.branches if isinstance(b.node, cst.If)}
    for call in file.index.calls:
        it = iteration_of(file, call)
        if it is None:
            continue
        read = _read(file, call, conversions)
        in_step = it.hot is not None or sem.functions.hot(call.scope) is not None
        if read is None and in_step:
            read = _tensor_read(file, call)
        if read is not None and host_read(sem.values, read[1], call.scope, call.index, call.node):
            continue  # `output = output.cpu()` earlier in the iteration: a read of host memory
        if read is not None and _on_the_way_out(file, call, exits):
            continue  # `print(loss.item()); sys.exit(1)`: runs once, when the run ends
        if read is not None:
            if it.loop is not None:
                _judge_read(file, call, it.loop, *read, in_step=in_step)
            else:
                _judge_read_per_call(file, call, it, *read)
            continue
        use = sem.calls.classify(call.node, call.scope)
        if use is not None and use.kind == "d2h" and use.data is not None and host_read(
                sem.values, use.data, call.scope, call.index, call.node):
            continue
        if use is not None and use.kind == "d2h" and use.api.blocking or _is_device_get(file, call):
            if metric_download(file, call, it, use.api.display if use is not None else "jax.device_get",
                                use.api.library if use is not None else "jax"):
                continue
        if use is not None and use.kind == "sync" and not use.api.collective and file.enabled("OFF104") and \
                _avoidable_wait(file, call, it):
            file.report("OFF104", call.node, api=use.api.display, where=it.where(file),
                        advice=use.api.advice or (
                            "synchronise once after the loop, where the host needs the results" if it.loop
                            else "synchronise where the host needs the results, not on every call"))


def _read(file: CheckedFile, call: IndexedCall, conversions: frozenset[str]) -> tuple[str, cst.BaseExpression] | None:
    """(what to call it, the device value read) for `.item()`/`.tolist()` or `float()` of a device value."""
    sem = file.sem
    node = call.node
    use = sem.calls.classify(node, call.scope)
    if use is not None:
        if use.kind == "sync" and use.api.returns == "host":  # a sync that hands back a value: .item(), .any()
            value = node.func.value if use.api.method is not None and isinstance(node.func, cst.Attribute) else use.data
            return (use.api.display, value) if value is not None else None
        return None
    if isinstance(node.func, cst.Attribute) and node.func.attr.value in READ_METHODS and not node.args:
        lib = sem.values.array_lib(node.func.value, call.scope)  # a tensor that may be on the device: `t.item()`
        return (f"{lib} .{node.func.attr.value}()", node.func.value) if lib is not None else None
    if isinstance(node.func, cst.Attribute) and node.func.attr.value == "extend" and len(node.args) == 1 \
            and not node.args[0].keyword and not node.args[0].star:
        value = node.args[0].value  # `losses.extend(loss_dev)`: the list takes the array's elements one by one
        lib = sem.values.device_lib(value, call.scope)
        return (f"list.extend of a {lib} array", value) if lib is not None else None
    qualname = sem.names.qualify(node.func)
    if qualname is None or not qualname.startswith("builtins."):
        return None
    name = qualname.split(".", 1)[1]
    if name not in conversions or len(node.args) != 1 or node.args[0].keyword is not None or node.args[0].star:
        return None
    value = node.args[0].value
    lib = sem.values.array_lib(value, call.scope)
    if lib is None:
        return None
    if isinstance(value, cst.Call) and _read(file, sem.names.call_at(value) or call, conversions) is not None:
        return None  # float(x.item()): the inner read is the sync
    return f"{name}() of a {lib} array", value


def _scalar(call: IndexedCall) -> bool:
    """Is the read one number (`.item()`, `float(x)`), not a whole array's values (`.tolist()`)?

    Appending a number to a list is recording a metric; extending the
    results with an array's values is collecting output the host needs.
    """
    func = call.node.func
    return not (isinstance(func, cst.Attribute) and func.attr.value == "tolist")


def _on_the_way_out(file: CheckedFile, call: IndexedCall, ifs: dict[int, cst.If]) -> bool:
    """Is the call in a branch that ends the program or raises (`if not ok: print(x.item()); sys.exit(1)`)?"""
    for test, taken in call.conds:
        node = ifs.get(id(test))
        if node is None:
            continue
        body = node.body if taken else node.orelse.body if isinstance(node.orelse, cst.Else) else None
        if body is not None and aborts(body, file.sem.names.qualify):
            return True
    return False


def _is_device_get(file: CheckedFile, call: IndexedCall) -> bool:
    return file.sem.names.qualify(call.node.func) == "jax.device_get"


def _tensor_read(file: CheckedFile, call: IndexedCall) -> tuple[str, cst.BaseExpression] | None:
    """`x.item()`/`x.tolist()` in a PyTorch file's per-step function, of anything not built by NumPy.

    A loss or a `forward` gets its tensors from its callers; nothing in the
    file says where they live, and in the step of a GPU model they live on
    the GPU. A value that comes from NumPy is a host array and is left alone.
    """
    node = call.node
    func = node.func
    if not file.sem.functions.torch or not isinstance(func, cst.Attribute) or node.args:
        return None
    if func.attr.value not in READ_METHODS or _from_numpy(file, func.value, call):
        return None
    hot = file.sem.functions.hot(call.scope)
    if hot is not None and not hot.device_kwargs and _from_star_kwargs(file, func.value, call.scope):
        return None  # `update(**kw)` reading `v.item()` while every caller hands it numbers
    return f"torch .{func.attr.value}()", func.value


def _from_star_kwargs(file: CheckedFile, expr: cst.BaseExpression, scope: Scope) -> bool:
    """Is `expr` an entry of its function's `**kwargs` (`for k, v in kwargs.items()`, `kwargs["loss"]`)?"""
    node = scope.node
    if not isinstance(node, cst.FunctionDef) or not isinstance(node.params.star_kwarg, cst.Param):
        return False
    star = node.params.star_kwarg.name.value
    root = root_name(expr)
    if root is None:
        return False
    if root.value == star:
        return True
    for how, value in file.sem.names.assignments(root.value, scope):
        source = value.source if isinstance(value, Unpack) else value if how == "=" else None
        if isinstance(source, cst.Call) and isinstance(source.func, cst.Attribute):
            source = source.func.value  # kwargs.items(), kwargs.get("loss")
        if isinstance(source, cst.Subscript):
            source = source.value
        if isinstance(source, cst.Name) and source.value == star:
            return True
    return False


def _from_numpy(file: CheckedFile, expr: cst.BaseExpression, call: IndexedCall) -> bool:
    """Does the receiver chain start at a NumPy call or a name bound to one?"""
    sem = file.sem
    while True:
        if isinstance(expr, cst.Call):
            qualname = sem.names.qualify(expr.func)
            if qualname is not None:
                return qualname.split(".")[0] == "numpy"
            if isinstance(expr.func, cst.Attribute):
                expr = expr.func.value
                continue
            return False
        if isinstance(expr, (cst.Attribute, cst.Subscript)):
            expr = expr.value
            continue
        if isinstance(expr, cst.Name):
            return sem.names.is_host_array(sem.names.name_of(expr), call.scope)
        return False


def _judge_read(file: CheckedFile, call: IndexedCall, loop: Loop, api: str, value: cst.BaseExpression,
                in_step: bool = False) -> None:
    """A read in a loop; `in_step`: the loop is in a function a step runs, where tensors live on the device."""
    sem = file.sem
    if sem.loops.rare_branch(call, loop) or over_ranks(file, loop) or once(call):
        return  # (a loop in `load_*`, `__init__`: once per object, not per step)
    element = element_source(file, call.scope, loop, value, in_step)
    if element is not None:
        if file.enabled("OFF302"):
            file.report("OFF302", call.node, api=api, array=element, loop_line=file.line(loop.node))
        return
    if sem.values.device_lib(value, call.scope) is None and not (in_step and sem.functions.torch) and \
            sem.values.array_lib(value, call.scope) is not None:
        return  # a tensor that may be on the host: only element-wise reads are worth saying
    if sem.loops.amortised(call, loop, file.index.loops):
        return  # once per outer iteration (an epoch), around inner loops that do the work
    if sem.loops.invariant_in(call, loop):
        if file.enabled("OFF104"):
            file.report("OFF104", call.node, api=api, loop_line=file.line(loop.node),
                       advice="nothing it reads changes in the loop, so hoist the read out of the loop")
        return
    statement = call.small or (call.stmts[-1] if call.stmts else None)
    if statement is None:
        return
    body = loop
    while body.kind == "comp" and body.parent is not None:
        body = body.parent  # `{k: v.item() for ...}`: what the statement loop does with the comprehension
    if api.startswith("list.extend"):  # the read is the recording itself: a metric when the names say so
        purpose = "metric" if kept_metric(statement, call) else "other"
    else:
        purpose = UseFinder(body.node, sem.names.qualify, kept=_scalar(call)).of_read(statement, call.node)
    if purpose == "metric" and _divisor(call) and sem.values.array_lib(value, call.scope) in ("cupy", "torch"):
        if file.enabled("OFF104"):  # `c /= float(n.sum())`: no metric, a conversion the division does not need
            file.report("OFF104", call.node, api=api, loop_line=file.line(loop.node),
                        advice="divide by the device value itself (drop the conversion): the quotient stays on "
                               "the device")
    elif purpose == "metric" and file.enabled("OFF301"):
        file.report("OFF301", call.node, api=api, loop_line=file.line(loop.node), advice=metric_advice(file, value, call))
    elif purpose == "check" and file.enabled("OFF104"):
        file.report("OFF104", call.node, api=api, loop_line=file.line(loop.node), advice=CHECK_ADVICE)
    elif purpose == "control" and file.enabled("OFF104") and file.options("OFF104").get("control-flow", False):
        file.report("OFF104", call.node, api=api, loop_line=file.line(loop.node),
                   advice="the value steers the loop; if that can wait, test it every N iterations")


def _judge_read_per_call(file: CheckedFile, call: IndexedCall, it: Iteration, api: str,
                         value: cst.BaseExpression) -> None:
    """A read in a function that runs once per iteration (a loss, a `forward`): the metric reads only.

    A tensor of unknown placement counts here: in a function a training or
    inference step runs, PyTorch tensors live where the model does.
    """
    sem = file.sem
    lib = sem.values.device_lib(value, call.scope) or sem.values.array_lib(value, call.scope)
    if lib is None and sem.functions.torch and api.startswith("torch ."):
        lib = "torch"  # `x.item()` in a loss: what `_tensor_read` took for a tensor
    if lib is None or (sem.values.device_lib(value, call.scope) is None and lib != "torch"):
        return
    statement = call.small or (call.stmts[-1] if call.stmts else None)
    if statement is None:
        return
    purpose = UseFinder(it.body, sem.names.qualify, kept=_scalar(call)).of_read(statement, call.node)
    handed_back = purpose == "other" and returned(statement, call.node, it.scope.returns) and \
        caller_keeps_metric(file, it, _scalar(call))  # `return correct.sum().item()`, and the calling loop adds it up (returned.py)
    if (purpose == "metric" or handed_back) and file.enabled("OFF301"):
        file.report("OFF301", call.node, api=api, where=it.where(file),
                    advice=RETURNED_ADVICE if handed_back else metric_advice(file, value, call))
    elif purpose == "check" and file.enabled("OFF104"):
        file.report("OFF104", call.node, api=api, where=it.where(file), advice=CHECK_ADVICE)


def metric_advice(file: CheckedFile, value: cst.BaseExpression, call: IndexedCall) -> str:
    """How to keep a metric on the device, in the terms of the library the value belongs to."""
    lib = file.sem.values.array_lib(value, call.scope) or ""
    if lib == "jax":
        return "keep the device results (a list, or a running sum) and `jax.device_get` them once per log interval"
    if lib == "cupy":
        return "add it up on the device (a CuPy scalar, `total += x`) and read it once per log interval"
    if lib == "numba":
        return "add it up on the device and copy the total back once per log interval"
    return "add it up on the device (`total += loss.detach()`) and read it once per log interval"


def _divisor(call: IndexedCall) -> bool:
    """Is the read the divisor of a division (`c /= float(n.sum())`, `a / u.sum().item()`)?"""
    statement = call.small
    if statement is None:
        return False
    path = path_to(statement, call.node)
    if not path or len(path) < 2:
        return False
    parent = path[-2]
    if isinstance(parent, cst.AugAssign) and isinstance(parent.operator, cst.DivideAssign):
        return parent.value is call.node
    return isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Divide) and \
        parent.right is call.node


def element_source(file: CheckedFile, scope: Scope, loop: Loop, value: cst.BaseExpression,
                    in_step: bool = False) -> str | None:
    """The device array `value` is one element of, when the loop walks that array (else None).

    `int(pos[i] * 2)`, `boxes[i, 0].item()`, `res.scores[k].item()`: an element
    reached through arithmetic or an attribute of the array's holder is still
    one element per iteration; in a per-step function (`in_step`) a PyTorch
    array need not be known to the analysis to be one.
    """
    sem = file.sem
    node = value
    while True:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and not node.args:
            node = node.func.value  # h.item(), h.squeeze()
        elif isinstance(node, cst.Attribute) and node.attr.value in ("data", "T"):
            node = node.value
        elif isinstance(node, cst.BinaryOperation):
            node = node.left if isinstance(node.left, cst.Subscript) else node.right
        else:
            break
    if isinstance(node, cst.Subscript) and isinstance(node.value, (cst.Name, cst.Attribute)):
        array = node.value
        root = array if isinstance(array, cst.Name) else None
        while root is None and isinstance(array, cst.Attribute):
            root = array.value if isinstance(array.value, cst.Name) else None
            array = array.value
        array = node.value
        if root is None:
            return None
        changed = sem.loops.changed_in(loop)
        index_changes = not all(sem.loops.expression_invariant(e.slice, loop, changed) for e in node.slice)
        known = sem.values.array_lib(array, scope) is not None or (in_step and sem.functions.torch)
        if index_changes and root.value not in changed and known and not host_before_loop(sem.values, array, loop):
            return file.code(array)
        return None
    if not isinstance(node, cst.Name):
        return None
    for how, bound in sem.names.assignments(sem.names.name_of(node), scope):
        if how != "for" or not isinstance(bound, Unpack) or not _iterates(loop, bound.source):
            continue
        source = _iterated_array(file, scope, bound, loop)
        if source is not None:
            return source
    return None


def _iterates(loop: Loop, source: cst.BaseExpression) -> bool:
    node = loop.node
    if isinstance(node, cst.For):
        return node.iter is source
    if isinstance(node, cst.CompFor):
        return node.iter is source
    return False


def _iterated_array(file: CheckedFile, scope: Scope, bound: Unpack, loop: Loop) -> str | None:
    sem = file.sem
    source = bound.source
    index = list(bound.index)
    while isinstance(source, cst.Call) and isinstance(source.func, cst.Name) and sem.names.qualify(source.func) in (
            "builtins.zip", "builtins.enumerate", "builtins.reversed", "builtins.list", "builtins.tuple"):
        args = [a.value for a in source.args if a.keyword is None and not a.star]
        if not args:
            return None
        if source.func.value == "zip" and index and 0 <= index[0] < len(args):
            source, index = args[index[0]], index[1:]
        elif source.func.value == "enumerate" and index and index[0] == 1:
            source, index = args[0], index[1:]
        elif source.func.value in ("reversed", "list", "tuple"):
            source = args[0]
        else:
            return None
    if sem.values.array_lib(source, scope) is None or host_before_loop(sem.values, source, loop):
        return None  # `f = np.asarray(f)` before `for v in f`: the loop walks the host copy
    return file.code(source)


def _avoidable_wait(file: CheckedFile, call: IndexedCall, it: Iteration) -> bool:
    """A wait that nothing in the loop needs: not for timing, not opted into, not per device or chunk."""
    sem = file.sem
    loop = it.loop
    if _memory_phase(file, call):
        return False
    if loop is None:  # a hot function: a wait there that does not time anything
        return not _measures_time(file, [c for c in file.index.calls if c.scope is it.scope])
    if sem.loops.rare_branch(call, loop) or sem.loops.guarded_by_flag(call, loop) or sem.loops.amortised(call, loop, file.index.loops):
        return False
    if _measures_time(file, loop.calls) or _pipeline(file, loop):
        return False
    func = call.node.func
    if isinstance(func, cst.Attribute) and sem.names.qualify(func) is None:
        if not sem.loops.expression_invariant(func.value, loop):
            return False  # chunk.ready.synchronize(): a different event or stream each iteration
    return True


def _memory_phase(file: CheckedFile, call: IndexedCall) -> bool:
    """`torch.cuda.empty_cache()` in a function that restores a checkpoint, quantises layer by layer or profiles
    ops: freeing memory between its steps is what it is for, not a cost of a training step."""
    if file.sem.names.qualify(call.node.func) != "torch.cuda.empty_cache":
        return False
    hot = file.sem.functions.hot(call.scope)
    if hot is not None and any(MEMORY_PHASE.search(name.rsplit(".", 1)[-1]) for name in (hot.holder, hot.via or "")):
        return True  # `gc_cuda()`, called from a loop in `restore_checkpoint`
    scope: Scope | None = call.scope
    while scope is not None and scope.kind != "module":
        if scope.kind == "function" and MEMORY_PHASE.search(scope.name):
            return True
        scope = scope.parent
    return False


def _pipeline(file: CheckedFile, loop: Loop) -> bool:
    """Does the loop wait on two or more streams (or events) of its own?

    Then it is a pipeline: copies in, compute and copies out run on streams
    of their own over double buffers, and each wait hands a buffer from one
    stage to the next (or to the host, which reads a pinned buffer next).
    Dropping one races the stages; tomocupy's and tike's conveyors, judged
    on public code (docs/linter.md), are all of this kind.
    """
    sem = file.sem
    receivers: set[str] = set()
    for other in loop.calls:
        func = other.node.func
        if not isinstance(func, cst.Attribute) or func.attr.value != "synchronize" or sem.names.qualify(func) is not None:
            continue
        use = sem.calls.classify(other.node, other.scope)
        if use is not None and use.kind == "sync":
            receivers.add(file.code(func.value))
    return len(receivers) >= 2


def _measures_time(file: CheckedFile, calls: list[IndexedCall]) -> bool:
    """Do these calls read a clock or an event's elapsed time? Then the waits among them exist to measure."""
    sem = file.sem
    for other in calls:
        func = other.node.func
        if sem.names.qualify(func) in TIMERS:
            return True
        if isinstance(func, cst.Attribute) and func.attr.value in TIMER_METHODS:
            return True
    return False



