"""Jupyter notebooks, linted in place: code cells as one Python text, findings placed by cell and line.

Most GPU tutorials are notebooks. A notebook's code cells run in order in
one interpreter, so names flow from cell to cell (`import cupy as cp` in
cell 1, the loop in cell 4): the linter parses them as one text, the code
cells joined in order with a marker comment line between two cells. The
marker changes nothing Python sees, and after a fix it says where each
cell's new text begins, however many lines the fix added or removed.
Markdown and raw cells, and cells a non-Python cell magic runs (`%%bash`),
are left out; IPython syntax inside the others becomes Python of the same
line and column layout (see magics.py).

Positions: a finding's line in the joined text maps to a cell (1-based,
every cell of the notebook counted, as Jupyter shows them) and a line in
that cell; columns are unchanged. The map (`CellMap`) is small, so the
worker processes get it instead of the notebook.

Writing back: only the `"source"` values of the cells a fix changed are
replaced, each in the style it had (a list of lines with its own
indentation and separators, or one string); unchanged lines keep their
exact JSON text. Every other byte of the file (outputs, metadata, other
cells, key order, indentation, the final newline) is copied. The result
is parsed again and compared with what was meant before anything is
written. A fix that would have to change IPython syntax is refused.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from ..findings import FileResult, Finding
from . import jsonspans
from .magics import to_python

SUFFIX = ".ipynb"
_BOM = b"\xef\xbb\xbf"
_ON_LINE = re.compile(r"\b(on|at) line (\d+)\b")


class NotebookError(ValueError):
    """Not a notebook the linter can read: the message is the one-line OFF902 reason, at `line`/`column` of the file."""

    def __init__(self, reason: str, line: int = 1, column: int = 1) -> None:
        super().__init__(reason)
        self.line = line
        self.column = column


class NotebookFixError(ValueError):
    """A fix that cannot be written back into the notebook; the message is one line."""


def is_notebook(path: str | Path) -> bool:
    return str(path).lower().endswith(SUFFIX)


@dataclass(frozen=True)
class CellPlace:
    """One linted cell in the joined text: its number in the notebook and its lines there."""

    number: int  # 1-based, every cell of the notebook counted
    first: int  # its first line in the joined text
    lines: int
    indent: int = 0  # columns IPython's leading-indent clean-up took off `dedented` (see magics.leading_indent)
    dedented: frozenset[int] = frozenset()  # 1-based lines of the cell


@dataclass(frozen=True)
class CellMap:
    """Joined-text lines to cells: all a worker needs to report in a notebook's terms."""

    places: tuple[CellPlace, ...]

    def where(self, line: int) -> tuple[int, int]:
        """(cell number, line in the cell) of a line of the joined text; a marker line counts as its cell's last."""
        place = self._place_of(line)
        if place is None:
            return 1, line
        return place.number, max(1, min(line - place.first + 1, place.lines))

    def _place_of(self, line: int) -> CellPlace | None:
        if not self.places:
            return None
        place = self.places[0]
        for candidate in self.places:
            if candidate.first > line:
                break
            place = candidate
        return place

    def column(self, line: int, column: int) -> int:
        """The column in its cell of a column of the joined text (more where the cell's common indent was taken off)."""
        place = self._place_of(line)
        if place is None or not place.indent or line - place.first + 1 not in place.dedented:
            return column
        return column + place.indent

    def label(self, line: int) -> str:
        """A line of the joined text as messages name it: `2 of cell 3` (after the word `line`)."""
        cell, local = self.where(line)
        return f"{local} of cell {cell}"

    def locate(self, result: FileResult) -> FileResult:
        """`result` with each finding placed in its cell."""
        if not result.findings or not self.places:
            return result
        return replace(result, findings=tuple(self._place(f) for f in result.findings))

    def _place(self, finding: Finding) -> Finding:
        cell, line = self.where(finding.line)
        end_cell, end_line = self.where(finding.end_line)
        if end_cell != cell:  # a span that runs past its cell (only an unclosed bracket can): end it there
            end_line = next(p.lines for p in self.places if p.number == cell)
        message = finding.message
        if finding.code == "OFF901":  # CPython's "... on line 3", "(detected at line 9)" name joined lines
            message = _ON_LINE.sub(lambda m: f"{m.group(1)} line {self.label(int(m.group(2)))}", message)
        return replace(finding, cell=cell, line=line, end_line=end_line, message=message,
                       column=self.column(finding.line, finding.column),
                       end_column=self.column(finding.end_line, finding.end_column))


@dataclass(frozen=True)
class CodeCell:
    """A linted code cell: its text, its text as Python, and where its source sits in the file."""

    number: int
    source: str
    code: str
    changed: frozenset[int]  # 0-based lines whose IPython syntax `code` replaces
    indent: str  # what IPython takes off the start of `dedented` (0-based lines) before running the cell
    dedented: frozenset[int]
    span: tuple[int, int]  # the "source" value in the notebook's text
    pieces: tuple[tuple[int, int], ...]  # its string literals: one per list item, or the one string


@dataclass(frozen=True)
class Notebook:
    """A parsed notebook: its JSON text, the code cells the linter reads, and their joined Python."""

    text: str
    bom: bool
    cells: tuple[CodeCell, ...]
    python: bool  # False for a notebook whose kernel runs another language
    marker: str

    @staticmethod
    def parse(data: bytes) -> Notebook:
        """The notebook in `data`; a `NotebookError` says in one line why it is not one."""
        bom = data.startswith(_BOM)
        try:
            text = data[len(_BOM) if bom else 0:].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NotebookError(f"not a notebook: not UTF-8 ({exc.reason} at byte {exc.start})") from None
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise NotebookError(f"not a notebook: invalid JSON ({exc.msg})", exc.lineno, exc.colno) from None
        except RecursionError:
            raise NotebookError("not a notebook: JSON nested too deeply") from None
        if not isinstance(document, dict):
            raise NotebookError(f"not a notebook: the JSON is {_kind(document)}, not an object with \"cells\"")
        if not isinstance(document.get("cells"), list):
            hint = " (an nbformat 3 notebook: convert it with `jupyter nbconvert --to notebook`)" if "worksheets" in document else ""
            raise NotebookError(f"not a notebook: no \"cells\" list{hint}")
        try:
            return Notebook._build(text, bom, document)
        except RecursionError:
            raise NotebookError("not a notebook: JSON nested too deeply") from None

    @staticmethod
    def from_cells(cells: list[tuple[str, str]]) -> Notebook:
        """A notebook as an editor holds it, from its cells' (`cell_type`, source) in order.

        The language server has the cells, not the file; laid out as JSON,
        they give the same Python, cell map and cache key as the file would.
        """
        document = {
            "cells": [{"cell_type": kind, "metadata": {}, "source": source} for kind, source in cells],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5,
        }
        return Notebook.parse(json.dumps(document, indent=1).encode("ascii"))

    @staticmethod
    def _build(text: str, bom: bool, document: dict[str, Any]) -> Notebook:
        lines = jsonspans.FileLines(text)
        # duplicate keys: json.loads keeps the last, and so does every walk below
        cells_at = [start for key, start, _ in jsonspans.members(text, 0) if key == "cells"][-1]
        code: list[CodeCell] = []
        for number, ((start, _), cell) in enumerate(zip(jsonspans.elements(text, cells_at), document["cells"]), 1):
            if not isinstance(cell, dict) or not isinstance(cell.get("cell_type"), str):
                raise NotebookError(f"not a notebook: cell {number} has no \"cell_type\"", *lines.position(start))
            if cell["cell_type"] != "code":
                continue
            source = cell.get("source", "")
            if isinstance(source, list) and all(isinstance(s, str) for s in source):
                source = "".join(source)
            if not isinstance(source, str):
                raise NotebookError(f"not a notebook: the \"source\" of cell {number} is not text", *lines.position(start))
            spans = [(a, b) for key, a, b in jsonspans.members(text, start) if key == "source"]
            if not spans:
                continue  # a code cell without source holds nothing to lint (and nothing to fix)
            span = spans[-1]
            pieces = tuple(jsonspans.elements(text, span[0])) if text[span[0]] == "[" else (span,)
            python = to_python(source)
            if python is not None:
                code.append(CodeCell(number, source, python.code, python.changed, python.indent, python.dedented,
                                     span, pieces))
        return Notebook(text, bom, tuple(code), _is_python(document), _marker([c.code for c in code]))

    @property
    def data(self) -> bytes:
        """The file's bytes (UTF-8 decoding is exact, so they are the bytes that were read)."""
        return (_BOM if self.bom else b"") + self.text.encode("utf-8")

    # -- the Python the linter reads ------------------------------------------------------

    @cached_property
    def code(self) -> str:
        """The linted cells' Python, joined by marker lines, ending with a newline ("" without cells)."""
        if not self.cells:
            return ""
        return f"\n{self.marker}\n".join(c.code for c in self.cells) + "\n"

    @cached_property
    def map(self) -> CellMap:
        places, first = [], 1
        for cell in self.cells:
            count = cell.code.count("\n") + 1
            places.append(CellPlace(cell.number, first, count, len(cell.indent),
                                    frozenset(i + 1 for i in cell.dedented)))
            first += count + 1
        return CellMap(tuple(places))

    @property
    def cache_data(self) -> bytes:
        """What the results cache keys the notebook by: its cells' Python and where each cell lies.

        Not the file's bytes: running a notebook again (new outputs, same
        code) keeps its entry, and an editor, which holds the cells but not
        the file, finds the same entry as the command line.
        """
        layout = ",".join(f"{p.number}:{p.first}:{p.lines}" + (f":{p.indent}" if p.indent else "") for p in self.map.places)
        return f"{layout}\n{self.code}".encode("utf-8", "surrogatepass")

    # -- fixes ----------------------------------------------------------------------------

    def fixed_sources(self, code: str) -> dict[int, str]:
        """The new source of each cell that the fixed Python `code` changes, by cell number."""
        body = code[:-1] if code.endswith("\n") else code
        parts = body.split(f"\n{self.marker}\n") if self.cells else []
        if len(parts) != len(self.cells):
            raise NotebookFixError("a fix moved code across a cell boundary; the notebook is unchanged")
        out: dict[int, str] = {}
        for cell, new in zip(self.cells, parts):
            if new != cell.code:
                out[cell.number] = _restore(cell, new)
        return out

    def rewrite(self, code: str) -> bytes:
        """The notebook's bytes with the fixed Python `code` in its cells; nothing else changes."""
        sources = self.fixed_sources(code)
        text = self.text
        by_number = {c.number: c for c in self.cells}
        for number in sorted(sources, reverse=True):  # back to front, so earlier spans stay valid
            cell = by_number[number]
            start, end = cell.span
            text = text[:start] + self._encode(cell, sources[number]) + text[end:]
        self._verify(text, sources)
        return (_BOM if self.bom else b"") + text.encode("utf-8")

    def diff(self, display: str, code: str) -> str:
        """A unified diff per changed cell, each headed `a/PATH:cell N`."""
        out = []
        by_number = {c.number: c for c in self.cells}
        for number, new in self.fixed_sources(code).items():
            old = by_number[number].source
            out.extend(difflib.unified_diff(
                _diff_lines(old), _diff_lines(new), f"a/{display}:cell {number}", f"b/{display}:cell {number}"
            ))
        return "".join(out)

    def _encode(self, cell: CodeCell, source: str) -> str:
        """`source` as the JSON value of the cell's "source", in the style the file gave it."""
        ascii_only = self.text.isascii()
        reuse = {json.loads(self.text[a:b]): self.text[a:b] for a, b in cell.pieces}

        def literal(value: str) -> str:
            if value in reuse:
                return reuse[value]
            lone_surrogate = any(0xD800 <= ord(ch) < 0xE000 for ch in value)
            return json.dumps(value, ensure_ascii=ascii_only or lone_surrogate)

        start, end = cell.span
        if self.text[start] != "[":
            return literal(source)
        lines = re.findall(r"[^\n]*\n|[^\n]+", source)
        if not lines:
            return "[]"
        if cell.pieces:
            opening = self.text[start + 1:cell.pieces[0][0]]
            closing = self.text[cell.pieces[-1][1]:end - 1]
            if len(cell.pieces) > 1:
                between = self.text[cell.pieces[0][1]:cell.pieces[1][0]]
            else:  # one item: a new one goes on its own line where the list has lines, else after ", "
                between = "," + (opening if "\n" in opening else " ")
        else:  # `[]` before: lay the list out as Jupyter does, one item a line, one space deeper than the key
            line_start = self.text.rfind("\n", 0, start) + 1
            indent = re.match(r"[ \t]*", self.text[line_start:]).group(0)  # type: ignore[union-attr]
            opening, closing = f"\n{indent} ", f"\n{indent}"
            between = "," + opening
        return "[" + opening + between.join(literal(line) for line in lines) + closing + "]"

    def _verify(self, text: str, sources: dict[int, str]) -> None:
        """Parse the rewritten text: the document as before except the changed sources, which hold what was meant."""
        before = json.loads(self.text, parse_constant=str)  # NaN as a string: NaN != NaN would fail the comparison
        try:
            after = json.loads(text, parse_constant=str)
        except json.JSONDecodeError:  # a bug of ours: never written
            raise NotebookFixError("rewriting the notebook produced invalid JSON; the notebook is unchanged") from None
        for number, source in sources.items():
            got = after["cells"][number - 1].get("source")
            if ("".join(got) if isinstance(got, list) else got) != source:
                raise NotebookFixError(f"rewriting cell {number} went wrong; the notebook is unchanged")
            before["cells"][number - 1]["source"] = after["cells"][number - 1]["source"] = None
        if before != after:
            raise NotebookFixError("rewriting the notebook changed more than the fixed cells; the notebook is unchanged")

    # -- positions in the file ------------------------------------------------------------

    @cached_property
    def _lines(self) -> jsonspans.FileLines:
        return jsonspans.FileLines(self.text)

    def file_position(self, cell_number: int, line: int, column: int) -> tuple[int, int]:
        """Where a cell's line and column sit in the .ipynb file (1-based line, column in code points).

        That is the place GitHub shows and code scanning annotates: the
        character inside the JSON string that holds the source line.
        """
        cell = next((c for c in self.cells if c.number == cell_number), None)
        if cell is None:  # not a linted cell: the file's start is the honest answer
            return 1, 1
        lines = cell.source.split("\n")
        line = max(1, min(line, len(lines)))
        offset = sum(len(text) + 1 for text in lines[: line - 1]) + max(0, min(column - 1, len(lines[line - 1])))
        for n, (start, end) in enumerate(cell.pieces):
            offsets = jsonspans.string_offsets(self.text[start:end])
            chars = len(offsets) - 1
            if offset < chars or n == len(cell.pieces) - 1:
                return self._lines.position(start + offsets[min(offset, chars)])
            offset -= chars
        return self._lines.position(cell.span[0])  # an empty source list


def _kind(value: object) -> str:
    names = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}
    return names.get(type(value), "null")


def _is_python(document: dict[str, Any]) -> bool:
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        return True
    for key, field in (("language_info", "name"), ("kernelspec", "language")):
        table = metadata.get(key)
        if isinstance(table, dict) and isinstance(table.get(field), str):
            return table[field].lower() == "python"
    return True


def _marker(codes: list[str]) -> str:
    """A comment line found in no cell, to join the cells with."""
    digest = hashlib.blake2b("\0".join(codes).encode("utf-8", "surrogatepass"), digest_size=6)
    while True:
        marker = f"# offload-lint: cell boundary {digest.hexdigest()}"
        if not any(marker in code for code in codes):
            return marker
        digest.update(b"+")


def _restore(cell: CodeCell, new: str) -> str:
    """The cell's new source: the fixed Python with the IPython lines it did not touch put back.

    In a cell IPython runs dedented (`CodeCell.indent`), the lines a fix
    wrote get that indent back, so that the cell still runs the same way.
    """
    if not cell.changed and not cell.indent:
        return new
    old_lines, source_lines, new_lines = cell.code.split("\n"), cell.source.split("\n"), new.split("\n")
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out.extend(source_lines[i1:i2])
            continue
        touched = [k for k in range(i1, i2) if k in cell.changed]
        if touched:
            raise NotebookFixError(
                f"a fix would change the IPython line {touched[0] + 1} of cell {cell.number}; the notebook is unchanged"
            )
        out.extend(cell.indent + line if line.strip() else line for line in new_lines[j1:j2])
    return "\n".join(out)


def _diff_lines(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return lines
