"""How long one large file takes to lint, and how much memory: the measurement behind OFF903's default.

    python benchmarks/lint_size.py [--sizes 0.25,0.5,1,2,4] [--keep DIR] [--with-collector]

For each size (in MB) the script writes one Python file of that size made
of the rule catalog's examples, each inside a function of its own (so the
file has the scopes, loops and calls of real GPU code, and findings), and
lints it in a fresh process with the default rules and no size limit
(`OFF903.max-bytes = 0`). The child reports the wall time of the lint
(parse, index, checks, positions), the CPU time it used (less sensitive
than the wall time to other processes on a shared machine) and its peak
resident memory (the
interpreter and LibCST included; the first row, an empty file, is that
baseline). `--with-collector` adds a column: the same lint with Python's
cyclic garbage collector left running, as it was before the engine paused
it. Prints a Markdown table; nothing here is a test.
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHILD = r"""
import json, resource, sys, time, types
import linter.run.engine
if sys.argv[2] == "collector":  # the engine's pause of the collector made a no-op
    linter.run.engine.gc = types.SimpleNamespace(isenabled=lambda: False, disable=lambda: None, enable=lambda: None)
from offload_core.catalog import load_catalog
from linter.analysis.apis import ApiIndex
from linter.run.engine import lint_text
from linter.config.rules import settings_for

catalog = load_catalog()
enabled = frozenset(c for c, r in catalog.rules.items() if r.kind == "static" and r.default_enabled)
settings = settings_for(catalog.rules, enabled, {"OFF903": {"max-bytes": 0}})
apis = ApiIndex.from_files(catalog.apis)
text = open(sys.argv[1], encoding="utf-8").read()
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
start, start_cpu = time.perf_counter(), cpu()
result = lint_text(text, settings, apis, prefilter=False)
elapsed, used = time.perf_counter() - start, cpu() - start_cpu
peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": elapsed, "cpu": used, "peak_mb": peak_kib / 1024, "findings": len(result.findings),
                  "error": result.error}))
"""


def snippets() -> list[str]:
    """Every catalog example that parses, as the body of a function."""
    from offload_core.catalog import load_catalog

    out = []
    for rule in load_catalog().rules.values():
        if rule.kind != "static" or rule.id.startswith("OFF9"):
            continue
        for example in (*rule.invalid, *rule.valid):
            body = textwrap.indent(example.code, "    ")
            try:
                ast.parse(f"def f():\n{body}")
            except SyntaxError:
                continue
            out.append(body)
    return out


def generate(path: Path, size: int, parts: list[str], seed: int = 0) -> int:
    """Write about `size` bytes of functions to `path`; returns its line count."""
    rng = random.Random(seed)
    chunks, total, n = ["import cupy as cp\nimport numpy as np\n"], 0, 0
    while total < size:
        chunk = f"\n\ndef case_{n}():\n{rng.choice(parts)}"
        chunks.append(chunk)
        total += len(chunk)
        n += 1
    text = "".join(chunks)
    path.write_text(text, encoding="utf-8")
    return text.count("\n") + 1


def _empty(path: Path) -> int:
    path.write_text("import cupy\n", encoding="utf-8")
    return 1


def measure(path: Path, collector: bool = False) -> dict[str, object]:
    mode = "collector" if collector else "paused"
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), mode], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        return {"seconds": float("nan"), "cpu": float("nan"), "peak_mb": float("nan"), "findings": 0,
                "error": proc.stderr.strip()[-300:]}
    return json.loads(proc.stdout)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="0.25,0.5,1,2,4", help="file sizes in MB, comma-separated")
    p.add_argument("--keep", help="write the generated files to this folder and keep them")
    p.add_argument("--with-collector", action="store_true", help="also time each file with the garbage collector running")
    args = p.parse_args()
    sizes = [float(s) for s in args.sizes.split(",") if s.strip()]
    parts = snippets()
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="lint-size-"))
    folder.mkdir(parents=True, exist_ok=True)
    extra = " with the collector: time, CPU (s) |" if args.with_collector else ""
    print(f"| file size | lines | lint time (s) | CPU (s) | peak RSS (MB) | findings |{extra}")
    print("|---:|---:|---:|---:|---:|---:|" + ("---:|" if args.with_collector else ""))
    for mb in [0.0, *sizes]:
        path = folder / f"size_{mb:g}mb.py"
        lines = generate(path, int(mb * 1_000_000), parts) if mb else _empty(path)
        row = measure(path)
        if row.get("error"):
            print(f"| {mb:g} MB | {lines} | failed: {row['error']} | | | |")
            continue
        cells = (f"| {mb:g} MB | {lines:,} | {row['seconds']:.1f} | {row['cpu']:.1f} | {row['peak_mb']:.0f} "
                 f"| {row['findings']:,} |")
        if args.with_collector:
            other = measure(path, collector=True)
            cells += f" {other['seconds']:.1f}, {other['cpu']:.1f} |"
        print(cells, flush=True)
        if not args.keep:
            path.unlink()
    if not args.keep:
        folder.rmdir()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
