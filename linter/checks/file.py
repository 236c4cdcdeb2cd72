"""What a check sees of one file, and how it reports.

Positions are resolved lazily: LibCST computes them with a full code
generation pass, which a file without findings never needs, so the first
`report` pays for it and the rest reuse it. The module is wrapped without
the deep copy MetadataWrapper makes by default, so the nodes the index
recorded are the nodes the positions are keyed by.

Message fields named `*_line` (the loop at line {loop_line}) are line
numbers; in a notebook `line_label` turns them into a cell's terms. A rule
that reports per iteration says where with `{where}`: "iteration of the
loop at line 12" from `loop_line`, or a hot function's call (`where_text`).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from ..analysis.scopes import ModuleIndex
from ..analysis.semantics import Semantics
from ..config.rules import RuleSettings
from ..findings import Edit, Finding, Fix


# The rules of per-iteration costs (copies, waits, metric reads): none holds in code JAX only traces.
PER_RUN_RULES = ("OFF1", "OFF3")


class CheckedFile:
    def __init__(
        self, source: str, index: ModuleIndex, sem: Semantics, settings: RuleSettings,
        line_label: Callable[[int], str] | None = None,
    ) -> None:
        self.source = source
        self.line_label = line_label
        self.module = index.module
        self.index = index
        self.sem = sem
        self.settings = settings
        self.findings: list[Finding] = []
        self._positions: Mapping[cst.CSTNode, CodeRange] | None = None
        self._line_starts: list[int] | None = None
        self._seen: set[tuple[str, int, int]] = set()
        self._traced_spans: list[tuple[int, int]] | None = None

    @property
    def path(self) -> str:
        """The file's path as the run shows it."""
        return self.sem.functions.path

    def enabled(self, *codes: str) -> bool:
        return any(c in self.settings.enabled for c in codes)

    def options(self, code: str) -> Mapping[str, Any]:
        return self.settings.options.get(code, {})

    # -- positions ------------------------------------------------------------------

    def range(self, node: cst.CSTNode) -> CodeRange:
        if self._positions is None:
            self._positions = positions(self.module)
        return self._positions[node]

    def line(self, node: cst.CSTNode) -> int:
        return self.range(node).start.line

    def offset(self, line: int, column: int) -> int:
        """Character offset of a 1-based line and 0-based column (LibCST's convention)."""
        if self._line_starts is None:
            starts = [0]
            for i, ch in enumerate(self.source):
                if ch == "\n":
                    starts.append(i + 1)
            self._line_starts = starts
        return self._line_starts[line - 1] + column

    def span(self, node: cst.CSTNode) -> tuple[int, int]:
        r = self.range(node)
        return self.offset(r.start.line, r.start.column), self.offset(r.end.line, r.end.column)

    def line_span(self, node: cst.CSTNode) -> tuple[int, int]:
        """From the start of the node's first line to just past the newline of its last line."""
        r = self.range(node)
        start = self.offset(r.start.line, 0)
        end = self.source.find("\n", self.offset(r.end.line, r.end.column))
        return start, (len(self.source) if end < 0 else end + 1)

    def indent_of(self, node: cst.CSTNode) -> str:
        r = self.range(node)
        line = self.source[self.offset(r.start.line, 0):self.offset(r.start.line, r.start.column)]
        return line if not line.strip() else ""

    @property
    def newline(self) -> str:
        return self.module.default_newline

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    # -- reporting --------------------------------------------------------------------

    def report(self, code: str, node: cst.CSTNode, fix: Fix | None = None, **fields: Any) -> None:
        if code not in self.settings.enabled:
            return
        r = self.range(node)
        key = (code, r.start.line, r.start.column)
        if key in self._seen or code.startswith(PER_RUN_RULES) and self._traced(r.start.line):
            return
        self._seen.add(key)
        if self.line_label is not None:  # a notebook: "line 12" of the joined cells is "line 2 of cell 3"
            fields = {k: self.line_label(v) if k.endswith("_line") and isinstance(v, int) else v for k, v in fields.items()}
        if "where" not in fields and "loop_line" in fields:
            fields["where"] = f"iteration of the loop at line {fields['loop_line']}"
        message = self.settings.rules[code].format(**fields)
        self.findings.append(
            Finding(code, r.start.line, r.start.column + 1, r.end.line, r.end.column + 1, message, fix)
        )

    def _traced(self, line: int) -> bool:
        """Is the line in code that runs only while JAX traces it (`Functions.traced_only`)? What happens there
        happens once, when the program compiles: no copy or wait of the traced code recurs per iteration."""
        if self._traced_spans is None:
            functions = self.sem.functions
            self._traced_spans = [(r.start.line, r.end.line) for r in (
                self.range(node) for node, scope in self.index.functions if functions.traced_only(scope))]
        return any(start <= line <= end for start, end in self._traced_spans)

    def reported(self, code: str, node: cst.CSTNode) -> bool:
        """Has `code` been reported at `node` already (by a check that ran before)?"""
        r = self.range(node)
        return (code, r.start.line, r.start.column) in self._seen

    def fix(self, title: str, safety: str, edits: list[Edit]) -> Fix:
        return Fix(title, safety, tuple(sorted(edits, key=lambda e: (e.start, e.end))))


def positions(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    """Every node's position in `module`: LibCST's PositionProvider, run directly.

    `MetadataWrapper.resolve` also runs a batched visit of the whole tree for
    the batchable providers it was asked for, even when there are none, and
    LibCST's visit rebuilds every node: a third of the linter's CPU time on
    cupy's `cupyx/scipy`, whose files mostly have findings. The provider's
    own `_gen` (LibCST's, stable since 0.3) is the codegen pass alone; a
    LibCST without it falls back to `resolve`.
    """
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    gen = getattr(PositionProvider(), "_gen", None)
    if gen is None:
        return wrapper.resolve(PositionProvider)
    return gen(wrapper)
