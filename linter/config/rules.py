"""The run's rule settings: which rules are on and the options each one gets.

Built once per run in the main process and shipped to every worker with
each file, so it is a frozen record of plain values and imports no parser.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from offload_core.catalog import Rule

from ..findings import Finding


@dataclass(frozen=True)
class RuleSettings:
    """The enabled rules of a run and the options each one gets."""

    enabled: frozenset[str]
    options: Mapping[str, Mapping[str, Any]]
    rules: Mapping[str, Rule]


def settings_for(rules: Mapping, enabled: frozenset[str], options: Mapping | None = None) -> RuleSettings:
    """RuleSettings with each rule's catalog options overlaid by `options`."""
    merged = {code: {**dict(rule.options), **dict((options or {}).get(code, {}))} for code, rule in rules.items()}
    return RuleSettings(frozenset(enabled), merged, rules)


def diagnostic(settings: RuleSettings, code: str, line: int, column: int, error: str) -> tuple[Finding, ...]:
    """The tool's own finding (OFF9xx: unreadable, unparsable, too large) when its code is enabled."""
    if code not in settings.enabled:
        return ()
    message = settings.rules[code].format(error=error)
    return (Finding(code, line, column, line, column, message),)
