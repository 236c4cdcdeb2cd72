"""The rule catalog loader: `rules/*.yaml` and `rules/apis/*.yaml` as frozen records.

The catalog is data shared by the linter (static rules, API lists) and the
profiler (runtime rules and their thresholds), so its loader lives at the
bottom of the dependency graph, here, and imports nothing but the standard
library and PyYAML. The folder is found beside the top-level packages: in a
checkout that is the repository's `rules/`, in an installed wheel the
`rules/` folder the wheel ships next to `offload_core/`.

Every problem in a rule file (a missing key, a bad severity, an id that
does not match its file name, a message placeholder that is not a valid
format field) is a `CatalogError` whose one-line message names the file.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, Iterable, Literal, Mapping, TypeVar, get_args

import yaml

#: which tool checks a rule: the linter (static) or the profiler (runtime)
RuleKind = Literal["static", "runtime"]
KINDS: Final[tuple[RuleKind, ...]] = get_args(RuleKind)
Severity = Literal["error", "warning", "info"]
SEVERITIES: Final[tuple[Severity, ...]] = get_args(Severity)
#: `safe`: applying the fix never changes what the program computes; `unsafe`: it may (review it)
FixSafety = Literal["none", "safe", "unsafe"]
FIX_SAFETIES: Final[tuple[FixSafety, ...]] = get_args(FixSafety)
#: what a library call listed in `rules/apis/` does
ApiKind = Literal["h2d", "d2h", "sync", "launch", "region", "alloc"]
API_KINDS: Final[tuple[ApiKind, ...]] = get_args(ApiKind)
_Choice = TypeVar("_Choice", bound=str)
_REQUIRED = ("id", "name", "kind", "severity", "summary", "message", "rationale", "fix", "fix_safety", "examples")

#: LibYAML's safe loader where PyYAML was built with it (ten times faster on the rule catalog), else the pure one;
#: the profiler's own YAML files (link profiles, budgets) are read with it too
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class CatalogError(ValueError):
    """A rule or API file is malformed; the message names the file."""


def rules_dir() -> Path:
    """The catalog folder (checkout or installed wheel)."""
    return Path(__file__).resolve().parent.parent / "rules"


@dataclass(frozen=True)
class Position:
    """A 1-based line and column, as the linter prints them, and the finding's message there if pinned."""

    line: int
    column: int
    message: str | None = None


@dataclass(frozen=True)
class Example:
    """A snippet that must (invalid) or must not (valid) produce findings.

    `fixed` (invalid examples of rules with a fix) is the code after every
    fix offered for the findings is applied, unsafe ones included; where no
    fix is offered it is the code itself. `ranks` is how many ranks of a
    distributed job run the example (under torchrun; 1: a plain program),
    for the rules about distributed jobs.
    """

    code: str
    expect: tuple[Position, ...] = ()
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    fixed: str | None = None
    ranks: int = 1


@dataclass(frozen=True)
class Rule:
    """One catalog entry. `options` are the defaults the rule's check receives."""

    id: str
    name: str
    kind: RuleKind
    severity: Severity
    summary: str
    message: str
    rationale: str
    advice: str  # the YAML's `fix:`, how to change the code (a finding's `Fix` is the edit it offers)
    fix_safety: FixSafety
    options: Mapping[str, Any]
    invalid: tuple[Example, ...]
    valid: tuple[Example, ...]
    default_enabled: bool
    related: tuple[str, ...]
    path: Path

    @property
    def fields(self) -> tuple[str, ...]:
        """The placeholders the message expects, in order of appearance."""
        return tuple(f for _, f, _, _ in string.Formatter().parse(self.message) if f)

    def format(self, **values: Any) -> str:
        """The finding message; a missing placeholder is a bug in the check, so it raises."""
        try:
            return self.message.format(**values)
        except KeyError as exc:
            raise KeyError(f"{self.id}: message needs field {exc}") from None


@dataclass(frozen=True)
class ApiEntry:
    """A library call that copies, synchronises, launches or maps.

    Exactly one of `call` (a qualified name such as `cupy.asarray`) and
    `method` (an attribute name, optionally restricted to a `receiver` type)
    is set. `extra` keeps any further keys for the consumer that knows them.
    """

    library: str
    kind: ApiKind
    blocking: bool
    call: str | None = None
    method: str | None = None
    receiver: str | None = None
    note: str = ""
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    path: Path | None = None


@dataclass(frozen=True)
class ApiFile:
    library: str
    modules: tuple[str, ...]
    entries: tuple[ApiEntry, ...]
    path: Path


@dataclass(frozen=True)
class Catalog:
    rules: Mapping[str, Rule]
    apis: tuple[ApiFile, ...]

    def __getitem__(self, code: str) -> Rule:
        try:
            return self.rules[code]
        except KeyError:
            raise KeyError(f"no rule {code!r} in the catalog (known: {', '.join(sorted(self.rules))})") from None


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(f"{path}: cannot read ({exc})") from None
    try:
        return yaml.load(text, Loader=YAML_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise CatalogError(f"{path}: invalid YAML{where}: {problem}") from None


def _need(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], path: Path) -> Any:
    if key not in data:
        raise CatalogError(f"{path}: missing key '{key}'")
    value = data[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise CatalogError(f"{path}: '{key}' must be {names}, got {type(value).__name__}")
    return value


def _choice(data: Mapping[str, Any], key: str, choices: tuple[_Choice, ...], path: Path) -> _Choice:
    value = _need(data, key, str, path)
    for choice in choices:
        if value == choice:
            return choice
    raise CatalogError(f"{path}: '{key}' is {value!r}; choose one of {', '.join(choices)}")


def _examples(raw: Any, which: str, path: Path, fixable: bool) -> tuple[Example, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise CatalogError(f"{path}: examples.{which} must be a list")
    out = []
    for n, item in enumerate(raw, 1):
        if not isinstance(item, dict) or not isinstance(item.get("code"), str):
            raise CatalogError(f"{path}: examples.{which}[{n}] needs a 'code' string")
        expect_raw = item.get("expect", [])
        if which == "valid" and expect_raw:
            raise CatalogError(f"{path}: examples.valid[{n}] cannot expect findings")
        if which == "invalid" and not expect_raw:
            raise CatalogError(f"{path}: examples.invalid[{n}] must expect at least one finding")
        unknown = sorted(set(item) - {"code", "expect", "options", "fixed", "ranks"})
        if unknown:
            raise CatalogError(f"{path}: examples.{which}[{n}]: unknown key(s) {', '.join(map(str, unknown))}")
        positions = []
        for pos in expect_raw:
            if not (isinstance(pos, dict) and isinstance(pos.get("line"), int) and isinstance(pos.get("column"), int)):
                raise CatalogError(f"{path}: examples.{which}[{n}].expect entries need integer 'line' and 'column'")
            if pos["line"] < 1 or pos["column"] < 1:
                raise CatalogError(f"{path}: examples.{which}[{n}]: lines and columns are 1-based")
            if set(pos) - {"line", "column", "message"} or not isinstance(pos.get("message", ""), str):
                raise CatalogError(f"{path}: examples.{which}[{n}].expect entries hold 'line', 'column' and a "
                                   "'message' string")
            positions.append(Position(pos["line"], pos["column"], pos.get("message")))
        options = item.get("options", {})
        if not isinstance(options, dict):
            raise CatalogError(f"{path}: examples.{which}[{n}].options must be a mapping")
        fixed = item.get("fixed")
        if fixed is not None and not (which == "invalid" and fixable and isinstance(fixed, str)):
            raise CatalogError(f"{path}: examples.{which}[{n}]: 'fixed' is the fixed code (a string) of an invalid "
                               "example of a static rule with a fix")
        ranks = item.get("ranks", 1)
        if not isinstance(ranks, int) or isinstance(ranks, bool) or ranks < 1:
            raise CatalogError(f"{path}: examples.{which}[{n}].ranks must be a whole number of ranks, at least 1")
        out.append(Example(item["code"], tuple(positions), MappingProxyType(dict(options)), fixed, ranks))
    return tuple(out)


def load_rule(path: Path) -> Rule:
    """Read and validate one rule file."""
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: a rule file holds a mapping of keys")
    for key in _REQUIRED:
        if key not in data:
            raise CatalogError(f"{path}: missing key '{key}'")
    unknown = set(data) - set(_REQUIRED) - {"options", "default_enabled", "related"}
    if unknown:
        raise CatalogError(f"{path}: unknown key(s) {', '.join(sorted(unknown))}")
    rule_id = _need(data, "id", str, path)
    if not (len(rule_id) == 6 and rule_id.startswith("OFF") and rule_id[3:].isdigit()):
        raise CatalogError(f"{path}: id {rule_id!r} is not of the form OFFnnn")
    name = _need(data, "name", str, path)
    if path.stem != f"{rule_id}-{name}":
        raise CatalogError(f"{path}: file name must be {rule_id}-{name}.yaml")
    message = _need(data, "message", str, path)
    try:
        list(string.Formatter().parse(message))
    except ValueError as exc:
        raise CatalogError(f"{path}: message is not a valid format string ({exc})") from None
    options = data.get("options") or {}
    if not isinstance(options, dict):
        raise CatalogError(f"{path}: 'options' must be a mapping")
    examples = _need(data, "examples", dict, path)
    related = data.get("related", [])
    if not (isinstance(related, list) and all(isinstance(r, str) for r in related)):
        raise CatalogError(f"{path}: 'related' must be a list of rule ids")
    default_enabled = data.get("default_enabled", True)
    if not isinstance(default_enabled, bool):
        raise CatalogError(f"{path}: 'default_enabled' must be true or false")
    kind = _choice(data, "kind", KINDS, path)
    fix_safety = _choice(data, "fix_safety", FIX_SAFETIES, path)
    fixable = kind == "static" and fix_safety != "none"
    return Rule(
        id=rule_id,
        name=name,
        kind=kind,
        severity=_choice(data, "severity", SEVERITIES, path),
        summary=_need(data, "summary", str, path).strip(),
        message=message,
        rationale=_need(data, "rationale", str, path).strip(),
        advice=_need(data, "fix", str, path).strip(),
        fix_safety=fix_safety,
        options=MappingProxyType(dict(options)),
        invalid=_examples(examples.get("invalid"), "invalid", path, fixable),
        valid=_examples(examples.get("valid"), "valid", path, fixable),
        default_enabled=default_enabled,
        related=tuple(related),
        path=path,
    )


def load_api_file(path: Path) -> ApiFile:
    """Read and validate one `apis/*.yaml` file."""
    data = _read_yaml(path)
    if not isinstance(data, dict):
        raise CatalogError(f"{path}: an API file holds a mapping of keys")
    library = _need(data, "library", str, path)
    modules = data.get("modules", [library])
    if not (isinstance(modules, list) and modules and all(isinstance(m, str) for m in modules)):
        raise CatalogError(f"{path}: 'modules' must be a non-empty list of module names")
    entries = []
    for n, item in enumerate(_need(data, "entries", list, path), 1):
        where = f"{path}: entries[{n}]"
        if not isinstance(item, dict):
            raise CatalogError(f"{where} must be a mapping")
        call, method = item.get("call"), item.get("method")
        if (call is None) == (method is None):
            raise CatalogError(f"{where} needs exactly one of 'call' and 'method'")
        if not isinstance(call or method, str):
            raise CatalogError(f"{where}: 'call'/'method' must be a string")
        kind = next((k for k in API_KINDS if item.get("kind") == k), None)
        if kind is None:
            raise CatalogError(f"{where}: 'kind' is {item.get('kind')!r}; choose one of {', '.join(API_KINDS)}")
        blocking = item.get("blocking", False)
        if not isinstance(blocking, bool):
            raise CatalogError(f"{where}: 'blocking' must be true or false")
        known = {"call", "method", "receiver", "kind", "blocking", "note"}
        entries.append(
            ApiEntry(
                library=library,
                kind=kind,
                blocking=blocking,
                call=call,
                method=method,
                receiver=item.get("receiver"),
                note=str(item.get("note", "")),
                extra=MappingProxyType({k: v for k, v in item.items() if k not in known}),
                path=path,
            )
        )
    return ApiFile(library, tuple(modules), tuple(entries), path)


def load_catalog(root: Path | None = None, extra_api_files: Iterable[Path] = ()) -> Catalog:
    """Every rule and API file under `root` (default: `rules_dir()`), plus user API files."""
    folder = Path(root) if root is not None else rules_dir()
    if not folder.is_dir():
        raise CatalogError(f"{folder}: rule catalog folder not found")
    rules: dict[str, Rule] = {}
    for path in sorted(folder.glob("OFF*.yaml")):
        rule = load_rule(path)
        if rule.id in rules:
            raise CatalogError(f"{path}: id {rule.id} is also used by {rules[rule.id].path.name}")
        rules[rule.id] = rule
    for rule in rules.values():
        for other in rule.related:
            if other not in rules:
                raise CatalogError(f"{rule.path}: related rule {other} is not in the catalog")
    apis = [load_api_file(p) for p in sorted((folder / "apis").glob("*.yaml"))]
    apis += [load_api_file(Path(p)) for p in extra_api_files]
    return Catalog(MappingProxyType(rules), tuple(apis))
