"""Where values sit in a JSON text: the spans a notebook fix rewrites and its findings point at.

`json.loads` says what a notebook holds but not where. A fixed notebook
written back with `json.dumps` would re-indent, re-escape and re-order
what the user's editor wrote, and a finding could not name the line of the
.ipynb file that GitHub shows. So this walker follows the document's
structure with the standard library's scanners and records the character
span of each value asked for; every value it does not descend into is
skipped by the decoder's C scanner (`raw_decode`), so megabytes of outputs
cost what parsing them costs.

The text must be valid JSON already (the caller ran `json.loads` and
reported errors with its positions), so the walker meets no syntax errors.
"""

from __future__ import annotations

import bisect
import json
import re
from json.decoder import scanstring
from typing import Iterator

_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def skip_space(text: str, i: int) -> int:
    match = _SPACE.match(text, i)
    return match.end() if match else i


def value_end(text: str, i: int) -> int:
    """The offset just past the JSON value that starts at `i`."""
    return _DECODER.raw_decode(text, i)[1]


def members(text: str, i: int) -> Iterator[tuple[str, int, int]]:
    """(key, value start, value end) of each member of the object that starts at `i`, in order."""
    assert text[i] == "{"
    i = skip_space(text, i + 1)
    if text[i] == "}":
        return
    while True:
        key, i = scanstring(text, i + 1)
        i = skip_space(text, skip_space(text, i) + 1)  # past the colon
        end = value_end(text, i)
        yield key, i, end
        i = skip_space(text, end)
        if text[i] == "}":
            return
        i = skip_space(text, i + 1)  # past the comma


def elements(text: str, i: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each element of the array that starts at `i`, in order."""
    assert text[i] == "["
    i = skip_space(text, i + 1)
    if text[i] == "]":
        return
    while True:
        end = value_end(text, i)
        yield i, end
        i = skip_space(text, end)
        if text[i] == "]":
            return
        i = skip_space(text, i + 1)


def string_offsets(literal: str) -> list[int]:
    """For a JSON string literal (quotes included): the offset in it of each character it decodes to.

    One more entry, the closing quote's offset, stands for the end. An
    escape (`\\n`, `\\"`, `\\u00e9`) is several characters of the literal for
    one of the value; a surrogate pair (`\\ud83d\\ude00`) is twelve for one.
    """
    out: list[int] = []
    i, last = 1, len(literal) - 1
    while i < last:
        out.append(i)
        if literal[i] != "\\":
            i += 1
        elif literal[i + 1] != "u":
            i += 2
        else:
            unit = int(literal[i + 2:i + 6], 16)
            pair = 0xD800 <= unit < 0xDC00 and literal.startswith("\\u", i + 6) and 0xDC00 <= int(literal[i + 8:i + 12], 16) < 0xE000
            i += 12 if pair else 6
    out.append(last)
    return out


class FileLines:
    """Offsets of the .ipynb file's text as 1-based lines and columns (code points), found by bisection.

    (`server.positions.LineIndex` is the editor's view of a text: LSP's line breaks and code units.)
    """

    def __init__(self, text: str) -> None:
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1] + 1
