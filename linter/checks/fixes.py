"""Fixes as text edits: hoisting a copy (OFF101), wrapping a loop in a region (OFF102),
creating on the device (OFF105); and applying them.

Fixes are text edits on the original source rather than rewritten trees:
edits from several findings combine without re-walking the tree, untouched
code keeps its exact bytes, and the cache can store them. Each fix is built
from node positions and LibCST's code generation of the nodes it moves, so
comments, strings and parentheses inside them travel unchanged. Wrapping a
loop re-indents its lines, except the continuation lines of multi-line
strings, whose contents must not change.

A fix is only offered where it is mechanically sound; whether it preserves
behaviour is the `safety` (hoisting out of a `while` runs the copy even when
the loop runs zero times, so it is unsafe). `apply_fixes` applies
non-overlapping edits; the engine re-lints the result and repeats, so fixes
that touched the same lines land in a later round.
"""

from __future__ import annotations

import difflib
from typing import TYPE_CHECKING, Iterable

import libcst as cst

from ..findings import Edit, Fix

if TYPE_CHECKING:
    from .file import FileContext
    from ..analysis.scopes import IndexedCall, Loop
    from ..analysis.calls import Classified

_UNSAFE_CREATORS = frozenset({"arange", "linspace"})


def fresh_name(ctx: FileContext, base: str) -> str:
    taken = ctx.index.names
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


def hoist_fix(ctx: FileContext, call: IndexedCall, use: Classified) -> Fix | None:
    """Move a loop-invariant copy above the outermost loop it is invariant in."""
    sem = ctx.sem
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
    indent = ctx.indent_of(anchor)
    insert_at = ctx.offset(ctx.range(anchor).start.line, 0)
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
        and _bound_once(ctx, call, outer, small.targets[0].target.value)
    ):
        start, end = ctx.line_span(statement)
        start = ctx.offset(ctx.range(statement).start.line - len(statement.leading_lines), 0)
        comments = "".join(f"{indent}{line.comment.value}{ctx.newline}" for line in statement.leading_lines if line.comment)
        edits = [Edit(insert_at, insert_at, f"{comments}{indent}{ctx.code(small)}{ctx.newline}"), Edit(start, end, "")]
        parent = call.stmts[-2]
        body = getattr(parent, "body", None)
        if isinstance(body, cst.IndentedBlock) and len(body.body) == 1:
            edits[1] = Edit(start, end, f"{ctx.indent_of(statement)}pass{ctx.newline}")
        where = "above the loop"
    else:
        data = use.data
        base = data.value if isinstance(data, cst.Name) else "hoisted"
        name = fresh_name(ctx, f"{base}_{'dev' if use.kind == 'h2d' else 'host'}")
        start, end = ctx.span(call.node)
        edits = [Edit(insert_at, insert_at, f"{indent}{name} = {ctx.code(call.node)}{ctx.newline}"), Edit(start, end, name)]
        where = f"into `{name}` above the {'loop' if outer is not None else 'statement'}"
    return ctx.fix(f"Hoist {use.api.display} {where}", "unsafe", edits)


def _bound_once(ctx: FileContext, call: IndexedCall, loop: Loop, name: str) -> bool:
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
    ctx: FileContext, call: IndexedCall, use: Classified, inner: cst.Call, creator: str, inner_lib: str,
    safety: str | None = None,
) -> tuple[Fix | None, str]:
    """`cp.asarray(np.zeros(n))` -> `cp.zeros(n)`; `torch.zeros(n).cuda()` -> `torch.zeros(n, device="cuda")`.

    `safety` overrides the creator's own (random draws: the device generator gives other numbers).
    """
    sem = ctx.sem
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
            start, end = ctx.span(node)
            text = ctx.code(new)
            return ctx.fix(f"Create with {ctx.code(func.value)}.{creator}", safety, [Edit(start, end, text)]), (
                f"{ctx.code(func.value)}.{creator}(...)"
            )
        if api.library == "jax":
            return None, f"jax.numpy.{creator}(...)"
        if api.library == "numba":
            # np.empty(shape, dtype) and cuda.device_array(shape, dtype) take the same arguments
            target = "device_array" if creator == "empty" else "device_array_like"
            if isinstance(func, cst.Attribute) and len(node.args) == 1 and node.args[0].keyword is None:
                new = inner.with_changes(func=cst.Attribute(value=func.value, attr=cst.Name(target)))
                start, end = ctx.span(node)
                title = f"Create with {ctx.code(func.value)}.{target}"
                return ctx.fix(title, "safe", [Edit(start, end, ctx.code(new))]), f"{ctx.code(func.value)}.{target}(...)"
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
    head = ctx.code(inner.func)
    if device is None:
        return None, f"{head}(..., device=...)"
    if sem.values.array_lib(device, call.scope) is not None and not _is_device_attr(device):
        # `.to(other)` takes other's device and dtype: say so, and leave the rewrite to the user
        other = ctx.code(device)
        return None, f"{head}(..., device={other}.device, dtype={other}.dtype)"
    new = _with_arg(inner, "device", device)
    start, end = ctx.span(node)
    return ctx.fix(f"Create with {head}(..., device={ctx.code(device)})", safety, [Edit(start, end, ctx.code(new))]), (
        f"{head}(..., device={ctx.code(device)})"
    )


def _is_device_attr(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Attribute) and expr.attr.value == "device"


def _string_continuations(ctx: FileContext, node: cst.CSTNode) -> set[int]:
    """Lines inside `node` that continue a multi-line string (they must keep their indentation)."""
    lines: set[int] = set()

    class Strings(cst.CSTVisitor):
        def visit_SimpleString(self, n: cst.SimpleString) -> bool:
            r = ctx.range(n)
            lines.update(range(r.start.line + 1, r.end.line + 1))
            return False

        def visit_FormattedString(self, n: cst.FormattedString) -> bool:
            r = ctx.range(n)
            lines.update(range(r.start.line + 1, r.end.line + 1))
            return False

    node.visit(Strings())
    return lines


def wrap_fix(ctx: FileContext, loop_node: cst.CSTNode, region_call: str, title: str) -> Fix:
    """Put `with region(...):` around a statement loop and indent the loop one level."""
    unit = ctx.module.default_indent
    indent = ctx.indent_of(loop_node)
    r = ctx.range(loop_node)
    skip = _string_continuations(ctx, loop_node)
    edits = [Edit(ctx.offset(r.start.line, 0), ctx.offset(r.start.line, 0), f"{indent}with {region_call}:{ctx.newline}")]
    for number in range(r.start.line, r.end.line + 1):
        start = ctx.offset(number, 0)
        if number in skip:
            continue
        end = ctx.source.find("\n", start)
        if not ctx.source[start:(len(ctx.source) if end < 0 else end)].strip():
            continue
        edits.append(Edit(start, start, unit))
    return ctx.fix(title, "unsafe", edits)


def _overlaps(a: Edit, b: Edit) -> bool:
    if a.start == a.end and b.start == b.end:
        return False  # two insertions at one point both apply, in order
    if a.start == a.end:
        return b.start <= a.start < b.end
    if b.start == b.end:
        return a.start <= b.start < a.end
    return a.start < b.end and b.start < a.end


def apply_fixes(source: str, fixes: Iterable[Fix]) -> tuple[str, int]:
    """Apply every fix whose edits overlap no fix applied before it; returns (text, applied count).

    Two findings can carry the same fix (every launch in a loop offers the same
    region), which applies once.
    """
    chosen: list[Edit] = []
    seen: set[Fix] = set()
    applied = 0
    for fix in fixes:
        if fix in seen or any(_overlaps(e, c) for e in fix.edits for c in chosen):
            continue
        seen.add(fix)
        chosen.extend(fix.edits)
        applied += 1
    out = source
    # Back to front, so offsets stay valid; insertions at one point keep their order.
    order = sorted(range(len(chosen)), key=lambda k: (chosen[k].start, chosen[k].end, k), reverse=True)
    for k in order:
        edit = chosen[k]
        out = out[: edit.start] + edit.text + out[edit.end :]
    return out, applied


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}")
    )
