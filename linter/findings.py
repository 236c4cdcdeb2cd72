"""The records a lint produces: findings, their fixes, and the result for one file.

They are frozen and made of plain values so that a worker process can send
them back, the cache can store them, and every reporter reads the same
thing. Positions are 1-based lines and columns (columns count code points,
as editors do); fix edits are offsets into the decoded source text. In a
notebook, `cell` is the 1-based number of the cell (every cell counted) and
the line is a line of that cell; fix edits stay offsets into the Python
text the linter read (notebooks.py maps them back).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from offload_core.catalog import FixSafety


@dataclass(frozen=True)
class Edit:
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class Fix:
    title: str
    safety: FixSafety  # "safe" or "unsafe": a fix with safety "none" is not offered
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Finding:
    code: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    fix: Fix | None = None
    suppressed: bool = False
    cell: int | None = None

    def suppress(self) -> Finding:
        return replace(self, suppressed=True)

    def fixable(self, unsafe: bool) -> bool:
        return self.fix is not None and (self.fix.safety == "safe" or unsafe)

    @property
    def sort_key(self) -> tuple[int, int, int, str]:
        return (self.cell or 0, self.line, self.column, self.code)


@dataclass(frozen=True)
class FileResult:
    """Everything one file yields. `exports`/`needs` feed the cross-file kernel index."""

    path: str
    findings: tuple[Finding, ...] = ()
    exports: tuple = ()  # KernelSig records defined at module level
    needs: tuple[tuple[str, str | None], ...] = ()  # (qualified kernel name, digest seen or None)
    skipped: bool = False  # the prefilter found no known API
    error: str | None = None  # an internal error while checking this file
    source: str | None = field(default=None, compare=False)  # decoded text, kept only when fixing
    summary: object = None  # its functions for the project's call graph (an analysis.callgraph.Summary)
    told: tuple[str, ...] = ()  # the functions the project told it were hot (from other files' loops)
    tests: bool | None = None  # does its code test something (test functions, pytest/unittest)? None: not read
