"""Positions between the linter's convention and the Language Server Protocol's.

The linter counts 1-based lines and 1-based columns in code points, and its
fix edits are offsets (code points) into the text it read. LSP counts
0-based lines and 0-based columns in the code units the client and server
agreed on at `initialize`: UTF-16 unless the client offers another, so a
character outside the Basic Multilingual Plane (an emoji) is two units.

Lines are split here the way LSP and Python's tokenizer both split them:
at `\\r\\n`, `\\r` and `\\n` only. `str.splitlines` is not used because it
also splits at form feeds, `\\u2028` and other characters that are one
line to both the editor and the linter.

The counting of units is pygls's (`PositionCodec`, chosen from the
client's `general.positionEncodings`); this module only decides which
line and which characters are counted.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

_BREAK = re.compile(r"\r\n|\r|\n")


class LineIndex:
    """One text's line starts, for converting positions in both directions."""

    def __init__(self, text: str, codec: PositionCodec) -> None:
        self.text = text
        self.codec = codec
        self.starts = [0]
        self.ends: list[int] = []  # where each line's content ends (before its line break)
        for match in _BREAK.finditer(text):
            self.ends.append(match.start())
            self.starts.append(match.end())
        self.ends.append(len(text))

    def line(self, number: int) -> str:
        """The 0-based line's text without its line break."""
        return self.text[self.starts[number]:self.ends[number]]

    def _client(self, line: int, character: int) -> types.Position:
        line = max(0, min(line, len(self.starts) - 1))
        content = self.line(line)
        character = max(0, min(character, len(content)))
        return types.Position(line=line, character=self.codec.client_num_units(content[:character]))

    def to_client(self, line: int, column: int) -> types.Position:
        """A 1-based line and 1-based code-point column as an LSP position."""
        return self._client(line - 1, column - 1)

    def offset_to_client(self, offset: int) -> types.Position:
        """A code-point offset into the text as an LSP position."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect_right(self.starts, offset) - 1
        return self._client(line, offset - self.starts[line])

    def from_client(self, position: types.Position) -> tuple[int, int]:
        """An LSP position as a 1-based line and 1-based code-point column (clamped to the text)."""
        line = max(0, min(position.line, len(self.starts) - 1))
        units = 0
        column = 0
        for char in self.line(line):
            if units >= position.character:
                break
            units += self.codec.impl.code_units_for_char(char)
            column += 1
        return line + 1, column + 1

    @property
    def end(self) -> types.Position:
        return self.offset_to_client(len(self.text))
