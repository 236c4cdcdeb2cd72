"""Path patterns as the configuration writes them (`exclude`, `per-file-ignores`, contexts).

A pattern without a slash matches any part of a relative path (a folder or
the file name: `tests`, `test_*.py`); one with a slash matches the path
itself or a folder above the file (`src/legacy`, `benchmarks/*.py`). Both
use fnmatch's wildcards. The regexes are compiled once per pattern set:
discovery asks for every file of a tree.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from typing import Iterable


@functools.lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """One regex for the component patterns, one for the path patterns (fnmatch semantics)."""
    parts = [fnmatch.translate(p.rstrip("/")) for p in patterns if "/" not in p.rstrip("/")]
    paths = [fnmatch.translate(p.rstrip("/")) for p in patterns if "/" in p.rstrip("/")]
    return (re.compile("|".join(parts)) if parts else None, re.compile("|".join(paths)) if paths else None)


def matches(rel: str, patterns: Iterable[str]) -> bool:
    """Does any pattern match the relative path `rel` (posix separators)?"""
    component, path = _compiled(tuple(patterns))
    parts = rel.split("/")
    if component is not None and any(component.match(part) for part in parts):
        return True
    if path is not None:
        return any(path.match("/".join(parts[:i])) for i in range(1, len(parts) + 1))
    return False
