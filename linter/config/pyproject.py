"""`[tool.offload-lint]` in pyproject.toml, merged with the command line.

The configuration is found the way users expect from ruff and black: the
nearest pyproject.toml with a `[tool.offload-lint]` table, looking upward
from the common folder of the paths being linted (or `--config FILE`).
Patterns in `exclude` and `per-file-ignores` are relative to that file's
folder. Every mistake (an unknown key, a rule code that does not exist, an
option the rule does not have or of the wrong type) is a ConfigError with
one line naming the file, which the CLI turns into exit code 2.

Rule selection follows ruff: `select` replaces the default set,
`extend-select` adds to it, `ignore` removes; a code prefix (`OFF1`)
selects the rules under it that are on by default, a full code selects its
rule even when it is off by default (OFF106), `ALL` selects every rule.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence

from offload_core.catalog import Rule

from ..inputs.contexts import ContextError, ContextMap, parse_contexts
from ..inputs.patterns import matches
from ..inputs.source import UnreadableError, read_source

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "__pycache__", ".mypy_cache", ".pytest_cache",
    ".ruff_cache", ".offload-lint-cache", "build", "dist", "node_modules", "site-packages", ".eggs", "*.egg-info",
    ".ipynb_checkpoints",
)
KEYS = ("select", "extend-select", "ignore", "exclude", "extend-exclude", "per-file-ignores", "extend-apis",
        "options", "cache-dir", "contexts")


class ConfigError(ValueError):
    """Bad configuration or command line; the message is one line."""


@dataclass(frozen=True)
class Config:
    root: Path
    source: Path | None = None
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    extend_apis: tuple[Path, ...] = ()
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}))
    cache_dir: Path | None = None
    contexts: ContextMap = field(default_factory=ContextMap)

    def context_of(self, path: Path, tests: bool | None = None) -> str:
        """library, test, benchmark, example or notebook (see contexts.py); `tests`: does its code test?"""
        return self.contexts.context_of(relative(path, self.root), tests)

    def excluded(self, path: Path) -> bool:
        rel = relative(path, self.root)
        return matches(rel, self.exclude)

    def ignored_for(self, path: Path) -> frozenset[str]:
        rel = relative(path, self.root)
        out: set[str] = set()
        for pattern, codes in self.per_file_ignores:
            if matches(rel, (pattern,)):
                out.update(codes)
        return frozenset(out)


def relative(path: Path, root: Path) -> str:
    """`path` relative to `root`, its folders resolved but a symlinked file kept under its own name.

    Not `Path.resolve()`: before Python 3.13 it raises on a symlink loop, and
    a loop is one file's OFF902, not the end of the run.
    """
    place = os.path.join(os.path.realpath(path.parent), path.name)
    base = os.path.realpath(root)
    if place.startswith(base + os.sep):
        return place[len(base) + 1:].replace(os.sep, "/")
    return path.as_posix()


def find_pyproject(paths: Sequence[Path]) -> Path | None:
    existing = [p.resolve() for p in paths if p.exists()] or [Path.cwd().resolve()]
    common = Path(os.path.commonpath([str(p if p.is_dir() else p.parent) for p in existing]))
    for folder in (common, *common.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file() and _has_section(candidate):
            return candidate
    return None


def _has_section(path: Path) -> bool:
    try:
        return "offload-lint" in tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return True  # let load_config report it


def _toml_type(value: Any) -> str:
    """The TOML name of a value's type, for messages ('a string', not 'a str')."""
    names = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "an array", dict: "a table"}
    return next((name for kind, name in names.items() if type(value) is kind), f"a {type(value).__name__}")


def _strings(value: Any, key: str, where: Path) -> tuple[str, ...]:
    """A list of non-empty strings, as docs/linter.md documents every list key: `select = "OFF101"` is refused.

    Accepting a bare string would read as a list of one here but as a list
    of characters to anyone who iterates it; ruff refuses it too.
    """
    if not isinstance(value, list):
        hint = f" (write [{value!r}])" if isinstance(value, str) else ""
        raise ConfigError(f"{where}: [tool.offload-lint] '{key}' must be an array of strings, got {_toml_type(value)}{hint}")
    for item in value:
        if not isinstance(item, str) or not item.strip():
            got = "an empty string" if isinstance(item, str) else _toml_type(item)
            raise ConfigError(f"{where}: [tool.offload-lint] '{key}' must be an array of non-empty strings, got {got} in it")
    return tuple(value)


def _folder(value: Any, key: str, where: Path) -> str:
    if not isinstance(value, str) or not value.strip():
        got = "an empty string" if isinstance(value, str) else _toml_type(value)
        raise ConfigError(f"{where}: [tool.offload-lint] '{key}' must be a folder name (a non-empty string), got {got}")
    return value


def load_config(path: Path | None, rules: Mapping[str, Rule]) -> Config:
    """Read `[tool.offload-lint]` from `path` (None: defaults, rooted at the current folder)."""
    if path is None:
        return Config(root=Path.cwd(), contexts=context_map(None, rules, "defaults"))
    if not path.exists():
        raise ConfigError(f"{path}: configuration file not found")
    try:
        data = tomllib.loads(read_source(path).decode("utf-8"))
    except UnreadableError as exc:  # never opened blocking: `--config` naming a FIFO is one line too
        raise ConfigError(f"{path}: cannot read ({exc})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: cannot read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    table = data.get("tool", {}).get("offload-lint", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.offload-lint] must be a table")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in [tool.offload-lint]: {', '.join(unknown)} (known: {', '.join(KEYS)})")
    root = path.parent.resolve()
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError(f"{path}: [tool.offload-lint] 'per-file-ignores' must be a table of pattern = [codes]")
    per_file = tuple((pattern, _strings(codes, f"per-file-ignores.{pattern}", path)) for pattern, codes in pfi.items())
    for _, codes in per_file:
        expand(codes, rules, f"{path}: per-file-ignores")
    config = Config(
        root=root,
        source=path,
        select=_strings(table["select"], "select", path) if "select" in table else None,
        extend_select=_strings(table.get("extend-select", []), "extend-select", path),
        ignore=_strings(table.get("ignore", []), "ignore", path),
        exclude=_strings(table["exclude"], "exclude", path) if "exclude" in table else DEFAULT_EXCLUDE,
        per_file_ignores=per_file,
        extend_apis=tuple(root / p for p in _strings(table.get("extend-apis", []), "extend-apis", path)),
        options=check_options(table.get("options", {}), rules, str(path)),
        cache_dir=(root / _folder(table["cache-dir"], "cache-dir", path)) if "cache-dir" in table else None,
        contexts=context_map(table.get("contexts"), rules, str(path)),
    )
    config = _extend(config, exclude=_strings(table.get("extend-exclude", []), "extend-exclude", path))
    for key, codes in (("select", config.select or ()), ("extend-select", config.extend_select), ("ignore", config.ignore)):
        expand(codes, rules, f"{path}: {key}")
    for api_file in config.extend_apis:
        if not api_file.is_file():
            raise ConfigError(f"{path}: extend-apis file {api_file} not found")
    return config


def context_map(raw: Any, rules: Mapping[str, Rule], where: str) -> ContextMap:
    """The contexts table with its rule codes expanded (prefixes included) against the catalog."""
    try:
        patterns, ignores = parse_contexts(raw, where)
    except ContextError as exc:
        raise ConfigError(str(exc)) from None
    expanded = {name: frozenset(expand(codes, rules, f"{where}: contexts.{name}.ignore"))
                for name, codes in ignores.items()}
    return ContextMap(MappingProxyType(patterns), MappingProxyType(expanded))


def _extend(config: Config, exclude: tuple[str, ...]) -> Config:
    from dataclasses import replace

    return replace(config, exclude=config.exclude + exclude)


def check_options(raw: Any, rules: Mapping[str, Rule], where: str) -> Mapping[str, Mapping[str, Any]]:
    """Per-rule options: known rules, known keys, values of the default's type."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: [tool.offload-lint.options] must be a table of rule tables")
    out: dict[str, Mapping[str, Any]] = {}
    for code, values in raw.items():
        if code not in rules:
            raise ConfigError(f"{where}: options for unknown rule {code}")
        if not isinstance(values, dict):
            raise ConfigError(f"{where}: options.{code} must be a table")
        defaults = rules[code].options
        for key, value in values.items():
            if key not in defaults:
                known = ", ".join(defaults) or "none"
                raise ConfigError(f"{where}: rule {code} has no option '{key}' (options: {known})")
            default = defaults[key]
            widened = isinstance(default, float) and type(value) is int  # 3 for 3.0, never true for 3.0
            if type(value) is not type(default) and not widened:
                raise ConfigError(
                    f"{where}: option {code}.{key} must be {type(default).__name__}, got {type(value).__name__}"
                )
            if isinstance(default, list) and default and not all(isinstance(v, type(default[0])) for v in value):
                raise ConfigError(f"{where}: option {code}.{key} must be a list of {type(default[0]).__name__}")
        out[code] = MappingProxyType(dict(values))
    return MappingProxyType(out)


def expand(specs: Iterable[str], rules: Mapping[str, Rule], where: str, defaults_only: bool = False) -> set[str]:
    """Codes named by `specs`: ALL, full codes, or prefixes (which take default-on rules only if asked)."""
    out: set[str] = set()
    for spec in specs:
        spec = spec.strip().upper()
        if not spec:
            continue
        if spec == "ALL":
            out.update(rules)
        elif spec in rules:
            out.add(spec)
        else:
            found = {c for c in rules if c.startswith(spec) and (rules[c].default_enabled or not defaults_only)}
            if not any(c.startswith(spec) for c in rules):
                raise ConfigError(f"{where}: unknown rule code or prefix '{spec}' (see `offload-lint rules`)")
            out.update(found)
    return out


def enabled_codes(
    rules: Mapping[str, Rule],
    config: Config,
    select: Sequence[str] | None = None,
    extend_select: Sequence[str] = (),
    ignore: Sequence[str] = (),
) -> frozenset[str]:
    """The static rules this run checks: command line over configuration over the catalog's defaults."""
    static = {c: r for c, r in rules.items() if r.kind == "static"}
    where = "--select" if select is not None else str(config.source or "configuration")
    chosen = select if select is not None else config.select
    if chosen is None:
        codes = {c for c, r in static.items() if r.default_enabled}
    else:
        codes = expand(chosen, static, where, defaults_only=True)
    codes |= expand((*config.extend_select, *extend_select), static, "extend-select", defaults_only=True)
    codes -= expand((*config.ignore, *ignore), static, "ignore")
    return frozenset(codes)
