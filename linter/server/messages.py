"""Findings as the protocol's messages: diagnostics, code actions and hover text.

Everything here is a pure function of one lint (`Linted`) and the
documents it is shown in (`View`: a file, or each cell of a notebook, with
its `LineIndex`), so what the server publishes, the actions it offers and
the text it shows on hover always describe the same findings.

Fixes become code actions of kind `quickfix`. A safe fix is the preferred
action (editors apply it with one key); an unsafe one, whose result may
behave differently (a hoisted copy runs even when the loop runs zero
times), says so in its title and is never preferred. One source action,
`source.fixAll.offload-lint`, applies every safe fix as `--fix` does. In a
notebook a fix replaces the text of the cells it changes, as `--fix`
writes them (a fix that would rewrite IPython syntax is not offered).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from lsprotocol import types

from offload_core.catalog import Rule

from ..findings import Finding, Fix
from .positions import LineIndex
from .projects import Linted, applied

SOURCE = "offload-lint"
FIX_ALL = "source.fixAll.offload-lint"
KINDS = (types.CodeActionKind.QuickFix, FIX_ALL)
_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
}


@dataclass(frozen=True)
class View:
    """A document a lint is shown in: a file, or the cell numbered `cell` of a notebook."""

    uri: str
    version: int | None
    cell: int | None
    lines: LineIndex  # of the document's text, as the editor holds it


def finding_range(finding: Finding, lines: LineIndex) -> types.Range:
    return types.Range(
        start=lines.to_client(finding.line, finding.column),
        end=lines.to_client(finding.end_line, finding.end_column),
    )


def diagnostic(finding: Finding, rule: Rule, lines: LineIndex) -> types.Diagnostic:
    return types.Diagnostic(
        range=finding_range(finding, lines),
        severity=_SEVERITY[rule.severity],
        code=finding.code,
        source=SOURCE,
        message=finding.message,
    )


def diagnostics(linted: Linted, view: View) -> list[types.Diagnostic]:
    return [diagnostic(f, linted.rules[f.code], view.lines) for f in linted.findings if f.cell == view.cell]


def _touches(finding: Finding, start: tuple[int, int], end: tuple[int, int]) -> bool:
    """Does the finding's span meet the (inclusive) span from `start` to `end`?"""
    return (finding.line, finding.column) <= end and start <= (finding.end_line, finding.end_column)


def at(linted: Linted, view: View, start: tuple[int, int], end: tuple[int, int]) -> list[Finding]:
    """The findings in `view` that meet a span given as 1-based (line, code-point column) pairs."""
    return [f for f in linted.findings if f.cell == view.cell and _touches(f, start, end)]


def _wanted(kind: str, only: Sequence[str] | None) -> bool:
    return only is None or any(kind == o or kind.startswith(o + ".") for o in only)


def _whole(view: View, text: str) -> types.TextEdit:
    return types.TextEdit(range=types.Range(start=types.Position(line=0, character=0), end=view.lines.end), new_text=text)


def text_edit(linted: Linted, views: Mapping[int | None, View], fixed: str) -> types.WorkspaceEdit | None:
    """The edit that turns the linted text into `fixed`: the whole file, or the changed cells of a notebook."""
    if fixed == linted.text:
        return None
    if linted.notebook is None:
        view = views[None]
        return types.WorkspaceEdit(changes={view.uri: [_whole(view, fixed)]})
    sources = linted.cell_sources(fixed)
    if not sources or any(n not in views for n in sources):
        return None
    return types.WorkspaceEdit(changes={views[n].uri: [_whole(views[n], new)] for n, new in sources.items()})


def fix_edit(linted: Linted, views: Mapping[int | None, View], fix: Fix) -> types.WorkspaceEdit | None:
    """One fix as an edit: its own edits in a file, the changed cells in a notebook; None if it cannot apply."""
    if linted.notebook is not None:
        return text_edit(linted, views, applied(linted.text, fix))
    view = views[None]
    edits = [
        types.TextEdit(
            range=types.Range(start=view.lines.offset_to_client(e.start), end=view.lines.offset_to_client(e.end)),
            new_text=e.text,
        )
        for e in fix.edits
    ]
    return types.WorkspaceEdit(changes={view.uri: edits})


def fix_title(fix: Fix, codes: Sequence[str]) -> str:
    where = ", ".join(dict.fromkeys(codes))
    if fix.safety == "safe":
        return f"{fix.title} ({where})"
    return f"{fix.title} ({where}; unsafe: may change behaviour, review it)"


def code_actions(
    linted: Linted, view: View, views: Mapping[int | None, View], findings: Sequence[Finding],
    only: Sequence[str] | None, fixed_text: str | None,
) -> list[types.CodeAction]:
    """Quick fixes for `findings` (one per distinct fix) and, given `fixed_text`, the fix-all action."""
    actions: list[types.CodeAction] = []
    if _wanted(types.CodeActionKind.QuickFix, only):
        by_fix: dict[Fix, list[Finding]] = {}
        for finding in findings:
            if finding.fix is not None and finding.fix.safety in ("safe", "unsafe"):
                by_fix.setdefault(finding.fix, []).append(finding)
        for fix, group in by_fix.items():
            edit = fix_edit(linted, views, fix)
            if edit is None:
                continue
            actions.append(types.CodeAction(
                title=fix_title(fix, [f.code for f in group]),
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[diagnostic(f, linted.rules[f.code], view.lines) for f in group],
                edit=edit,
                is_preferred=fix.safety == "safe",
            ))
    if fixed_text is not None and _wanted(FIX_ALL, only):
        edit = text_edit(linted, views, fixed_text)
        if edit is not None:
            actions.append(types.CodeAction(title="Fix all safe offload-lint findings", kind=FIX_ALL, edit=edit))
    return actions


def _fix_line(finding: Finding) -> str:
    if finding.fix is None:
        return "No automatic fix."
    if finding.fix.safety == "safe":
        return f"Quick fix: {finding.fix.title}."
    return f"Unsafe fix (review it): {finding.fix.title}."


def hover_text(findings: Sequence[Finding], rules: Mapping[str, Rule]) -> str:
    """Markdown for the findings under the cursor: the message, then the catalog's summary, rationale and fix."""
    parts = []
    for finding in findings:
        rule = rules[finding.code]
        parts.append("\n\n".join((
            f"**{rule.id} {rule.name}** ({rule.severity})",
            finding.message,
            f"*{rule.summary}*",
            "**Why it matters**",
            rule.rationale.strip(),
            "**How to fix it**",
            rule.advice.strip(),
            _fix_line(finding),
        )))
    return "\n\n---\n\n".join(parts)


def hover(linted: Linted, view: View, findings: Sequence[Finding]) -> types.Hover | None:
    if not findings:
        return None
    first = findings[0]
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=hover_text(findings, linted.rules)),
        range=finding_range(first, view.lines),
    )
