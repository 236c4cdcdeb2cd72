"""Output formats: text, JSON, SARIF 2.1.0, GitHub Actions annotations, statistics.

Every reporter takes the same list of (path, Finding) pairs, sorted, and
returns a string; the CLI decides where it goes. Positions are 1-based in
all formats (SARIF's own convention too). SARIF output follows the OASIS
2.1.0 schema: one run, the tool's rules with their catalog texts, results
with physical locations, `inSource` suppressions for findings shown with
`--show-suppressed`, and fixes as artifact changes.

A notebook's findings are placed by cell: text output writes
`path.ipynb:cell 3:2:5:`, JSON adds `"cell"` (null for other files). The
formats a code host displays (SARIF, GitHub annotations) point at the
.ipynb file itself, where GitHub can show them: at the line and column of
the JSON string that holds the source line, with the cell, line and column
in the cell kept beside (SARIF result properties, the annotation's title).
SARIF results in notebooks carry no `fixes`: their edits are offsets in
the cells' Python, not in the file.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Mapping, Sequence

from offload_core.catalog import Rule
from offload_core.github import Level, annotation

from ..findings import Finding
from ..inputs.notebooks import Notebook

SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
_GITHUB: dict[str, Level] = {"error": "error", "warning": "warning", "info": "notice"}

Item = tuple[str, Finding]


def text(items: Sequence[Item], rules: Mapping[str, Rule], unsafe: bool) -> str:
    lines = []
    for path, f in items:
        mark = " [*]" if f.fixable(unsafe) else ""
        note = " (suppressed)" if f.suppressed else ""
        where = f"cell {f.cell}:{f.line}:{f.column}" if f.cell is not None else f"{f.line}:{f.column}"
        lines.append(f"{path}:{where}: {f.code}{mark} {f.message}{note}")
    return "\n".join(lines) + ("\n" if lines else "")


def summary(items: Sequence[Item], unsafe: bool) -> str:
    active = [f for _, f in items if not f.suppressed]
    if not active:
        return "All checks passed."
    n = len(active)
    fixable = sum(1 for f in active if f.fixable(unsafe))
    hidden = sum(1 for f in active if f.fix is not None and not f.fixable(unsafe))
    text = f"Found {n} finding{'s' if n != 1 else ''}."
    if fixable:
        text += f"\n[*] {fixable} fixable with the `--fix` option."
    if hidden:
        text += f"\n{hidden} more fixable with `--fix --unsafe-fixes`."
    return text


def as_json(items: Sequence[Item], rules: Mapping[str, Rule], unsafe: bool,
            contexts: Mapping[str, str] | None = None) -> str:
    out = []
    for path, f in items:
        out.append({
            "code": f.code,
            "name": rules[f.code].name,
            "path": path,
            "cell": f.cell,
            "line": f.line,
            "column": f.column,
            "end_line": f.end_line,
            "end_column": f.end_column,
            "severity": rules[f.code].severity,
            "message": f.message,
            "fixable": f.fixable(unsafe),
            "fix": None if f.fix is None else {"title": f.fix.title, "safety": f.fix.safety},
            "suppressed": f.suppressed,
            "context": (contexts or {}).get(path, "library"),
        })
    return json.dumps(out, indent=2) + "\n"


def _file_region(f: Finding, notebook: Notebook | None) -> tuple[int, int, int, int]:
    """(line, column, end line, end column) of a finding in the file as stored: for a notebook, in its JSON."""
    if f.cell is None or notebook is None:
        return f.line, f.column, f.end_line, f.end_column
    line, column = notebook.file_position(f.cell, f.line, f.column)
    end_line, end_column = notebook.file_position(f.cell, f.end_line, f.end_column)
    return line, column, end_line, end_column


def github(items: Sequence[Item], rules: Mapping[str, Rule], unsafe: bool,
           notebooks: Mapping[str, Notebook] | None = None) -> str:
    lines = []
    for path, f in items:
        if f.suppressed:
            continue
        rule = rules[f.code]
        line, column, end_line, end_column = _file_region(f, (notebooks or {}).get(path))
        title = f"{f.code} {rule.name}" + (f" (cell {f.cell}, line {f.line})" if f.cell is not None else "")
        lines.append(annotation(_GITHUB[rule.severity], f"{f.code} {f.message}", file=path, line=line, col=column,
                                end_line=end_line, end_column=end_column, title=title))
    return "\n".join(lines) + ("\n" if lines else "")


def sarif(items: Sequence[Item], rules: Mapping[str, Rule], version: str, sources: Mapping[str, str],
          notebooks: Mapping[str, Notebook] | None = None) -> str:
    static = [r for r in rules.values() if r.kind == "static"]
    order = {r.id: i for i, r in enumerate(static)}
    driver = {
        "name": "offload-lint",
        "version": version,
        "informationUri": "https://github.com/offload-guard/offload-guard",
        "rules": [
            {
                "id": r.id,
                "name": r.name,
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": r.rationale},
                "help": {"text": r.advice},
                "defaultConfiguration": {"level": _LEVEL[r.severity], "enabled": r.default_enabled},
                "properties": {"fix_safety": r.fix_safety},
            }
            for r in static
        ],
    }
    results = []
    for path, f in items:
        uri = Path(path).as_posix()
        line, column, end_line, end_column = _file_region(f, (notebooks or {}).get(path))
        region = {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column}
        result: dict = {
            "ruleId": f.code,
            "ruleIndex": order.get(f.code, 0),
            "level": _LEVEL[rules[f.code].severity],
            "message": {"text": f.message},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"}, "region": region}}],
        }
        if f.cell is not None:
            result["properties"] = {"cell": f.cell, "cellLine": f.line, "cellColumn": f.column,
                                    "cellEndLine": f.end_line, "cellEndColumn": f.end_column}
        if f.suppressed:
            result["suppressions"] = [{"kind": "inSource"}]
        if f.fix is not None and f.cell is None and path in sources:
            result["fixes"] = [_sarif_fix(uri, f, sources[path])]
        results.append(result)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver}, "columnKind": "unicodeCodePoints", "results": results}],
    }
    return json.dumps(log, indent=2) + "\n"


def _sarif_fix(uri: str, f: Finding, source: str) -> dict:
    assert f.fix is not None
    replacements = []
    for edit in f.fix.edits:
        replacements.append({
            "deletedRegion": {"charOffset": edit.start, "charLength": edit.end - edit.start},
            "insertedContent": {"text": edit.text},
        })
    return {
        "description": {"text": f"{f.fix.title} ({f.fix.safety})"},
        "artifactChanges": [{"artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"}, "replacements": replacements}],
    }


def statistics(items: Sequence[Item], rules: Mapping[str, Rule], unsafe: bool, as_json_list: bool) -> str:
    counts = Counter(f.code for _, f in items if not f.suppressed)
    fixable = Counter(f.code for _, f in items if not f.suppressed and f.fixable(unsafe))
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if as_json_list:
        return json.dumps(
            [{"code": c, "name": rules[c].name, "count": n, "fixable": fixable[c]} for c, n in rows], indent=2
        ) + "\n"
    width = max((len(str(n)) for _, n in rows), default=1)
    lines = [f"{n:>{width}}  {c}  {'[*]' if fixable[c] else '   '} {rules[c].name}" for c, n in rows]
    return "\n".join(lines) + ("\n" if lines else "")
