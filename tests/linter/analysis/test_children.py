"""The linter's own walk over LibCST trees (`linter.analysis.children`) against LibCST's: same children, same order,
same visits, on real files (the project's own sources and the rule examples) and on syntax the sources lack."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from linter.analysis.children import children, visit
from linter.checks.file import positions

ROOT = Path(__file__).resolve().parents[3]
SOURCES = sorted((ROOT / "linter").rglob("*.py")) + sorted((ROOT / "profiler").rglob("*.py"))[:40]
SYNTAX = """\
async def f(a, /, b: int = 1, *args, c, **kw) -> list[int]:
    global g
    x = [i async for i in a if i] + [*b] + {**kw}.get("k", ())
    y = lambda p=1, *q: p if q else -p
    async with a as (u, v), b:
        await u
    try:
        del x[1:2, ::3], y
    except* ValueError as e:
        raise RuntimeError("no") from e
    finally:
        pass
    match v:
        case {"k": [1, *rest]} | Point(x=0) as m if m:
            return f"{x!r:>{kw}} {y=}"
        case _:
            yield from (z for z in b)
    while (n := len(b)) > 0:
        b @= n; b >>= 1
    else:
        assert not b, "left"
    from . import (c as d, e)
    from .. import *
    import os.path as p
    nonlocal_ = 1 if 2 else 3; print(*a, sep="")
"""


def _walk_both(module: cst.Module) -> int:
    count = 0
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        ours, theirs = children(node), list(node.children)
        assert len(ours) == len(theirs) and all(a is b for a, b in zip(ours, theirs)), type(node).__name__
        stack.extend(theirs)
        count += 1
    return count


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_children_match_libcst_s_on_real_files(path: Path) -> None:
    assert _walk_both(cst.parse_module(path.read_text(encoding="utf-8"))) > 0


def test_children_match_libcst_s_on_every_kind_of_statement() -> None:
    assert _walk_both(cst.parse_module(SYNTAX)) > 200


class Recorder(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, str]] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self.seen.append(("visit", type(node).__name__))
        return not isinstance(node, cst.Lambda)  # a visitor that skips a subtree

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.seen.append(("leave", type(original_node).__name__))


def test_visit_calls_the_visitor_as_libcst_does() -> None:
    module = cst.parse_module(SYNTAX)
    ours, theirs = Recorder(), Recorder()
    visit(module, ours)
    module.visit(theirs)
    assert ours.seen == theirs.seen


def test_positions_are_libcst_s() -> None:
    module = cst.parse_module(SYNTAX)
    ours = positions(module)
    theirs = cst.metadata.MetadataWrapper(module, unsafe_skip_copy=True).resolve(cst.metadata.PositionProvider)
    assert dict(ours) == dict(theirs)
