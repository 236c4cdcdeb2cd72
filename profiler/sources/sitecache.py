"""Call sites from (file, line, function) keys, interned, with their source text read once.

CUPTI's callbacks and child processes' parts name a call site by its
key only; records want one `Site` object per place (with the line's text
and column), shared by every record made there and with sites a trace
already has.
"""

from __future__ import annotations

import linecache
from typing import Iterable

from ..trace.records import Site


class SiteCache:
    """(file, line, function) -> one `Site` with its source text and column; seeded with sites already known."""

    def __init__(self, known: Iterable[Site] = ()) -> None:
        self._sites: dict[tuple[str, int, str], Site] = {(s.file, s.line, s.function): s for s in known}

    def get(self, key: tuple[str, int, str] | None) -> Site | None:
        if key is None:
            return None
        site = self._sites.get(key)
        if site is None:
            raw = linecache.getline(key[0], key[1]).rstrip("\r\n")
            text = raw.strip()
            column = len(raw) - len(raw.lstrip()) + 1 if text else 1
            site = self._sites[key] = Site(key[0], key[1], key[2], text, column)
        return site
