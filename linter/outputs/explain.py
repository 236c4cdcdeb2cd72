"""`offload-lint rules` and `offload-lint explain CODE`: the catalog, for people.

Both read only the catalog (no LibCST, nothing parsed), so they answer
instantly. `explain` accepts a code (`OFF101`, `off101`) or a rule name
(`transfer-in-loop`).
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from typing import Sequence

from offload_core.catalog import Rule, load_catalog

from ..config.pyproject import ConfigError


def list_rules(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="offload-lint rules", description="List the rule catalog.")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--all", action="store_true", help="include the profiler's runtime rules")
    args = p.parse_args(argv)
    rules = [r for r in load_catalog().rules.values() if args.all or r.kind == "static"]
    if args.format == "json":
        data = [
            {"code": r.id, "name": r.name, "kind": r.kind, "severity": r.severity, "default_enabled": r.default_enabled,
             "fix_safety": r.fix_safety, "summary": r.summary}
            for r in rules
        ]
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
        return 0
    width = max((len(r.name) for r in rules), default=10)
    for r in rules:
        state = "on " if r.default_enabled else "off"
        fix = {"safe": "fix", "unsafe": "fix*", "none": ""}[r.fix_safety]
        sys.stdout.write(f"{r.id}  {r.severity:<7}  {state}  {fix:<4}  {r.name:<{width}}  {r.summary}\n")
    sys.stdout.write("\non/off: enabled by default; fix: safe fix with --fix; fix*: only with --unsafe-fixes\n")
    return 0


def _find(code: str) -> Rule:
    rules = load_catalog().rules
    wanted = code.strip()
    for rule in rules.values():
        if rule.id == wanted.upper() or rule.name == wanted.lower():
            return rule
    raise ConfigError(f"no rule {code!r} in the catalog; `offload-lint rules` lists them")


def _block(title: str, body: str) -> str:
    return f"{title}:\n{textwrap.indent(body.rstrip(), '    ')}\n"


def explain_rule(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="offload-lint explain", description="Explain one rule.")
    p.add_argument("code", help="a rule code (OFF101) or name (transfer-in-loop)")
    args = p.parse_args(argv)
    rule = _find(args.code)
    state = "on by default" if rule.default_enabled else "off by default (enable with --extend-select " + rule.id + ")"
    fix = {"safe": "safe fix (--fix)", "unsafe": "unsafe fix (--fix --unsafe-fixes)", "none": "no automatic fix"}[rule.fix_safety]
    parts = [
        f"{rule.id} {rule.name} ({rule.kind}, {rule.severity}, {state}, {fix})\n",
        f"{rule.summary}\n",
        _block("Why it matters", rule.rationale),
        _block("How to fix it", rule.advice),
    ]
    if rule.options:
        lines = "\n".join(f"{k} = {json.dumps(v)}" for k, v in rule.options.items())
        parts.append(_block(f"Options ([tool.offload-lint.options.{rule.id}])", lines))
    if rule.invalid:
        parts.append(_block("Flagged", rule.invalid[0].code))
    if rule.valid:
        parts.append(_block("Fine", rule.valid[0].code))
    if rule.related:
        parts.append(f"Related: {', '.join(rule.related)}\n")
    sys.stdout.write("\n".join(parts))
    return 0
