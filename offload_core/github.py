"""GitHub Actions workflow commands: the `::error file=...,line=...::message` annotations CI shows on a diff.

The linter (`--format github`) and the profiler's gate (`--format github`)
both write them, so the format and its escaping live here, beside the rule
catalog, where both can import it without loading the offload_core
runtime. The runner splits a command at `::` and its properties at `,`
and `=`, so a message escapes `%`, CR and LF, and a property value also
`:` and `,`; anything else passes through unchanged.
"""

from __future__ import annotations

from typing import Literal

#: the annotation levels GitHub shows (its `notice` is the linter's `info`)
Level = Literal["error", "warning", "notice"]


def escape_data(text: str) -> str:
    """A message as a workflow command carries it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value (file name, title) as a workflow command carries it."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(
    level: Level,
    message: str,
    *,
    file: str | None = None,
    line: int | None = None,
    col: int | None = None,
    end_line: int | None = None,
    end_column: int | None = None,
    title: str | None = None,
) -> str:
    """One annotation line; properties that are None are left out, the rest keep GitHub's order."""
    props = [
        ("file", file), ("line", line), ("col", col), ("endLine", end_line), ("endColumn", end_column),
        ("title", title),
    ]
    given = ",".join(f"{name}={escape_property(str(value))}" for name, value in props if value is not None)
    return f"::{level}{' ' + given if given else ''}::{escape_data(message)}"
