"""How fast offload-lint is, against Fixit running one comparable rule.

    python benchmarks/lint_speed.py [--files N] [--jobs N] [--fixit PATH]

Two trees, each linted through the real commands (start-up included):

* the Python standard library of the running interpreter (copied to a
  temporary folder without site-packages, so both tools see the same files);
* a GPU-heavy tree of N generated files (default 1000), each made of eight
  snippets from the rule catalog's examples, so every file mentions the GPU
  libraries and goes through the full analysis.

offload-lint runs cold (an empty cache folder) and warm (the same folder
again). Fixit runs one rule of the same shape as OFF101 (qualified-name
resolution of calls, is the call inside a loop), written below. Fixit is
not a dependency of the project: unless `--fixit` names its executable or
it is on PATH, the script installs it into a virtualenv of its own under
~/.cache/offload-guard/. Prints a Markdown table; nothing here is a test.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FIXIT_RULE = '''
import libcst as cst
from libcst.metadata import QualifiedNameProvider
from fixit import LintRule

COPIES = {"cupy.asarray", "cupy.array", "cupy.asnumpy", "numba.cuda.to_device", "jax.device_put", "jax.device_get"}


class TransferInLoop(LintRule):
    METADATA_DEPENDENCIES = (QualifiedNameProvider,)

    def __init__(self):
        super().__init__()
        self.depth = 0

    def visit_For(self, node):
        self.depth += 1

    def leave_For(self, node):
        self.depth -= 1

    def visit_While(self, node):
        self.depth += 1

    def leave_While(self, node):
        self.depth -= 1

    def visit_Call(self, node):
        if self.depth:
            names = {q.name for q in self.get_metadata(QualifiedNameProvider, node, set())}
            if names & COPIES:
                self.report(node, "host<->device copy inside a loop")
'''


def stdlib_tree(dest: Path) -> int:
    src = Path(sysconfig.get_paths()["stdlib"])
    n = 0
    for path in src.rglob("*.py"):
        rel = path.relative_to(src)
        if "site-packages" in rel.parts or "__pycache__" in rel.parts:
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        n += 1
    return n


def gpu_tree(dest: Path, files: int) -> int:
    from offload_core.catalog import load_catalog

    snippets = [
        e.code for r in load_catalog().rules.values() if r.kind == "static" and not r.id.startswith("OFF9")
        for e in (*r.invalid, *r.valid)
    ]
    rng = random.Random(42)
    dest.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        body = "\n\n".join(rng.sample(snippets, 8))
        (dest / f"gpu_{i:05d}.py").write_text(f"# generated file {i}\n{body}")
    return files


def timed(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, ok: tuple[int, ...] = (0, 1)) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in ok:
        raise SystemExit(f"{' '.join(cmd[:3])} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return elapsed


def find_fixit(explicit: str | None) -> str:
    if explicit:
        return explicit
    on_path = shutil.which("fixit")
    if on_path:
        return on_path
    venv = Path.home() / ".cache" / "offload-guard" / "fixit-venv"
    exe = venv / "bin" / "fixit"
    if not exe.exists():
        print(f"installing Fixit into {venv} (once) ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "fixit"], check=True)
    return str(exe)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--files", type=int, default=1000, help="files in the generated GPU-heavy tree")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes for offload-lint")
    p.add_argument("--fixit", help="the fixit executable (default: PATH, else a private virtualenv)")
    p.add_argument("--no-fixit", action="store_true", help="skip the Fixit comparison")
    args = p.parse_args()
    fixit = None if args.no_fixit else find_fixit(args.fixit)
    lint = [sys.executable, "-m", "linter", "--exit-zero", "--jobs", str(args.jobs), "--select", "ALL"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        rules = work / "rules_pkg"
        rules.mkdir()
        (rules / "bench_rules.py").write_text(FIXIT_RULE)
        trees = [("standard library", work / "stdlib", stdlib_tree), ("GPU-heavy (generated)", work / "gpu", None)]
        for label, tree, make in trees:
            n = make(tree) if make else gpu_tree(tree, args.files)
            cache = work / f"cache-{tree.name}"
            cold = timed([*lint, "--cache-dir", str(cache), "."], tree)
            warm = timed([*lint, "--cache-dir", str(cache), "."], tree)
            serial = timed([*lint, "--no-cache", "--jobs", "1", "."], tree)
            fix = None
            if fixit:
                env = dict(os.environ, PYTHONPATH=str(rules))
                # Fixit exits 1 with findings and 2 when some files do not parse (the stdlib has a few).
                fix = timed([fixit, "--rules", "bench_rules", "lint", "."], tree, env, ok=(0, 1, 2))
            rows.append((label, n, cold, warm, serial, fix))
    print(f"| tree | files | offload-lint cold (-j{args.jobs}) | warm | cold, -j1 | Fixit, 1 rule | cold vs Fixit | warm speed-up |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, n, cold, warm, serial, fix in rows:
        fx = f"{fix:.2f} s ({n / fix:,.0f} files/s)" if fix else "-"
        ratio = f"{fix / cold:.1f}x" if fix else "-"
        print(
            f"| {label} | {n} | {cold:.2f} s ({n / cold:,.0f} files/s) | {warm:.2f} s ({n / warm:,.0f} files/s) | "
            f"{serial:.2f} s ({n / serial:,.0f} files/s) | {fx} | {ratio} | {cold / warm:.1f}x |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
