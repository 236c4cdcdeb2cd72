"""How right the linter is on real code: findings scored against a labelled manifest.

    python benchmarks/lint_accuracy.py TREES MANIFEST [--judged FILE] [--jobs N] [--json OUT]

TREES is a folder with one checkout per repository, named `owner+name`
(`TREES/cupy+cupy`, `TREES/pytorch+examples`), each at the commit the
manifest names. MANIFEST is a JSON list of labelled records
(`benchmarks/data/lint-realworld-dev.json`): repo, path, line, rule and a
verdict, `tp` (a finding an expert wants), `fp` (a finding that is wrong or
worthless there) or `fn` (an avoidable cost an expert wants reported). Each
record also says the run it came from: `default`, or `extend-select OFF106`
for the opt-in audit, so the linter runs twice: with its default
configuration, and with `--extend-select OFF106`.

Matching: a finding matches a `tp`/`fp` record of the same path, line and
rule; a `fn` record is caught by any finding on its path and line (the
manifest's rule there is the expert's guess of which rule should say it).
Findings the manifest does not know are listed: read and judge each before
claiming a gain.

**Code nobody labelled** (the second mode): the manifest is then a JSON
object, `{"repos": [...], "loops": [...], "records": [...]}`, made by
reading the hot loops of repositories the linter was never tuned on:
`loops` are the loops read (each with the number of costs found in or under
it), `records` the avoidable per-iteration costs found there (`fn`), written
before the linter ran on those trees. Every finding of the default run is
then judged (`--judged`; `--worksheet OUT` writes the unjudged ones with
their code around them, for the judge), and the script prints, per
repository, the loops read, the costs caught (recall of what a person finds
by reading hot loops) and the findings right (precision). Judgements go into the `--judged` file (same record
shape, verdict `tp` or `fp`, with the reason); the precision line counts
them, and findings still unjudged are shown as such, never counted right.

The table is per rule: findings, known TPs kept, known FPs left, known
misses caught, unknown findings (judged tp/fp, unjudged), findings per 10k
lines, and the speed (lines of Python per second, wall clock, cache off).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

ROOT = Path(__file__).resolve().parent.parent
RUNS = {"default": (), "extend-select OFF106": ("--extend-select", "OFF106")}


@dataclass(frozen=True)
class Found:
    repo: str
    path: str
    line: int
    rule: str
    message: str
    cell: int | None = None

    @property
    def key(self) -> tuple[str, str, int, str]:
        return (self.repo, self.place, self.line, self.rule)

    @property
    def place(self) -> str:
        """The file, and in a notebook the cell (lines count within it): what a record's `place_of` gives."""
        return self.path if self.cell is None else f"{self.path}:cell {self.cell}"


def tree_of(trees: Path, repo: str) -> Path:
    return trees / repo.replace("/", "+")


def count_lines(tree: Path) -> int:
    total = 0
    for folder, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(folder, name), "rb") as fh:
                    total += fh.read().count(b"\n")
    return total


def lint(tree: Path, repo: str, extra: tuple[str, ...], jobs: int) -> tuple[list[Found], float]:
    """One linter run over a tree, as a user runs it (subprocess, JSON out, no cache)."""
    cmd = [sys.executable, "-m", "linter", "--format", "json", "--no-cache", "--exit-zero", "--jobs", str(jobs),
           *extra, "."]
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=tree, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"lint_accuracy: the linter failed on {tree} (exit {proc.returncode}): "
                         f"{proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'no message'}")
    out = [Found(repo, f["path"], f["line"], f["code"], f["message"], f.get("cell")) for f in json.loads(proc.stdout)]
    return out, wall


def _children_cpu() -> float:
    """CPU seconds (user + system) of finished child processes: steadier than wall time on a busy machine."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def load_manifest(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(records, loops read): a list of records, or a hand-read manifest object with `loops` and `records`."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"lint_accuracy: cannot read {path}: {exc}") from None
    if isinstance(data, dict):
        loops = data.get("loops", [])
        if not isinstance(loops, list) or not all(isinstance(x, dict) and {"repo", "path", "line"} <= x.keys()
                                                   for x in loops):
            raise SystemExit(f"lint_accuracy: {path}: 'loops' must be a list of objects with repo, path and line")
        return _checked(data.get("records"), path), loops
    return _checked(data, path), []


def load_records(path: Path) -> list[dict[str, Any]]:
    return load_manifest(path)[0]


def _checked(data: Any, path: Path) -> list[dict[str, Any]]:
    if not isinstance(data, list) or not all(isinstance(r, dict) and {"repo", "path", "line", "verdict"} <= r.keys()
                                              for r in data):
        raise SystemExit(f"lint_accuracy: {path} is not a list of records with repo, path, line and verdict")
    return data


def applies(record: dict[str, Any], run: str) -> bool:
    """A label made on the default run holds in every run (each adds rules); an audit label only in its own."""
    return record.get("run", "default") in ("default", run)


def place_of(record: dict[str, Any]) -> str:
    """A record's file, with its notebook cell when it has one (`"cell"`: numbered as the linter does, from 1,
    markdown cells included; `"line"` then counts within the cell)."""
    cell = record.get("cell")
    return str(record["path"]) if cell is None else f"{record['path']}:cell {cell}"


def rule_of(record: dict[str, Any]) -> str:
    return str(record.get("rule", ""))


@dataclass
class Row:
    findings: int = 0
    tp_kept: int = 0
    tp_known: int = 0
    fp_left: int = 0
    fp_known: int = 0
    fn_caught: int = 0
    fn_known: int = 0
    unknown_tp: int = 0
    unknown_fp: int = 0
    unjudged: int = 0

    def add(self, other: Row) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


def score(found: Iterable[Found], records: list[dict[str, Any]], judged: dict[tuple, dict[str, Any]],
          run: str) -> tuple[dict[str, Row], list[tuple[Found, str]], list[dict[str, Any]]]:
    """Per-rule rows, the unknown findings (with their judgement or 'unjudged'), the misses still missed."""
    found = list(found)
    by_key = {f.key: f for f in found}
    lines_hit = {(f.repo, f.place, f.line) for f in found}
    labelled = {(r["repo"], place_of(r), r["line"], rule_of(r)) for r in records if r["verdict"] in ("tp", "fp")
                and applies(r, run)}
    rows: dict[str, Row] = defaultdict(Row)
    missed: list[dict[str, Any]] = []
    for r in records:
        key = (r["repo"], place_of(r), r["line"], rule_of(r))
        if r["verdict"] == "fn":
            if run != "default":
                continue
            row = rows[rule_of(r) or "?"]
            row.fn_known += 1
            if (r["repo"], place_of(r), r["line"]) in lines_hit:
                row.fn_caught += 1
            else:
                missed.append(r)
        elif applies(r, run):
            row = rows[rule_of(r)]
            if r["verdict"] == "tp":
                row.tp_known += 1
                row.tp_kept += key in by_key
            else:
                row.fp_known += 1
                row.fp_left += key in by_key
    unknown: list[tuple[Found, str]] = []
    fn_lines = {(r["repo"], place_of(r), r["line"]) for r in records if r["verdict"] == "fn"}
    for f in found:
        row = rows[f.rule]
        row.findings += 1
        if f.key in labelled:
            continue
        verdict = judged.get(f.key, {}).get("verdict")
        if verdict is None and (f.repo, f.place, f.line) in fn_lines:
            verdict = "tp"  # a known miss, now caught
        elif verdict is None:
            row.unjudged += 1
            unknown.append((f, "unjudged"))
            continue
        if verdict == "tp":
            row.unknown_tp += (f.repo, f.place, f.line) not in fn_lines
        else:
            row.unknown_fp += 1
        if (f.repo, f.place, f.line) not in fn_lines:
            unknown.append((f, verdict))
    return dict(rows), unknown, missed


def pct(a: int, b: int) -> str:
    return f"{a}/{b} ({100 * a / b:.0f}%)" if b else "-"


def table(rows: dict[str, Row], lines: int) -> list[str]:
    head = ("rule", "findings", "TPs kept", "FPs left", "misses caught", "new tp/fp/?", "per 10k lines")
    body = []
    total = Row()
    for rule in sorted(rows):
        row = rows[rule]
        total.add(row)
        body.append((rule, str(row.findings), pct(row.tp_kept, row.tp_known), pct(row.fp_left, row.fp_known),
                     pct(row.fn_caught, row.fn_known), f"{row.unknown_tp}/{row.unknown_fp}/{row.unjudged}",
                     f"{10_000 * row.findings / max(lines, 1):.2f}"))
    body.append(("all", str(total.findings), pct(total.tp_kept, total.tp_known), pct(total.fp_left, total.fp_known),
                 pct(total.fn_caught, total.fn_known), f"{total.unknown_tp}/{total.unknown_fp}/{total.unjudged}",
                 f"{10_000 * total.findings / max(lines, 1):.2f}"))
    widths = [max(len(r[i]) for r in (head, *body)) for i in range(len(head))]
    fmt = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    return [fmt.format(*head), fmt.format(*("-" * w for w in widths)), *(fmt.format(*r) for r in body)]


def precision(found: list[Found], records: list[dict[str, Any]], judged: dict[tuple, dict[str, Any]],
              run: str) -> tuple[int, int, int]:
    """(right, wrong, unjudged) over every finding of the run."""
    verdicts = {(r["repo"], place_of(r), r["line"], rule_of(r)): r["verdict"] for r in records
                if r["verdict"] in ("tp", "fp") and applies(r, run)}
    fn_lines = {(r["repo"], place_of(r), r["line"]) for r in records if r["verdict"] == "fn"}
    right = wrong = unjudged = 0
    for f in found:
        verdict = verdicts.get(f.key) or judged.get(f.key, {}).get("verdict")
        if verdict is None and (f.repo, f.place, f.line) in fn_lines:
            verdict = "tp"
        if verdict == "tp":
            right += 1
        elif verdict == "fp":
            wrong += 1
        else:
            unjudged += 1
    return right, wrong, unjudged


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trees", type=Path, help="folder with one checkout per repository, named owner+name")
    p.add_argument("manifest", type=Path, help="labelled records (JSON list)")
    p.add_argument("--judged", type=Path, help="judgements of findings the manifest does not know (JSON list)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="linter worker processes")
    p.add_argument("--json", type=Path, metavar="OUT", help="also write every finding and its verdict as JSON")
    p.add_argument("--runs", nargs="+", choices=sorted(RUNS), default=sorted(RUNS), help="configurations to score")
    p.add_argument("--markdown", type=Path, metavar="OUT",
                   help="also write the judged unknown findings as a Markdown table (file:line, rule, verdict, why)")
    p.add_argument("--worksheet", type=Path, metavar="OUT",
                   help="also write the default run's unjudged findings with the code around them (JSON), to judge")
    args = p.parse_args(argv)
    records, loops = load_manifest(args.manifest)
    judged = {(r["repo"], place_of(r), r["line"], rule_of(r)): r for r in load_records(args.judged)} if args.judged else {}
    repos = sorted({r["repo"] for r in records})
    missing = [repo for repo in repos if not tree_of(args.trees, repo).is_dir()]
    if missing:
        raise SystemExit(f"lint_accuracy: no checkout for {', '.join(missing)} under {args.trees} "
                         f"(expected folders {', '.join(repo.replace('/', '+') for repo in missing)})")
    lines = {repo: count_lines(tree_of(args.trees, repo)) for repo in repos}
    total_lines = sum(lines.values())
    dump: dict[str, Any] = {}
    markdown: list[str] = []
    for run in args.runs:
        found: list[Found] = []
        wall = 0.0
        cpu_before = _children_cpu()
        for repo in repos:
            print(f"[{run}] linting {repo} ({lines[repo]:,} lines) ...", file=sys.stderr, flush=True)
            got, seconds = lint(tree_of(args.trees, repo), repo, RUNS[run], args.jobs)
            found += got
            wall += seconds
        cpu = _children_cpu() - cpu_before
        rows, unknown, missed = score(found, records, judged, run)
        right, wrong, unjudged = precision(found, records, judged, run)
        print(f"\n== run: {run}  ({len(repos)} trees, {total_lines:,} lines of Python, "
              f"{wall:.1f} s wall, {total_lines / wall:,.0f} lines/s, --jobs {args.jobs}; "
              f"{cpu:.1f} s of CPU, {total_lines / cpu:,.0f} lines per CPU-second)")
        print("\n".join(table(rows, total_lines)))
        print(f"precision: {right}/{right + wrong + unjudged} right"
              + (f" ({100 * right / (right + wrong + unjudged):.1f}%)" if found else "")
              + (f"; {unjudged} unjudged, counted as not right" if unjudged else ""))
        by_context = Counter(r.get("context", "?") for r in missed)
        if missed:
            print(f"misses still missed: {len(missed)} ({', '.join(f'{k} {v}' for k, v in by_context.most_common())})")
        if unknown:
            print(f"findings the manifest does not know ({len(unknown)}):")
            for f, verdict in sorted(unknown, key=lambda item: item[0].key):
                print(f"  [{verdict}] {f.repo} {f.path}:{f.line} {f.rule} {f.message[:110]}")
        if loops and run == "default":
            print("\n".join(hand_read(found, records, loops, judged, lines)))
        if args.worksheet and run == "default":
            args.worksheet.write_text(json.dumps(worksheet(args.trees, unknown), indent=1) + "\n")
        dump[run] = [dict(f.__dict__, verdict=v) for f, v in unknown]
        dump[run + " missed"] = missed
        markdown += judged_table(run, unknown, judged)
    if args.json:
        args.json.write_text(json.dumps(dump, indent=1) + "\n")
    if args.markdown:
        args.markdown.write_text("\n".join(markdown) + "\n")
    return 0


def hand_read(found: list[Found], records: list[dict[str, Any]], loops: list[dict[str, Any]],
              judged: dict[tuple, dict[str, Any]], lines: dict[str, int]) -> list[str]:
    """Per repository: loops read by hand, costs found there and caught, findings right: recall and precision."""
    costs = [r for r in records if r["verdict"] == "fn"]
    hit = {(f.repo, f.place, f.line) for f in found}
    head = ("repository", "lines", "loops read", "costs caught", "findings right", "unjudged")
    body = []
    totals = [0, 0, 0, 0, 0, 0, 0]
    for repo in sorted(lines):
        mine = [r for r in costs if r["repo"] == repo]
        caught = sum((r["repo"], place_of(r), r["line"]) in hit for r in mine)
        right, wrong, unjudged = precision([f for f in found if f.repo == repo], records, judged, "default")
        n_loops = sum(1 for x in loops if x["repo"] == repo)
        row = [lines[repo], n_loops, caught, len(mine), right, right + wrong + unjudged, unjudged]
        totals = [a + b for a, b in zip(totals, row)]
        body.append((repo, f"{row[0]:,}", str(n_loops), pct(caught, len(mine)), pct(right, row[5]), str(unjudged)))
    body.append(("all", f"{totals[0]:,}", str(totals[1]), pct(totals[2], totals[3]), pct(totals[4], totals[5]),
                 str(totals[6])))
    widths = [max(len(r[i]) for r in (head, *body)) for i in range(len(head))]
    fmt = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    return ["", "hand-read loops: recall of the costs found by reading them, precision of every finding",
            fmt.format(*head), fmt.format(*("-" * w for w in widths)), *(fmt.format(*r) for r in body)]


def worksheet(trees: Path, unknown: list[tuple[Found, str]]) -> list[dict[str, Any]]:
    """The unjudged findings with 12 lines before and 4 after, numbered, as a judge reads them."""
    out = []
    for f, verdict in sorted(unknown, key=lambda item: item[0].key):
        if verdict != "unjudged":
            continue
        text = _lines(tree_of(trees, f.repo) / f.path, f.cell)
        start = max(f.line - 13, 0)
        code = [f"{'>' if n + 1 == f.line else ' '}{n + 1:5d}  {text[n]}" for n in range(start, min(f.line + 4, len(text)))]
        entry = {"repo": f.repo, "path": f.path, "line": f.line, "rule": f.rule, "message": f.message}
        if f.cell is not None:
            entry["cell"] = f.cell
        out.append({**entry, "code": "\n".join(code)})
    return out


def _lines(path: Path, cell: int | None) -> list[str]:
    """The file's lines, or a notebook cell's (numbered from 1, markdown cells included); [] when unreadable."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
        if cell is None:
            return text.splitlines()
        source = json.loads(text)["cells"][cell - 1].get("source", [])
        return ("".join(source) if isinstance(source, list) else str(source)).splitlines()
    except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError):
        return []


def judged_table(run: str, unknown: list[tuple[Found, str]], judged: dict[tuple, dict[str, Any]]) -> list[str]:
    """The findings of a run that the manifest does not know, with their judgement and its reason."""
    out = [f"### Run `{run}`: {len(unknown)} findings the manifest does not know", "",
           "| repository | file:line | rule | verdict | why |", "|---|---|---|---|---|"]
    for f, verdict in sorted(unknown, key=lambda item: item[0].key):
        reason = judged.get(f.key, {}).get("reason", "not judged yet").replace("|", "\\|").replace("\n", " ")
        where = f"{f.path}:{f.line}" if f.cell is None else f"{f.path}:cell {f.cell}:{f.line}"
        out.append(f"| {f.repo} | `{where}` | {f.rule} | {verdict} | {reason} |")
    return out + [""]


if __name__ == "__main__":
    sys.exit(main())
