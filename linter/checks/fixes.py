"""The fixes the checks offer, as text edits: hoisting a copy (OFF101), wrapping a loop in a region (OFF102),
creating on the device (OFF105).

Fixes are text edits on the original source rather than rewritten trees:
edits from several findings combine without re-walking the tree, untouched
code keeps its exact bytes, and the cache can store them. Each fix is built
from node positions and LibCST's code generation of the nodes it moves, so
comments, strings and parentheses inside them travel unchanged. Wrapping a
loop re-indents its lines, except the continuation lines of multi-line
strings, whose contents must not change.

A fix is only offered where it is mechanically sound; whether it preserves
behaviour is the `safety` (hoisting out of a `while` runs the copy even when
the loop runs zero times, so it is unsafe). Applying them is
`outputs.applying`'s part.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from ..analysis.children import visit
from ..findings import Edit, Fix

if TYPE_CHECKING:
    from ..analysis.calls import Classified
    from ..analysis.scopes import IndexedCall, Loop
    from .file import CheckedFile

_UNSAFE_CREATORS = frozenset({"arange", "linspace", "hann_window", "hamming_window", "blackman_window",
                               "bartlett_window", "kaiser_window"})


def fresh_name(file: CheckedFile, base: str) -> str:
    taken = file.index.names
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def _loop_chain_ok(call: IndexedCall, loop: Loop) -> bool:
    """The call's statement sits in `loop`'s body through nothing but nested loops."""
    stmts = call.stmts
    if loop.stmt_depth < 1 or len(stmts) <= loop.stmt_depth or stmts[loop.stmt_depth - 1] is not loop.node:
        return False
    if not isinstance(stmts[-1], cst.SimpleStatementLine):
        return False
    return all(isinstance(s, (cst.For, cst.While)) for s in stmts[loop.stmt_depth:-1])


def hoist_fix(file: CheckedFile, call: IndexedCall, use: Classified) -> Fix | None:
    """Move a loop-invariant copy above the outermost loop it is invariant in."""
    sem = file.sem
    loops = list(call.loops)
    i = len(loops) - 1
    anchor: cst.CSTNode | None = None
    while i >= 0 and loops[i].kind == "comp":
        if not sem.loops.invariant_in(call, loops[i]) or len(call.withs) != loops[i].with_depth:
            return None
        i -= 1
    if i < len(loops) - 1:
        if not call.stmts or not isinstance(call.stmts[-1], cst.SimpleStatementLine):
            return None
        anchor = call.stmts[-1]
    outer: Loop | None = None
    while i >= 0:
        loop = loops[i]
        if not (sem.loops.invariant_in(call, loop) and len(call.withs) == loop.with_depth and _loop_chain_ok(call, loop)):
            break
        outer, anchor = loop, loop.node
        i -= 1
    if anchor is None:
        return None
    indent = file.indent_of(anchor)
    insert_at = file.offset(file.range(anchor).start.line, 0)
    statement = call.stmts[-1] if call.stmts else None
    small = call.small
    if (
        outer is not None
        and isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(small, cst.Assign)
        and small.value is call.node
        and len(small.targets) == 1
        and isinstance(small.targets[0].target, cst.Name)
        and _bound_once(file, call, outer, small.targets[0].target.value)
    ):
        start, end = file.line_span(statement)
        start = file.offset(file.range(statement).start.line - len(statement.leading_lines), 0)
        comments = "".join(f"{indent}{line.comment.value}{file.newline}" for line in statement.leading_lines if line.comment)
        edits = [Edit(insert_at, insert_at, f"{comments}{indent}{file.code(small)}{file.newline}"), Edit(start, end, "")]
        parent = call.stmts[-2]
        body = getattr(parent, "body", None)
        if isinstance(body, cst.IndentedBlock) and len(body.body) == 1:
            edits[1] = Edit(start, end, f"{file.indent_of(statement)}pass{file.newline}")
        where = "above the loop"
    else:
        data = use.data
        base = data.value if isinstance(data, cst.Name) else "hoisted"
        name = fresh_name(file, f"{base}_{'dev' if use.kind == 'h2d' else 'host'}")
        start, end = file.span(call.node)
        edits = [Edit(insert_at, insert_at, f"{indent}{name} = {file.code(call.node)}{file.newline}"), Edit(start, end, name)]
        where = f"into `{name}` above the {'loop' if outer is not None else 'statement'}"
    return file.fix(f"Hoist {use.api.display} {where}", "unsafe", edits)


def _bound_once(file: CheckedFile, call: IndexedCall, loop: Loop, name: str) -> bool:
    events = loop.scope.events
    binds = [e for e in events[loop.start:loop.end] if e.name == name and e.kind in ("bind", "aug", "del", "store")]
    read_before = any(e.kind == "load" and e.name == name for e in events[loop.start:call.index])
    return len(binds) == 1 and not read_before


def _with_arg(call: cst.Call, keyword: str, value: cst.BaseExpression) -> cst.Call:
    equal = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
    args = list(call.args)
    args.append(cst.Arg(value=value, keyword=cst.Name(keyword), equal=equal))
    return call.with_changes(args=args)


def device_create_fix(
    file: CheckedFile, call: IndexedCall, use: Classified, inner: cst.Call, creator: str, inner_lib: str,
    safety: str | None = None,
) -> tuple[Fix | None, str]:
    """`cp.asarray(np.zeros(n))` -> `cp.zeros(n)`; `torch.zeros(n).cuda()` -> `torch.zeros(n, device="cuda")`.

    `safety` overrides the creator's own (random draws: the device generator gives other numbers).
    """
    sem = file.sem
    node = call.node
    safety = safety or ("unsafe" if creator in _UNSAFE_CREATORS else "safe")
    api = use.api
    if inner_lib == "numpy":
        namespace = api.device_namespace
        func = node.func
        if (
            namespace is not None
            and isinstance(func, cst.Attribute)
            and sem.names.qualify(func.value) == namespace
            and len(node.args) == 1
            and node.args[0].keyword is None
        ):
            new = inner.with_changes(func=cst.Attribute(value=func.value, attr=cst.Name(creator)))
            start, end = file.span(node)
            text = file.code(new)
            return file.fix(f"Create with {file.code(func.value)}.{creator}", safety, [Edit(start, end, text)]), (
                f"{file.code(func.value)}.{creator}(...)"
            )
        if api.library == "jax":
            return None, f"jax.numpy.{creator}(...)"
        if api.library == "numba":
            # np.empty(shape, dtype) and cuda.device_array(shape, dtype) take the same arguments
            target = "device_array" if creator == "empty" else "device_array_like"
            if isinstance(func, cst.Attribute) and len(node.args) == 1 and node.args[0].keyword is None:
                new = inner.with_changes(func=cst.Attribute(value=func.value, attr=cst.Name(target)))
                start, end = file.span(node)
                title = f"Create with {file.code(func.value)}.{target}"
                return file.fix(title, "safe", [Edit(start, end, file.code(new))]), f"{file.code(func.value)}.{target}(...)"
            return None, f"numba.cuda.{target}(...)"
        return None, f"{namespace or api.library}.{creator}(...)"
    # torch: a host factory followed by .cuda() / .to(device)
    if any(a.keyword is not None and a.keyword.value == "device" for a in inner.args):
        return None, f"{creator}(..., device=...)"
    method = node.func.attr.value if isinstance(node.func, cst.Attribute) else ""
    device: cst.BaseExpression | None = None
    if method == "cuda" and not node.args:
        device = cst.SimpleString('"cuda"')
    elif method == "to" and len(node.args) == 1 and node.args[0].keyword is None:
        device = node.args[0].value
    elif method == "to" and len(node.args) == 1 and node.args[0].keyword is not None and node.args[0].keyword.value == "device":
        device = node.args[0].value
    head = file.code(inner.func)
    if device is None:
        return None, f"{head}(..., device=...)"
    if sem.values.array_lib(device, call.scope) is not None and not _is_device_attr(device):
        # `.to(other)` takes other's device and dtype: say so, and leave the rewrite to the user
        other = file.code(device)
        return None, f"{head}(..., device={other}.device, dtype={other}.dtype)"
    new = _with_arg(inner, "device", device)
    start, end = file.span(node)
    return file.fix(f"Create with {head}(..., device={file.code(device)})", safety, [Edit(start, end, file.code(new))]), (
        f"{head}(..., device={file.code(device)})"
    )


def _is_device_attr(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Attribute) and expr.attr.value == "device"


def _string_continuations(file: CheckedFile, node: cst.CSTNode) -> set[int]:
    """Lines inside `node` that continue a multi-line string (they must keep their indentation)."""
    lines: set[int] = set()

    class Strings(cst.CSTVisitor):
        def visit_SimpleString(self, n: cst.SimpleString) -> bool:
            r = file.range(n)
            lines.update(range(r.start.line + 1, r.end.line + 1))
            return False

        def visit_FormattedString(self, n: cst.FormattedString) -> bool:
            r = file.range(n)
            lines.update(range(r.start.line + 1, r.end.line + 1))
            return False

    visit(node, Strings())
    return lines


def wrap_fix(file: CheckedFile, loop_node: cst.CSTNode, region_call: str, title: str) -> Fix:
    """Put `with region(...):` around a statement loop and indent the loop one level."""
    unit = file.module.default_indent
    indent = file.indent_of(loop_node)
    r = file.range(loop_node)
    skip = _string_continuations(file, loop_node)
    edits = [Edit(file.offset(r.start.line, 0), file.offset(r.start.line, 0), f"{indent}with {region_call}:{file.newline}")]
    for number in range(r.start.line, r.end.line + 1):
        start = file.offset(number, 0)
        if number in skip:
            continue
        end = file.source.find("\n", start)
        if not file.source[start:(len(file.source) if end < 0 else end)].strip():
            continue
        edits.append(Edit(start, start, unit))
    return file.fix(title, "unsafe", edits)
