"""Every rule's catalog examples, run as tests (Fixit style), and the catalog <-> checks contract.

An invalid example pins where its findings are, and may pin each message
(`message:` in its `expect` entries) and, for rules with a fix, the fixed
code (`fixed:`). Each rule's `fix_safety` is checked against the fixes its
examples get, and every `safe` fix is run before and after against
stand-ins of the device libraries (tests/linter/standins.py): it must
leave the program's arrays exactly as they were.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from linter.checks.registry import CHECKS
from linter.config.rules import settings_for
from linter.run.engine import DIAGNOSTICS, lint_text
from linter.findings import FileResult
from linter.outputs.applying import apply_rounds

from .. import standins
from ..kit import APIS, CATALOG, codes, lint

STATIC = [r for r in CATALOG.rules.values() if r.kind == "static"]
CASES = [
    pytest.param(rule, which, example, id=f"{rule.id}-{which}-{n}")
    for rule in STATIC
    for which, examples in (("invalid", rule.invalid), ("valid", rule.valid))
    for n, example in enumerate(examples, 1)
]


@pytest.mark.parametrize("rule, which, example", CASES)
def test_catalog_example(rule, which, example) -> None:  # type: ignore[no-untyped-def]
    """An invalid example yields exactly its expected findings (code, line, column); a valid one none."""
    settings = settings_for(CATALOG.rules, frozenset({rule.id}), {rule.id: dict(example.options)})
    if rule.id == "OFF902":
        from linter.run.engine import lint_bytes

        result, _ = lint_bytes(example.code.encode("utf-8"), settings, APIS)
    else:
        result = lint_text(example.code, settings, APIS)
    assert result.error is None, result.error
    got = sorted((f.code, f.line, f.column) for f in result.findings)
    want = sorted((rule.id, p.line, p.column) for p in example.expect)
    assert got == want
    for finding in result.findings:
        assert finding.message == finding.message.strip() and "{" not in finding.message
    messages = {(f.line, f.column): f.message for f in result.findings}
    for p in example.expect:
        if p.message is not None:
            assert messages[(p.line, p.column)] == p.message
    if example.fixed is not None:
        assert _fixed(rule.id, example.code, dict(example.options), unsafe=True)[0] == example.fixed


FIXABLE = [r for r in STATIC if r.fix_safety != "none"]


def _fixed(code: str, text: str, options: dict[str, Any], unsafe: bool) -> tuple[str, FileResult]:
    """`text` after every fix of rule `code` is applied (`unsafe`: unsafe ones too), and the first lint's result."""
    settings = settings_for(CATALOG.rules, frozenset({code}), {code: options})

    def relint(t: str) -> FileResult:
        return lint_text(t, settings, APIS)

    first = relint(text)
    after, _, note = apply_rounds(text, first, relint, lambda r: [f for f in r.findings if f.fixable(unsafe)])
    assert note is None, note
    return after, first


@pytest.mark.parametrize("rule", FIXABLE, ids=[r.id for r in FIXABLE])
def test_rules_with_a_fix_pin_the_fixed_code_of_every_invalid_example(rule) -> None:  # type: ignore[no-untyped-def]
    assert all(ex.fixed is not None for ex in rule.invalid), f"{rule.path}: an invalid example has no 'fixed:'"


@pytest.mark.parametrize("rule", STATIC, ids=[r.id for r in STATIC])
def test_fix_safety_is_what_the_fixes_offered_are(rule) -> None:  # type: ignore[no-untyped-def]
    """none: no fix; unsafe: only unsafe fixes; safe: at least one safe fix (creators such as arange stay unsafe)."""
    if rule.id == "OFF902":
        return  # undecodable bytes: nothing to fix, and no text to lint
    safeties = set()
    for ex in rule.invalid:
        settings = settings_for(CATALOG.rules, frozenset({rule.id}), {rule.id: dict(ex.options)})
        safeties |= {f.fix.safety for f in lint_text(ex.code, settings, APIS).findings if f.fix is not None}
    expected = {"none": set(), "unsafe": {"unsafe"}}.get(rule.fix_safety)
    if expected is not None:
        assert safeties == expected
    else:
        assert "safe" in safeties


# Programs whose safe fixes must not change what they compute: the catalog's examples of rules with safe
# fixes (those the fix changes), and more creators.
SAFE_CASES: list[tuple[str, str]] = [
    *((rule.id, ex.code) for rule in FIXABLE if rule.fix_safety == "safe" for ex in rule.invalid if ex.fixed != ex.code),
    ("OFF105", """\
import cupy as cp
import numpy as np


def build():
    a = cp.asarray(np.ones((3, 4), dtype=np.int32))
    b = cp.asarray(np.full((2, 5), 7.5, dtype=np.float32))
    c = cp.asarray(np.eye(4))
    d = cp.asarray(np.identity(3, dtype=np.int64))
    e = cp.asarray(np.empty(6))
    return a, b, c, d, e


a, b, c, d, e = build()
"""),
    ("OFF105", """\
import torch

dev = "cuda"


def build():
    a = torch.ones(3, 2).to(dev)
    b = torch.zeros(5, dtype=torch.float64).to(device="cuda")
    c = torch.empty(2, 2).cuda()
    return a, b, c


a, b, c = build()
"""),
]


@pytest.mark.parametrize("code, program", SAFE_CASES, ids=[f"{c}-{n}" for n, (c, _) in enumerate(SAFE_CASES)])
def test_safe_fixes_keep_behaviour(code: str, program: str, monkeypatch: pytest.MonkeyPatch) -> None:
    after, first = _fixed(code, program, {}, unsafe=False)
    assert first.findings and all(f.fix is not None and f.fix.safety == "safe" for f in first.findings)
    assert after != program
    standins.install(monkeypatch)
    before_state = standins.run(program)
    assert before_state, "the program leaves arrays to compare"
    assert standins.run(after) == before_state


def test_the_behaviour_check_sees_a_changed_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above can fail: a rewrite that changes the dtype, the values or the device is caught."""
    standins.install(monkeypatch)
    run = standins.run
    assert run("import cupy as cp\nimport numpy as np\na = cp.asarray(np.arange(4))") != run(
        "import cupy as cp\na = cp.arange(4.0)")
    assert run("import cupy as cp\nimport numpy as np\na = cp.asarray(np.zeros(4))") != run(
        "import cupy as cp\na = cp.empty(4)")
    assert run("import torch\na = torch.ones(2).cuda()") != run("import torch\na = torch.ones(2)")
    assert run("import torch\na = torch.ones(2).cuda()") != run("import torch\na = torch.zeros(2, device='cuda')")
    assert run("from numba import cuda\nimport numpy as np\na = cuda.to_device(np.zeros(3))") != run(
        "from numba import cuda\na = cuda.device_array(3)")


def test_rule_ids_are_unique_and_match_their_files() -> None:
    ids = [r.id for r in CATALOG.rules.values()]
    assert len(ids) == len(set(ids))
    names = [r.name for r in CATALOG.rules.values()]
    assert len(names) == len(set(names))


def test_every_static_rule_has_a_check_and_every_check_a_rule() -> None:
    static = {r.id for r in STATIC}
    implemented = set(CHECKS) | set(DIAGNOSTICS)
    assert static == implemented
    assert {"OFF101", "OFF102", "OFF103", "OFF104", "OFF105", "OFF106", "OFF201", "OFF202", "OFF203", "OFF204",
            "OFF205", "OFF901", "OFF902", "OFF903"} <= static


def test_off106_is_info_and_off_by_default() -> None:
    rule = CATALOG["OFF106"]
    assert (rule.severity, rule.default_enabled) == ("info", False)
    assert "OFF101" in rule.related


TRAINING_LOOP = """
import torch
import torch.nn.functional as F

def train(model, loader, optimizer, epochs):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = model.to(device)
    for epoch in range(epochs):
        running, correct = 0.0, 0
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            optimizer.zero_grad()
            out = model(images)
            loss = F.cross_entropy(out, labels)
            loss.backward()
            optimizer.step()
            running += loss.item()
            correct += (out.argmax(1) == labels).sum().item()
        print(epoch, running, correct)
"""


def test_a_typical_pytorch_training_loop_reports_only_its_per_step_metric_syncs() -> None:
    # the per-batch copies are necessary (OFF106, off by default); the two .item() per step are not
    assert codes(TRAINING_LOOP) == [("OFF301", 17, 24), ("OFF301", 18, 24)]


def test_the_same_loop_accumulating_on_the_device_lints_clean() -> None:
    fixed = TRAINING_LOOP.replace("running += loss.item()", "running += loss.detach()").replace(
        "correct += (out.argmax(1) == labels).sum().item()", "correct += (out.argmax(1) == labels).sum()")
    assert codes(fixed) == []


def test_its_per_batch_copies_are_off106_when_asked_for() -> None:
    found = codes(TRAINING_LOOP, select=["OFF106"])
    assert found == [("OFF106", 11, 30), ("OFF106", 11, 49)]
    message = lint(TRAINING_LOOP, select=["OFF106"]).findings[0].message
    assert "torch.Tensor.to" in message and "loop at line 10" in message
    assert "pinned" in message and "batch" in message and "non_blocking" in message


@pytest.mark.parametrize("code", ["OFF101", "OFF102", "OFF104", "OFF106"])
def test_loop_messages_name_the_api_the_loop_line_and_the_fix(code: str) -> None:
    rule = CATALOG[code]
    example = rule.invalid[0]
    result = lint(example.code, select=[code])
    message = result.findings[0].message
    loop_line = next(n for n, line in enumerate(example.code.splitlines(), 1) if line.strip().startswith(("for ", "while ")))
    assert f"line {loop_line}" in message
    assert any(api in message for api in ("cupy", "torch.", "numba", "offload(")), message
    assert any(word in message for word in ("hoist", "region(", "accumulate", "batch")), message
