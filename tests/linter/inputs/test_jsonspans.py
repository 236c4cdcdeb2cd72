"""Spans of JSON values, offsets inside string literals, and line/column positions."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from linter.inputs import jsonspans

TEXT = '{ "a" : [1, {"b": "x"}] ,\n  "c":"d\\"e",  "a": [ ] , "e" : {"f": [true, null]}\n}'


def test_members_give_each_key_and_the_exact_span_of_its_value_duplicates_included() -> None:
    got = [(key, TEXT[start:end]) for key, start, end in jsonspans.members(TEXT, 0)]
    assert got == [("a", '[1, {"b": "x"}]'), ("c", '"d\\"e"'), ("a", "[ ]"), ("e", '{"f": [true, null]}')]
    assert list(jsonspans.members("{ }", 0)) == []


def test_elements_give_each_item_span() -> None:
    text = '[ "x\\n" , 2.5e3,[],{"k": [1]} ]'
    assert [text[a:b] for a, b in jsonspans.elements(text, 0)] == ['"x\\n"', "2.5e3", "[]", '{"k": [1]}']
    assert list(jsonspans.elements("[\n ]", 0)) == []


def test_string_offsets_map_each_decoded_character_to_its_escape() -> None:
    literal = '"a\\tb\\u00e9\\ud83d\\ude00c\\\\"'
    value = json.loads(literal)
    assert value == "a\tb\u00e9\U0001F600c\\"
    offsets = jsonspans.string_offsets(literal)
    assert len(offsets) == len(value) + 1
    assert [literal[o] for o in offsets[:-1]] == ["a", "\\", "b", "\\", "\\", "c", "\\"]
    assert offsets[4] == literal.index("\\ud83d") and offsets[5] == literal.index("c")
    assert offsets[-1] == len(literal) - 1


@given(st.text())
def test_string_offsets_agree_with_the_decoder_for_any_text(value: str) -> None:
    for ensure_ascii in (True, False):
        literal = json.dumps(value, ensure_ascii=ensure_ascii)
        offsets = jsonspans.string_offsets(literal)
        assert len(offsets) == len(value) + 1
        for k in range(len(value)):  # the literal from each offset decodes to the rest of the value
            assert json.loads('"' + literal[offsets[k]:]) == value[k:]


def test_line_index_positions_are_one_based_lines_and_columns() -> None:
    index = jsonspans.FileLines("ab\ncd\n\nef")
    assert [index.position(i) for i in (0, 1, 2, 3, 5, 6, 7, 8)] == [
        (1, 1), (1, 2), (1, 3), (2, 1), (2, 3), (3, 1), (4, 1), (4, 2)
    ]
