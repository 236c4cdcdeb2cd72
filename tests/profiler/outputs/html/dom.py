"""A page's elements by id, read with the standard library's HTML parser: what a test looks up in the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"meta", "br", "img", "input", "link", "hr", "col", "area", "base", "embed", "source", "track", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    text: str = ""
    children: list[Element] = field(default_factory=list)


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.stack = [self.root]
        self.tags: list[Element] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = Element(tag, {k: v or "" for k, v in attrs})
        self.stack[-1].children.append(el)
        self.tags.append(el)
        if tag not in VOID:
            self.stack.append(el)

    def handle_endtag(self, tag: str) -> None:
        while len(self.stack) > 1:
            if self.stack.pop().tag == tag:
                break

    def handle_data(self, data: str) -> None:
        for el in self.stack[1:]:
            el.text += data


@dataclass
class Page:
    elements: list[Element]

    def by_id(self, ident: str) -> Element:
        found = [e for e in self.elements if e.attrs.get("id") == ident]
        assert len(found) == 1, f"{len(found)} elements with id {ident!r}"
        return found[0]

    def ids(self, prefix: str) -> list[str]:
        return [e.attrs["id"] for e in self.elements if e.attrs.get("id", "").startswith(prefix)]

    def tags(self, tag: str) -> list[Element]:
        return [e for e in self.elements if e.tag == tag]


def parse(html: str) -> Page:
    reader = _Reader()
    reader.feed(html)
    reader.close()
    return Page(reader.tags)


def cells(row: Element) -> list[str]:
    """The text of a table row's cells, stripped."""
    return [" ".join(c.text.split()) for c in row.children if c.tag in ("td", "th")]
