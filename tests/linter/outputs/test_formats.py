"""Reporters: SARIF validates against the official 2.1.0 schema; GitHub escaping; text marks."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from linter.outputs import formats
from linter.findings import Edit, Finding, Fix

from ..kit import CATALOG, ROOT, lint

SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
VALIDATOR = jsonschema.validators.validator_for(SCHEMA)  # the schema says which draft (draft-04)


def validate(log: object) -> None:
    VALIDATOR.check_schema(SCHEMA)
    VALIDATOR(SCHEMA, format_checker=VALIDATOR.FORMAT_CHECKER).validate(log)
CODE = """\
import cupy as cp
import numpy as np
x = np.arange(4.0)
for i in range(3):
    d = cp.asarray(np.zeros(4)) + cp.asarray(x)
e = cp.asarray(np.ones(4))  # noqa: OFF105
"""


def _items(show_suppressed: bool = True) -> tuple[list[tuple[str, Finding]], dict[str, str]]:
    result = lint(CODE, select=["OFF101", "OFF105"])
    items = [("pkg/mod.py", f) for f in result.findings if show_suppressed or not f.suppressed]
    return items, {"pkg/mod.py": CODE}


def test_sarif_validates_against_the_official_schema() -> None:
    items, sources = _items()
    log = json.loads(formats.sarif(items, CATALOG.rules, "1.2.3", sources))
    assert VALIDATOR is jsonschema.Draft4Validator
    validate(log)
    run = log["runs"][0]
    assert log["version"] == "2.1.0" and run["tool"]["driver"]["name"] == "offload-lint"
    rule_ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert "OFF101" in rule_ids and "OFF902" in rule_ids
    results = run["results"]
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in results] == [
        ("OFF105", 5), ("OFF101", 5), ("OFF105", 6)
    ]
    assert all(rule_ids[r["ruleIndex"]] == r["ruleId"] for r in results)
    assert results[2]["suppressions"] == [{"kind": "inSource"}]
    fix = results[0]["fixes"][0]["artifactChanges"][0]["replacements"][0]
    start = fix["deletedRegion"]["charOffset"]
    assert CODE[start:start + fix["deletedRegion"]["charLength"]] == "cp.asarray(np.zeros(4))"
    assert fix["insertedContent"]["text"] == "cp.zeros(4)"


def test_an_empty_sarif_log_is_valid_too() -> None:
    validate(json.loads(formats.sarif([], CATALOG.rules, "0", {})))


def test_the_validator_rejects_a_broken_log() -> None:
    items, sources = _items()
    log = json.loads(formats.sarif(items, CATALOG.rules, "1.2.3", sources))
    log["runs"][0]["results"][0]["level"] = "fatal"
    try:
        validate(log)
    except jsonschema.ValidationError as exc:
        assert "fatal" in str(exc.message)
    else:
        raise AssertionError("a log with level 'fatal' validated")


def test_github_escapes_properties_and_data() -> None:
    finding = Finding("OFF101", 3, 4, 3, 9, "50% of it,\nhere: now")
    line = formats.github([("a,b:c.py", finding)], CATALOG.rules, False)
    assert line == (
        "::warning file=a%2Cb%3Ac.py,line=3,col=4,endLine=3,endColumn=9,title=OFF101 transfer-in-loop"
        "::OFF101 50%25 of it,%0Ahere: now\n"
    )


def test_text_marks_fixable_findings_by_safety() -> None:
    safe = Finding("OFF105", 1, 1, 1, 2, "m", Fix("t", "safe", (Edit(0, 1, "x"),)))
    unsafe = Finding("OFF101", 2, 1, 2, 2, "m", Fix("t", "unsafe", (Edit(0, 1, "x"),)))
    assert formats.text([("f.py", safe), ("f.py", unsafe)], CATALOG.rules, False) == (
        "f.py:1:1: OFF105 [*] m\nf.py:2:1: OFF101 m\n"
    )
    assert "OFF101 [*] m" in formats.text([("f.py", unsafe)], CATALOG.rules, True)
    assert formats.summary([("f.py", safe), ("f.py", unsafe)], False) == (
        "Found 2 findings.\n[*] 1 fixable with the `--fix` option.\n1 more fixable with `--fix --unsafe-fixes`."
    )
