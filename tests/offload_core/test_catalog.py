"""The rule catalog: the shipped files load, and malformed files fail with one line naming the file."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from offload_core.catalog import CatalogError, load_api_file, load_catalog, load_rule, rules_dir

CATALOG = load_catalog()
FOUNDATION_RULES = ("OFF101", "OFF102", "OFF201", "OFF202", "OFF203")


def test_catalog_is_found_beside_the_packages() -> None:
    assert rules_dir() == Path(__file__).resolve().parents[2] / "rules"


def test_foundation_rules_are_present() -> None:
    for code in FOUNDATION_RULES:
        assert CATALOG[code].kind == "static"
    with pytest.raises(KeyError, match="no rule 'OFF999' in the catalog"):
        CATALOG["OFF999"]


@pytest.mark.parametrize("rule", list(CATALOG.rules.values()), ids=list(CATALOG.rules))
def test_every_rule_is_complete_and_its_examples_are_python(rule) -> None:  # type: ignore[no-untyped-def]
    assert rule.path.name == f"{rule.id}-{rule.name}.yaml"
    assert rule.summary and rule.rationale and rule.advice
    assert rule.invalid, "every rule has at least one invalid example"
    for example in rule.invalid + rule.valid:
        if rule.id.startswith("OFF9") and example in rule.invalid:
            continue  # tool diagnostics (OFF901 syntax error) are about code that does not parse
        ast.parse(example.code)  # examples are real code
    for example in rule.invalid:
        lines = example.code.splitlines()
        for pos in example.expect:
            assert pos.line <= len(lines), f"{rule.id}: expected line {pos.line} past the end"
            assert pos.column <= len(lines[pos.line - 1]), f"{rule.id}: column {pos.column} past the line end"
            assert lines[pos.line - 1][pos.column - 1] != " ", f"{rule.id}: expected position points at a space"


def test_messages_format_with_their_fields() -> None:
    rule = CATALOG["OFF101"]
    assert rule.fields == ("api", "direction", "where", "between", "advice")
    text = rule.format(api="cupy.asarray", direction="host->device", where="iteration of the loop at line 3",
                       between="in the loop", advice="hoist it out")
    assert text == ("cupy.asarray copies host->device on every iteration of the loop at line 3, but nothing it "
                    "reads changes in the loop; hoist it out")
    with pytest.raises(KeyError, match="OFF101: message needs field 'where'"):
        rule.format(api="x", direction="y")


def test_api_files_load() -> None:
    names = {e.call or e.method for f in CATALOG.apis for e in f.entries if e.library == "offload_core"}
    assert {"offload_core.offload", "offload_core.region", "update_host", "update_device"} <= names


GOOD = """\
id: OFF150
name: sample-rule
kind: static
severity: warning
summary: s
message: "{thing} happened"
rationale: r
fix: f
fix_safety: safe
examples:
  invalid:
    - code: "x = 1\\n"
      expect: [{line: 1, column: 1}]
"""


def write(tmp_path: Path, text: str, name: str = "OFF150-sample-rule.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_good_rule_file_loads(tmp_path: Path) -> None:
    rule = load_rule(write(tmp_path, GOOD))
    assert (rule.id, rule.severity, rule.default_enabled, dict(rule.options)) == ("OFF150", "warning", True, {})
    assert rule.invalid[0].expect[0].message is None and rule.invalid[0].fixed is None


def test_examples_pin_messages_and_fixed_code(tmp_path: Path) -> None:
    text = GOOD.replace("      expect: [{line: 1, column: 1}]\n", """\
      expect:
        - {line: 1, column: 1, message: "x happened"}
      fixed: "x = 2\\n"
""")
    example = load_rule(write(tmp_path, text)).invalid[0]
    assert (example.expect[0].message, example.fixed) == ("x happened", "x = 2\n")


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda t: t.replace("severity: warning", "severity: fatal"), "'severity' is 'fatal'; choose one of error, warning, info"),
        (lambda t: t.replace("kind: static\n", ""), "missing key 'kind'"),
        (lambda t: t.replace("id: OFF150", "id: OFF15"), "id 'OFF15' is not of the form OFFnnn"),
        (lambda t: t.replace("name: sample-rule", "name: other"), "file name must be OFF150-other.yaml"),
        (lambda t: t.replace('"{thing} happened"', '"{thing happened"'), "message is not a valid format string"),
        (lambda t: t + "colour: red\n", "unknown key(s) colour"),
        (lambda t: t.replace("      expect: [{line: 1, column: 1}]\n", ""), "examples.invalid[1] must expect at least one finding"),
        (lambda t: t.replace("{line: 1, column: 1}", "{line: 0, column: 1}"), "lines and columns are 1-based"),
        (lambda t: t.replace("fix: f", "fix: [f"), "invalid YAML at line"),
        (lambda t: "- a list\n", "a rule file holds a mapping of keys"),
        (lambda t: t.replace("{line: 1, column: 1}", "{line: 1, column: 1, message: 3}"), "a 'message' string"),
        (lambda t: t.replace("{line: 1, column: 1}", "{line: 1, column: 1, msg: x}"), "a 'message' string"),
        (lambda t: t + "    - code: y\n      expect: [{line: 1, column: 1}]\n      fixd: z\n", "unknown key(s) fixd"),
        (lambda t: t + "    - code: y\n      expect: [{line: 1, column: 1}]\n      fixed: 3\n", "'fixed' is the fixed code"),
        (lambda t: t.replace("fix_safety: safe", "fix_safety: none") + "      fixed: z\n", "'fixed' is the fixed code"),
        (lambda t: t + "  valid:\n    - code: y\n      fixed: z\n", "examples.valid[1]: 'fixed' is the fixed code"),
    ],
)
def test_malformed_rule_files_fail_with_one_line(tmp_path: Path, edit, message: str) -> None:  # type: ignore[no-untyped-def]
    path = write(tmp_path, edit(GOOD))
    with pytest.raises(CatalogError) as exc:
        load_rule(path)
    text = str(exc.value)
    assert text.startswith(str(path)) and message in text and "\n" not in text


def test_duplicate_ids_and_unknown_related_rules(tmp_path: Path) -> None:
    write(tmp_path, GOOD)
    write(tmp_path, GOOD.replace("name: sample-rule", "name: again"), "OFF150-again.yaml")
    with pytest.raises(CatalogError, match="id OFF150 is also used by"):
        load_catalog(tmp_path)
    (tmp_path / "OFF150-again.yaml").unlink()
    write(tmp_path, GOOD + "related: [OFF777]\n")
    with pytest.raises(CatalogError, match="related rule OFF777 is not in the catalog"):
        load_catalog(tmp_path)
    with pytest.raises(CatalogError, match="rule catalog folder not found"):
        load_catalog(tmp_path / "nowhere")


def test_malformed_api_files(tmp_path: Path) -> None:
    path = tmp_path / "lib.yaml"
    path.write_text("library: lib\nentries:\n  - call: lib.copy\n    method: copy\n    kind: h2d\n")
    with pytest.raises(CatalogError, match="entries\\[1\\] needs exactly one of 'call' and 'method'"):
        load_api_file(path)
    path.write_text("library: lib\nentries:\n  - call: lib.copy\n    kind: teleport\n")
    with pytest.raises(CatalogError, match="'kind' is 'teleport'; choose one of"):
        load_api_file(path)
    path.write_text("library: lib\nentries:\n  - call: lib.copy\n    kind: h2d\n    direction_arg: 0\n")
    entry = load_api_file(path).entries[0]
    assert entry.kind == "h2d" and dict(entry.extra) == {"direction_arg": 0}
