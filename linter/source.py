"""Reading a source file and the run's rule settings: what the main process needs without LibCST.

The runner decodes and prefilters every file before any parsing, and a warm
run answers everything from the cache, so none of this may import the
parser: start-up time is most of a warm run.
"""

from __future__ import annotations

import codecs
import io
import tokenize
from dataclasses import dataclass
from typing import Any, Mapping

from offload_core.catalog import Rule

from .findings import Finding


@dataclass(frozen=True)
class RuleSettings:
    """The enabled rules of a run and the options each one gets."""

    enabled: frozenset[str]
    options: Mapping[str, Mapping[str, Any]]
    rules: Mapping[str, Rule]


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str


class DecodeError(ValueError):
    pass


def decode(data: bytes) -> Decoded:
    """Bytes to text the way Python reads a source file: BOM, then `# coding:`, else UTF-8."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        codecs.lookup(encoding)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise DecodeError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return Decoded(text, encoding)


def diagnostic(settings: RuleSettings, code: str, line: int, column: int, error: str) -> tuple[Finding, ...]:
    if code not in settings.enabled:
        return ()
    message = settings.rules[code].format(error=error)
    return (Finding(code, line, column, line, column, message),)


def settings_for(rules: Mapping, enabled: frozenset[str], options: Mapping | None = None) -> RuleSettings:
    """RuleSettings with each rule's catalog options overlaid by `options`."""
    merged = {code: {**dict(rule.options), **dict((options or {}).get(code, {}))} for code, rule in rules.items()}
    return RuleSettings(frozenset(enabled), merged, rules)
