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


WINDOW = """\
import torch
from torch import nn


def log_mel(audio):
    window = torch.hann_window(400).to(audio.device)
    return torch.stft(audio, 400, 160, window=window, return_complex=True).abs()


class Encoder(nn.Module):
    def forward(self, audio):
        return self.net(log_mel(audio))
"""


def test_a_window_made_on_the_host_per_forward_is_off105_with_an_unsafe_fix() -> None:
    """`torch.hann_window(n).to(audio.device)` in a helper of `forward`: the window's cosines may round otherwise on
    the device, so creating it there is offered only as an unsafe fix, as for arange and linspace."""
    settings = settings_for(CATALOG.rules, frozenset({"OFF105"}))
    result = lint_text(WINDOW, settings, APIS)
    [finding] = result.findings
    assert (finding.line, finding.column) == (6, 14)
    assert finding.message == ("torch.Tensor.to uploads an array that torch.hann_window just built on the host; create "
                               "it on the device with torch.hann_window(..., device=audio.device)")
    assert finding.fix is not None and finding.fix.safety == "unsafe"
    relint = lambda t: lint_text(t, settings, APIS)  # noqa: E731
    after, _, _ = apply_rounds(WINDOW, result, relint, lambda r: [f for f in r.findings if f.fixable(True)])
    assert "window = torch.hann_window(400, device=audio.device)\n" in after
    assert apply_rounds(WINDOW, result, relint, lambda r: [f for f in r.findings if f.fixable(False)])[0] == WINDOW


def test_overlapping_fixes_apply_one_per_round_and_identical_ones_once() -> None:
    a = Fix("a", "safe", (Edit(0, 3, "AAA"),))
    b = Fix("b", "safe", (Edit(1, 2, "B"),))
    ins = Fix("i", "safe", (Edit(0, 0, "x"),))
    assert apply_fixes("abcdef", [a, b]) == ("AAAdef", 1)
    assert apply_fixes("abcdef", [ins, ins]) == ("xabcdef", 1)
    assert apply_fixes("abcdef", [ins, Fix("j", "safe", (Edit(0, 0, "y"),))]) == ("xyabcdef", 2)
    assert apply_fixes("abcdef", [a, ins]) == ("AAAdef", 1)  # an insertion where another edit deletes
