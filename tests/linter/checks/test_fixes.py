"""Fixes against golden files: the fixed code is the golden text, parses, and no longer triggers the rule.

Set OFFLOAD_LINT_UPDATE_GOLDEN=1 to rewrite the `.after.py` files after a deliberate change.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from linter.config.rules import settings_for
from linter.run.engine import lint_text
from linter.findings import Edit, Fix
from linter.outputs.applying import apply_fixes
from linter.outputs.applying import apply_rounds

from ..kit import APIS, CATALOG

DATA = Path(__file__).parent / "data" / "fixes"
GOLDEN = {
    # before file: (rule, unsafe fixes allowed, lines still reported afterwards)
    "off101_hoist": ("OFF101", True, []),
    "off102_region": ("OFF102", True, []),
    "off105_device": ("OFF105", False, [13]),  # np.arange: only an unsafe fix
}


def _fix(name: str) -> tuple[str, list[int]]:
    rule, unsafe, _ = GOLDEN[name]
    settings = settings_for(CATALOG.rules, frozenset({rule}))
    before = (DATA / f"{name}.before.py").read_text()

    def relint(text: str):  # type: ignore[no-untyped-def]
        return lint_text(text, settings, APIS)

    after, result, note = apply_rounds(before, relint(before), relint, lambda r: [f for f in r.findings if f.fixable(unsafe)])
    assert note is None
    return after, [f.line for f in result.findings]


@pytest.mark.parametrize("name", list(GOLDEN))
def test_fix_matches_golden_file(name: str) -> None:
    after, remaining = _fix(name)
    golden = DATA / f"{name}.after.py"
    if os.environ.get("OFFLOAD_LINT_UPDATE_GOLDEN") == "1":
        golden.write_text(after)
    assert after == golden.read_text()
    ast.parse(after)
    assert remaining == GOLDEN[name][2]
    before = (DATA / f"{name}.before.py").read_text()
    assert after != before


def test_safe_fixes_leave_unsafe_ones_alone() -> None:
    settings = settings_for(CATALOG.rules, frozenset({"OFF101"}))
    before = (DATA / "off101_hoist.before.py").read_text()
    result = lint_text(before, settings, APIS)
    assert result.findings and all(f.fix is not None and f.fix.safety == "unsafe" for f in result.findings)
    after, _, _ = apply_rounds(before, result, lambda t: lint_text(t, settings, APIS), lambda r: [f for f in r.findings if f.fixable(False)])
    assert after == before


def test_overlapping_fixes_apply_one_per_round_and_identical_ones_once() -> None:
    a = Fix("a", "safe", (Edit(0, 3, "AAA"),))
    b = Fix("b", "safe", (Edit(1, 2, "B"),))
    ins = Fix("i", "safe", (Edit(0, 0, "x"),))
    assert apply_fixes("abcdef", [a, b]) == ("AAAdef", 1)
    assert apply_fixes("abcdef", [ins, ins]) == ("xabcdef", 1)
    assert apply_fixes("abcdef", [ins, Fix("j", "safe", (Edit(0, 0, "y"),))]) == ("xyabcdef", 2)
    assert apply_fixes("abcdef", [a, ins]) == ("AAAdef", 1)  # an insertion where another edit deletes
