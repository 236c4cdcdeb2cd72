"""IPython syntax in a notebook cell, turned into Python that parses, every other line and column kept.

A notebook's code cells are not Python: `%time x = f()`, `!pip install cupy`,
`files = !ls`, `np.zeros?` and `%%bash` cells are IPython. The linter parses
the cells as one Python text, so each such construct is replaced here by
Python of the same meaning for the checks, on its own line only: the line
count of a cell never changes, and no other line moves, so a position in
the parsed text is a position in the cell.

- A cell magic (`%%name` on the first line) hands the whole cell to
  something that is not Python (`%%bash`, `%%writefile`, `%%html`): the
  cell is not linted at all. `%%time`, `%%timeit`, `%%capture` and `%%prun`
  run their body as Python, so only their first line is turned into a
  comment (`%%time` -> `#%time`, the same length).
- A line magic, shell escape or help request at the start of a logical
  line (`%cd /data`, `!nvidia-smi`, `?cp.asarray`, `cp.asarray??`) becomes
  `pass` at the same indentation, so a block whose only statement it was
  still parses. `%time`, `%timeit` and `%prun` run the statement after
  their options: that statement stays where it was and the magic before it
  becomes `pass;` padded with spaces (`%time d = cp.asarray(x)` ->
  `pass; d = cp.asarray(x)`), so a copy being timed is still checked.
- An assignment from a shell escape or magic (`files = !ls`,
  `out = %sx ls`) keeps its target and assigns `0`.
- Automagic (`pip install cupy`, `cd ..` without the `%`) is recognised for
  a short list of command names, only where the line is not Python on its
  own.

- A cell whose first line is indented (pasted from inside a function) runs
  in IPython because it takes that indent off every line that starts with
  it first (`leading_indent`); so does the linter, and the notebook's map
  adds it back to the columns of findings and to the lines a fix writes.

Only the start of a logical line can be IPython syntax; a `%` or `?` that
continues a bracketed expression or sits in a string is Python's, so a
small scanner follows brackets, strings, comments and backslash
continuations from line to line. What a magic line holds after its escape
(quotes, brackets) is not scanned: a shell command's `'` opens no string.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

#: cell magics whose body is Python the kernel runs
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})
#: line magics that run the statement after their options; value: options that take an argument
STATEMENT_MAGICS = {"time": frozenset(), "timeit": frozenset("nrp"), "prun": frozenset("DTls")}
#: command names IPython runs without the `%` (automagic) that notebooks use in practice
AUTOMAGIC = frozenset({
    "pip", "conda", "mamba", "micromamba", "cd", "ls", "pwd", "mkdir", "time", "timeit", "prun", "load_ext",
    "reload_ext", "matplotlib", "env", "set_env", "run", "who", "whos", "config", "reset", "history", "xmode",
    "autoreload", "pylab",
})
_COMPOUND = frozenset({"for", "while", "if", "elif", "else", "with", "def", "class", "try", "except", "finally",
                       "async", "match", "case"})
_ESCAPES = ("%", "!", "?", "/", ",", ";")  # no Python statement starts with one of these
_HELP = re.compile(r"^\?{0,2}[\w.*]+\?{1,2}$|^\?{1,2}[\w.*]+$")
_ASSIGN = re.compile(r"^(?P<target>[A-Za-z_][\w.]*(?:\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*)(?=[!%])")
_AUTOMAGIC = re.compile(r"^(?P<word>[A-Za-z_]\w*)\s+(?P<rest>\S.*)$")
# after a command name, what makes the line Python instead: an operator, a call, an attribute, a keyword
_PYTHONIC_REST = re.compile(r"^(?:[=(\[,:+\-*/%<>&|^@!~]|\.[A-Za-z_]|(?:and|or|in|is|not|if|else|for)\b)")


@dataclass(frozen=True)
class CellCode:
    """A cell as Python: `code` has the cell's lines (same count), `changed` the 0-based lines rewritten.

    `indent` is the whitespace IPython strips from a cell whose first line
    is indented, and `dedented` the 0-based lines it was taken from
    (`leading_indent`): their columns in `code` are `len(indent)` less.
    """

    code: str
    changed: frozenset[int]
    indent: str = ""
    dedented: frozenset[int] = frozenset()


def to_python(source: str) -> CellCode | None:
    """The cell's text as Python, or None for a cell that a non-Python cell magic runs."""
    lines = source.split("\n")
    changed: set[int] = set()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    indent, dedented = leading_indent(lines, first)
    if first is not None and lines[first].lstrip().startswith("%%"):
        name = _magic_name(lines[first].lstrip()[2:])
        if name not in PYTHON_CELL_MAGICS:
            return None
        lines[first] = lines[first].replace("%", "#", 1)
        changed.add(first)
    depth, quote, continued = 0, None, False
    i = 0
    while i < len(lines):
        line = lines[i]
        replaced = None
        if depth == 0 and quote is None and not continued and i not in changed:
            replaced = _neutralise(line)
        if replaced is None:
            depth, quote, continued = _advance(line, depth, quote)
        else:
            lines[i] = replaced
            changed.add(i)
            if replaced.lstrip(" \t").startswith("pass;"):  # a timed statement: Python from here on
                depth, quote, continued = _advance(replaced, 0, None)
            else:
                # a backslash at the end of an escaped line continues the command on the next lines
                while _ends_with_backslash(line) and i + 1 < len(lines):
                    i += 1
                    line = lines[i]
                    lines[i] = ""
                    changed.add(i)
                depth, quote, continued = 0, None, False
        i += 1
    return CellCode("\n".join(lines), frozenset(changed), indent, dedented)


def leading_indent(lines: list[str], first: int | None) -> tuple[str, frozenset[int]]:
    """Strip, in place, the indentation of the cell's first line from every line that starts with it.

    IPython does this before it runs a cell (its `leading_indent` clean-up,
    after dropping blank leading lines), so a cell pasted with a uniform
    indent runs in Jupyter; parsed as it stands, it would be a syntax error.
    Returns the indent and the lines it was taken from.
    """
    if first is None:
        return "", frozenset()
    head = lines[first]
    indent = head[: len(head) - len(head.lstrip(" \t"))]
    if not indent:
        return "", frozenset()
    dedented = set()
    for i in range(first, len(lines)):
        if lines[i].startswith(indent):
            lines[i] = lines[i][len(indent):]
            dedented.add(i)
    return indent, frozenset(dedented)


def _magic_name(text: str) -> str:
    match = re.match(r"[\w.]*", text)
    return match.group(0) if match else ""


def _ends_with_backslash(line: str) -> bool:
    return line.rstrip("\r").endswith("\\")


def _neutralise(line: str) -> str | None:
    """The Python that replaces `line` if it starts a logical line with IPython syntax, else None."""
    body = line.rstrip("\r")
    ending = line[len(body):]
    stripped = body.lstrip(" \t")
    if not stripped or stripped.startswith("#"):
        return None
    indent = body[: len(body) - len(stripped)]
    if stripped.startswith(_ESCAPES):
        if stripped.startswith("%") and not stripped.startswith("%%"):
            kept = _timed_statement(stripped)
            if kept is not None:
                return indent + kept + ending
        return indent + "pass" + ending
    if "?" in stripped and _HELP.match(stripped.rstrip()):
        return indent + "pass" + ending
    assign = _ASSIGN.match(stripped) if "!" in stripped or "%" in stripped else None
    if assign is not None:
        return indent + assign.group("target") + "0" + ending
    words = stripped.split(None, 1)  # empty for a line of Unicode spaces (`\x85`) that lstrip(" \t") kept
    auto = _AUTOMAGIC.match(stripped) if words and words[0] in AUTOMAGIC else None
    if auto is not None and auto.group("word") in AUTOMAGIC and not _PYTHONIC_REST.match(auto.group("rest")):
        try:
            ast.parse(stripped)
        except SyntaxError:
            return indent + "pass" + ending
    return None


def _timed_statement(stripped: str) -> str | None:
    """`pass;` plus the statement `%time`/`%timeit`/`%prun` runs, at its own column; None if there is none."""
    name = _magic_name(stripped[1:])
    takes_value = STATEMENT_MAGICS.get(name)
    if takes_value is None:
        return None
    position = 1 + len(name)
    while True:  # skip the options: -n 10, -r3, -q, -s cumulative
        match = re.compile(r"\s+").match(stripped, position)
        if match is None:
            return None
        position = match.end()
        option = re.compile(r"-(\w)(\S*)").match(stripped, position)
        if option is None:
            break
        position = option.end()
        if option.group(1) in takes_value and not option.group(2):
            value = re.compile(r"\s+\S+").match(stripped, position)
            if value is None:
                return None
            position = value.end()
    statement = stripped[position:]
    first_word = re.match(r"[A-Za-z_]\w*|@", statement)
    if not statement or (first_word is not None and first_word.group(0) in _COMPOUND | {"@"}):
        return None
    if position < len("pass; "):
        return None
    return "pass;" + " " * (position - len("pass;")) + statement


_SIGNIFICANT = re.compile(r"[#()\[\]{}'\"]")
_STRING_END = {q: re.compile(r"\\.|" + re.escape(q), re.S) for q in ("'", '"', "'''", '"""')}


def _advance(line: str, depth: int, quote: str | None) -> tuple[int, str | None, bool]:
    """Bracket depth, open string and backslash continuation after `line`, from the state before it."""
    i, n = 0, len(line)
    while i < n:
        if quote is not None:  # inside a string: only a backslash or the closing quote matter
            match = _STRING_END[quote].search(line, i)
            if match is None:
                break
            i = match.end()
            if match.group(0) == quote:
                quote = None
            continue
        match = _SIGNIFICANT.search(line, i)
        if match is None:
            break
        ch, i = match.group(0), match.start()
        if ch == "#":
            return depth, None, False
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        else:
            triple = line[i:i + 3]
            quote = triple if triple in ("\'\'\'", '"""') else ch
            i += len(quote)
            continue
        i += 1
    body = line.rstrip("\r")
    continued = quote is None and body.endswith("\\")
    if quote in ("'", '"'):  # a one-line string ends at the line's end unless a backslash continues it
        if not body.endswith("\\"):
            quote = None
    return depth, quote, continued
