"""What kind of file a path is (library, test, benchmark, example, notebook), and which rules it silences.

Measured on four public GPU code bases (docs/linter.md), 76 of the
linter's 111 wrong findings sat in test files: loops over two or three
parameters, transfers a test makes on purpose because it tests them, tiny
buffers whose "fix" would save microseconds. Benchmark harnesses add event
syncs that exist to read an elapsed time. A user linting a repository wants
the performance rules where performance matters and the correctness rules
everywhere, so each file gets a context from its path and each context may
silence rules:

- test: the performance rules (OFF1xx transfers, OFF3xx syncs) are off;
  ownership and aliasing errors (OFF2xx) and tool diagnostics stay on.
- benchmark: the sync rules (OFF104, OFF3xx) are off, since timing needs
  them; the transfer rules stay on (a benchmark that re-uploads invariant
  data measures the wrong thing).
- example, notebook, library: every rule.

Both the patterns and the silenced rules are configuration
(`[tool.offload-lint.contexts]`), and each finding carries its file's
context in JSON output, so nothing is hidden without a way to see it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, Mapping

from .patterns import matches

Context = Literal["library", "test", "benchmark", "example", "notebook"]
CONTEXTS: tuple[Context, ...] = ("library", "test", "benchmark", "example", "notebook")
# Checked in this order; the first context whose patterns match wins. A pattern without a
# slash matches any part of the path (a folder or the file name), one with a slash the path.
PATTERNED: tuple[Context, ...] = ("test", "benchmark", "example")
DEFAULT_PATTERNS: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "test": ("tests", "test", "testing", "test_*.py", "*_test.py", "tests.py", "conftest.py",
             "test_*.ipynb", "*_test.ipynb"),
    "benchmark": ("benchmarks", "benchmark", "bench", "benches", "asv_bench", "bench_*.py", "*_bench.py",
                  "benchmark_*.py", "*_benchmark.py", "bench.py", "benchmark.py", "*_benchmark.ipynb"),
    "example": ("examples", "example", "tutorials", "tutorial", "demos", "demo", "samples", "docs"),
})
DEFAULT_IGNORE: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "test": ("OFF1", "OFF3"),
    "benchmark": ("OFF104", "OFF3"),
})


class ContextError(ValueError):
    """A bad `[tool.offload-lint.contexts]` table; the message is one line."""


@dataclass(frozen=True)
class ContextMap:
    """Patterns per context and the rule codes (expanded by the configuration) each context silences."""

    patterns: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: DEFAULT_PATTERNS)
    ignore: Mapping[str, frozenset[str]] = field(default_factory=lambda: MappingProxyType({}))

    def context_of(self, rel: str, tests: bool | None = None) -> Context:
        """The context of a path relative to the configuration's folder (posix separators).

        `tests` is what the file's code says (it defines `test_*` functions or
        `Test*` classes, or imports pytest or unittest), when known. A file
        that only its name calls a test (`test_time_augmentation.py` in a
        library package) and whose code says otherwise is library code.
        """
        for context in PATTERNED:
            patterns = self.patterns.get(context, ())
            if not matches(rel, patterns):
                continue
            if context == "test" and tests is False and not matches(rel.rpartition("/")[0], patterns):
                continue  # only the file name matched, and the code is no test
            return context
        return "notebook" if rel.endswith(".ipynb") else "library"

    def silenced(self, context: str) -> frozenset[str]:
        return self.ignore.get(context, frozenset())


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        raise ContextError(f"{where} must be a list of strings")
    return tuple(value)


def parse_contexts(raw: Any, where: str) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """Patterns and ignored codes (unexpanded) from the defaults and a `[tool.offload-lint.contexts]` table.

    Each context's table may give `patterns` (replacing the default patterns;
    not for library and notebook, which are what no pattern matched) and
    `ignore` (codes or prefixes, replacing the default silenced rules).
    """
    patterns = dict(DEFAULT_PATTERNS)
    ignores = {k: tuple(v) for k, v in DEFAULT_IGNORE.items()}
    if raw is None:
        return patterns, ignores
    if not isinstance(raw, dict):
        raise ContextError(f"{where}: [tool.offload-lint.contexts] must be a table of context tables")
    for name, table in raw.items():
        if name not in CONTEXTS:
            raise ContextError(f"{where}: unknown context '{name}' in [tool.offload-lint.contexts] "
                               f"(known: {', '.join(CONTEXTS)})")
        if not isinstance(table, dict):
            raise ContextError(f"{where}: contexts.{name} must be a table with 'patterns' and/or 'ignore'")
        unknown = sorted(set(table) - {"patterns", "ignore"})
        if unknown:
            raise ContextError(f"{where}: unknown key(s) in contexts.{name}: {', '.join(unknown)} "
                               "(known: patterns, ignore)")
        if "patterns" in table:
            if name not in PATTERNED:
                raise ContextError(f"{where}: contexts.{name} takes no 'patterns' "
                                   "(a file is library or notebook when no other context matches)")
            patterns[name] = _strings(table["patterns"], f"{where}: contexts.{name}.patterns")
        if "ignore" in table:
            ignores[name] = _strings(table["ignore"], f"{where}: contexts.{name}.ignore")
    return patterns, ignores
