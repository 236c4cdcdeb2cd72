"""`# noqa: OFF101` and `# offload: ignore[OFF101]` comments.

A finding is suppressed when the line it starts on, or the line it ends on
(a multi-line call can carry its comment after the closing parenthesis),
has a comment naming its code, or a bare `# noqa` / `# offload: ignore`
that silences everything on that line. Only lines that have findings are
looked at, so files without findings pay nothing.
"""

from __future__ import annotations

import re
from typing import Iterable

from ..findings import Finding

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+\d+(?:[\s,]+[A-Za-z]+\d+)*))?", re.I)
_IGNORE = re.compile(r"#\s*offload:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.I)
ALL = frozenset({"*"})


def codes_on(line: str) -> frozenset[str]:
    """The codes a line's comments suppress; ALL for a bare noqa/ignore."""
    if "#" not in line:
        return frozenset()
    found: set[str] = set()
    for pattern in (_NOQA, _IGNORE):
        for match in pattern.finditer(line):
            codes = match.group("codes")
            if codes is None:
                return ALL
            found.update(c.upper() for c in re.split(r"[\s,]+", codes.strip()) if c)
    return frozenset(found)


def apply(findings: Iterable[Finding], lines: list[str]) -> list[Finding]:
    out = []
    for finding in findings:
        silenced = False
        for number in {finding.line, finding.end_line}:
            if 1 <= number <= len(lines):
                codes = codes_on(lines[number - 1])
                if codes is ALL or "*" in codes or finding.code in codes:
                    silenced = True
        out.append(finding.suppress() if silenced else finding)
    return out
