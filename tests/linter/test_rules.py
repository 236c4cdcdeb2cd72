"""Every rule's catalog examples, run as tests (Fixit style), and the catalog <-> checks contract."""

from __future__ import annotations

import pytest

from linter.checks import CHECKS
from linter.engine import DIAGNOSTICS, lint_text, settings_for

from .kit import APIS, CATALOG, codes, lint

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
        from linter.engine import lint_bytes

        result, _ = lint_bytes(example.code.encode("utf-8"), settings, APIS)
    else:
        result = lint_text(example.code, settings, APIS)
    assert result.error is None, result.error
    got = sorted((f.code, f.line, f.column) for f in result.findings)
    want = sorted((rule.id, p.line, p.column) for p in example.expect)
    assert got == want
    for finding in result.findings:
        assert finding.message == finding.message.strip() and "{" not in finding.message


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
            images, labels = images.to(device), labels.to(device, non_blocking=True)
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
