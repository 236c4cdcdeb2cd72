"""Applying fixes: `--fix` and `--diff` apply them file by file until nothing applicable is left.

Three words, three ideas: a rule's *advice* is its prose on how to change
the code (the catalog's `fix:` text); a *fix* is the change one finding
offers (`Fix`, made of `Edit`s, built by `checks.fixes`); *applying* puts
fixes into text and files, here.

Each round applies the non-overlapping applicable fixes of one file, then
lints the new text again (fresh positions, fresh findings): fixes that
touched the same lines land in the next round, and a fix can never be
applied to code that has moved. If a round produced code that no longer
parses (a bug in a fix), the file keeps the last text that did, and the
user is told. Ten rounds bound the loop.

Fixed files are written by `rewrite.write_fixed` (whole or not at all); a
write that fails (no permission, a full disk, a file-size limit) leaves the
file as it was, counts nothing as fixed, and makes the command exit 2.

A notebook is fixed as the Python of its cells; `Notebook.rewrite` puts the
changed cells back into the file, and `--diff` shows the change per cell.
A fix it refuses (one that would change a line of IPython syntax) leaves
the notebook as it was and is named on stderr, like a fix that broke the
code.
"""

from __future__ import annotations

import difflib
import sys
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Callable, Iterable

from ..findings import Edit, FileResult, Finding, Fix
from ..inputs.notebooks import Notebook, NotebookFixError
from .rewrite import write_fixed

if TYPE_CHECKING:
    from ..run.runner import Job, RunResult
    from ..run.session import Session

ROUNDS = 10


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


@dataclass
class Applied:
    """What `--fix` or `--diff` did: findings fixed, files changed, the diff, notes and write failures."""

    fixed: int = 0
    files: int = 0
    diff: str = ""
    notes: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # display paths whose fixed text could not be written


def _applicable(session: Session, result: FileResult) -> list[Finding]:
    return [f for f in session.visible(result) if not f.suppressed and f.fixable(session.unsafe)]


def apply_rounds(
    text: str,
    result: FileResult,
    relint: Callable[[str], FileResult],
    applicable: Callable[[FileResult], list[Finding]],
    accept: Callable[[str, Fix], bool] | None = None,
) -> tuple[str, FileResult, str | None]:
    """Fix rounds on one text: (final text, its result, a note if a round had to be undone).

    `accept(text, fix)`, where given, vetoes single fixes (in a notebook: one
    that would rewrite a line of IPython syntax); the others still apply.
    """
    current = result
    for _ in range(ROUNDS):
        fixes = [f.fix for f in applicable(current) if f.fix is not None]
        if accept is not None:
            fixes = [fix for fix in fixes if accept(text, fix)]
        if not fixes:
            break
        new_text, applied = apply_fixes(text, fixes)
        if not applied or new_text == text:
            break
        again = relint(new_text)
        if again.error is not None or any(f.code == "OFF901" for f in again.findings):
            return text, current, "a fix produced code that does not parse; kept the last good version"
        text, current = new_text, again
    return text, current, None


def _writable(notebook: Notebook, code: str, fix: Fix) -> bool:
    """Can `fix`, applied to a notebook's Python `code`, be written back (no line of IPython syntax changed)?"""
    try:
        notebook.fixed_sources(apply_fixes(code, [fix])[0])
    except NotebookFixError:
        return False
    return True


def apply_to_files(session: Session, run: RunResult, write: bool) -> Applied:
    from ..run.engine import lint_text

    outcome = Applied()
    for n, result in enumerate(run.results):
        job = run.jobs.get(result.path)
        if job is None or not _applicable(session, result):
            continue
        before = len([f for f in session.visible(result) if not f.suppressed])

        def relint(new_text: str, job: Job = job) -> FileResult:
            return lint_text(
                new_text, session.settings, session.apis, run.index,
                path=job.display, module_name=job.module_name, is_package=job.is_package, cells=job.cells,
            )

        notebook = run.notebooks.get(job.display) if job.cells is not None else None
        accept = partial(_writable, notebook) if notebook is not None else None
        text, current, note = apply_rounds(job.text, result, relint, lambda r: _applicable(session, r), accept)
        if note:
            outcome.notes.append(f"{job.display}: {note}")
        if text == job.text:
            continue
        after = len([f for f in session.visible(current) if not f.suppressed])
        if not write:
            try:
                outcome.diff += notebook.diff(job.display, text) if notebook else unified_diff(job.display, job.text, text)
            except NotebookFixError as exc:
                outcome.notes.append(f"{job.display}: {exc}")
                continue
        else:
            try:
                if notebook is not None:
                    old, new = notebook.data, notebook.rewrite(text)
                else:
                    old, new = job.text.encode(job.encoding), text.encode(job.encoding)
                write_fixed(job.path, new, old)
            except NotebookFixError as exc:
                outcome.notes.append(f"{job.display}: {exc}")
                continue
            except UnicodeEncodeError as exc:
                outcome.failed.append(job.display)
                outcome.notes.append(f"{job.display}: cannot write the fixed file: the fix is not encodable as {job.encoding} ({exc.reason})")
                continue
            except OSError as exc:
                outcome.failed.append(job.display)
                outcome.notes.append(f"{job.display}: cannot write the fixed file: {exc.strerror or exc}; the file is unchanged")
                continue
            run.results[n] = replace(current, path=result.path)
            if notebook is not None:  # later positions (SARIF, GitHub) are in the fixed file
                run.notebooks[job.display] = Notebook.parse(new)
        outcome.files += 1
        outcome.fixed += max(0, before - after)
    for note in outcome.notes:
        sys.stderr.write(f"offload-lint: {note}\n")
    return outcome

