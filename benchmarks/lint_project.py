"""How the cross-file analysis scales: one run over a tree of many files, and how many it lints twice.

    python benchmarks/lint_project.py TREE [TREE ...] --files 10000 [--jobs N]

Copies the Python files of the given trees (real code, e.g. the checkouts of
benchmarks/lint_accuracy.py) into one temporary project, repeating them
under new package names until it holds `--files` files, then lints it once
in-process with the default rules and no cache, as `offload-lint` does.
Prints a table: files, lines, files analysed (past the text prefilter),
files linted a second time because the project's call graph made some of
their functions hot, wall and CPU seconds, lines per CPU-second. Nothing
here is a test.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def sources(trees: list[Path]) -> list[tuple[Path, Path]]:
    out = []
    for tree in trees:
        for folder, dirs, files in os.walk(tree):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            out += [(Path(folder) / f, (Path(folder) / f).relative_to(tree.parent)) for f in files if f.endswith(".py")]
    return sorted(out)


def build(target: Path, files: list[tuple[Path, Path]], count: int) -> int:
    """Copies until `count` files; returns the lines of Python written."""
    lines = n = copy = 0
    while n < count:
        for source, rel in files:
            if n >= count:
                break
            dest = target / f"copy{copy}" / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, dest)
            lines += dest.read_bytes().count(b"\n")
            n += 1
        copy += 1
    return lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trees", nargs="+", type=Path, help="folders of real Python code to copy from")
    p.add_argument("--files", type=int, default=10_000, help="files in the generated project (default 10000)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="linter worker processes")
    args = p.parse_args()
    missing = [t for t in args.trees if not t.is_dir()]
    if missing:
        raise SystemExit(f"lint_project: no such folder: {', '.join(map(str, missing))}")
    files = sources(args.trees)
    if not files:
        raise SystemExit("lint_project: the trees hold no Python files")
    from linter.cli import check_parser
    from linter.run.session import Session

    with tempfile.TemporaryDirectory(prefix="lint-project-") as tmp:
        target = Path(tmp)
        lines = build(target, files, args.files)
        cwd = os.getcwd()
        os.chdir(target)
        try:
            session = Session.configured(None, check_parser().parse_args(["--no-cache", "--jobs", str(args.jobs), "."]))
            cpu0 = _cpu()
            wall0 = time.perf_counter()
            run = session.run([Path(".")])
            wall = time.perf_counter() - wall0
            cpu = _cpu() - cpu0
        finally:
            os.chdir(cwd)
    rows = [("files", f"{run.files:,}"), ("lines of Python", f"{lines:,}"), ("analysed (past the prefilter)", f"{len(run.jobs):,}"),
            ("linted again (second wave)", f"{run.relinted:,}"), ("findings", f"{sum(len(r.findings) for r in run.results):,}"),
            ("wall seconds", f"{wall:.1f}"), ("CPU seconds (this process and workers)", f"{cpu:.1f}"),
            ("lines per CPU-second", f"{lines / cpu:,.0f}")]
    width = max(len(k) for k, _ in rows)
    print(f"| {'measure':<{width}} | value |\n|{'-' * (width + 2)}|------:|")
    for k, v in rows:
        print(f"| {k:<{width}} | {v} |")
    return 0


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


if __name__ == "__main__":
    sys.exit(main())
