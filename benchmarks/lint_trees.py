"""Check out the repositories a labelled manifest names, each at its commit, for `lint_accuracy.py`.

    python benchmarks/lint_trees.py TREES MANIFEST [MANIFEST ...] [--mirrors DIR] [--cache DIR]

The accuracy figures in docs/linter.md are measured on public repositories
at fixed commits (`benchmarks/data/lint-*.json`: the records' `repo` and
`commit`, and for the hand-read sets their `repos` list). This writes each
one's tree into `TREES/owner+name`, the layout `lint_accuracy.py` reads,
so anyone can measure the same code. Each repository comes from a bare
mirror, `DIR/owner+name/repo` (`--mirrors`), when one is there, else from a
blobless bare clone of `https://github.com/owner/name` kept under
`--cache` (default `.realworld/mirrors`, ignored by git) and fetched again
when it lacks the commit. Only the tree at the commit is written: no `.git`
in it (the linter reads files), symbolic links and submodules left out (a
link may point outside the tree), and blobs a partial mirror lacks counted
and said. A tree already there is left alone unless `--force` is given.
One line per repository; exit status 1 when any could not be had.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Wanted:
    """One repository at one commit, as a manifest names it."""

    repo: str  # owner/name
    commit: str

    @property
    def folder(self) -> str:
        return self.repo.replace("/", "+")


def wanted(manifests: list[Path]) -> list[Wanted]:
    """The (repository, commit) pairs of the manifests, first mention first; a repository at two commits is an
    error (the trees folder holds one checkout per repository)."""
    found: dict[str, str] = {}
    for path in manifests:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise SystemExit(f"lint_trees: cannot read manifest {path}: {e}") from e
        if isinstance(data, dict):  # a hand-read set: its repositories and its records
            records = [r for r in data.get("repos", []) if isinstance(r, dict)] + list(data.get("records", []))
        else:  # a labelled list of records
            records = data
        for record in records:
            if not isinstance(record, dict) or not record.get("repo") or not record.get("commit"):
                continue
            repo, commit = str(record["repo"]), str(record["commit"])
            if found.setdefault(repo, commit) != commit:
                raise SystemExit(f"lint_trees: {repo} is named at two commits ({found[repo][:12]} and "
                                 f"{commit[:12]}); give the manifests one at a time, each with its own TREES")
    return [Wanted(repo, commit) for repo, commit in found.items()]


def git(git_dir: Path, *args: str, data: bytes | None = None) -> bytes:
    proc = subprocess.run(["git", "--git-dir", str(git_dir), *args], input=data, capture_output=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.decode(errors="replace").strip() or f"git {args[0]} failed")
    return proc.stdout


def has_commit(git_dir: Path, commit: str) -> bool:
    try:
        git(git_dir, "cat-file", "-e", f"{commit}^{{commit}}")
    except RuntimeError:
        return False
    return True


def source(item: Wanted, mirrors: Path | None, cache: Path) -> Path:
    """A bare repository that holds the commit: the mirror's, else the cache's clone, fetched when needed."""
    if mirrors is not None:
        mirror = mirrors / item.folder / "repo"
        if mirror.is_dir() and has_commit(mirror, item.commit):
            return mirror
    clone = cache / f"{item.folder}.git"
    url = f"https://github.com/{item.repo}"
    if not clone.is_dir():
        clone.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(["git", "clone", "--quiet", "--bare", "--filter=blob:none", url, str(clone)],
                              capture_output=True)
        if proc.returncode != 0:
            shutil.rmtree(clone, ignore_errors=True)
            raise RuntimeError(f"cannot clone {url}: {proc.stderr.decode(errors='replace').strip()}")
    if not has_commit(clone, item.commit):
        git(clone, "fetch", "--quiet", "--filter=blob:none", "origin", item.commit)
    if not has_commit(clone, item.commit):
        raise RuntimeError(f"{url} has no commit {item.commit}")
    return clone


def write_tree(git_dir: Path, commit: str, dest: Path) -> tuple[int, int]:
    """Write the files of `commit` under `dest`: (files written, blobs the repository lacks)."""
    listing = git(git_dir, "ls-tree", "-r", "-z", "--full-tree", commit)
    entries: list[tuple[str, str]] = []
    for record in listing.split(b"\0"):
        if not record:
            continue
        meta, path = record.split(b"\t", 1)
        mode, kind, sha = meta.split()
        if kind == b"blob" and mode != b"120000":  # symbolic links and submodules stay out
            entries.append((sha.decode(), path.decode("utf-8", "surrogateescape")))
    missing = 0
    written = 0
    with subprocess.Popen(["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        for sha, path in entries:
            proc.stdin.write(sha.encode() + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline().split()
            if len(header) < 3 or header[1] == b"missing":
                missing += 1
                continue
            body = proc.stdout.read(int(header[2]))
            proc.stdout.read(1)
            target = dest / path
            if not target.resolve().is_relative_to(dest.resolve()):
                continue  # a path that climbs out of the tree
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)
            written += 1
        proc.stdin.close()
    return written, missing


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trees", type=Path, help="folder to write one checkout per repository into (owner+name)")
    p.add_argument("manifests", type=Path, nargs="+", help="labelled manifests (benchmarks/data/lint-*.json)")
    p.add_argument("--mirrors", type=Path, help="folder of bare mirrors, DIR/owner+name/repo, tried first")
    p.add_argument("--cache", type=Path, default=Path(".realworld/mirrors"),
                   help="where clones from GitHub are kept (default: .realworld/mirrors)")
    p.add_argument("--force", action="store_true", help="write trees that are already there again")
    args = p.parse_args(argv)
    items = wanted(args.manifests)
    if not items:
        raise SystemExit("lint_trees: the manifests name no repository with a commit")
    failed = 0
    for n, item in enumerate(items, 1):
        dest = args.trees / item.folder
        head = f"[{n}/{len(items)}] {item.repo} {item.commit[:12]}"
        if dest.exists() and not args.force:
            print(f"{head}: {dest} is there, left alone (--force writes it again)", flush=True)
            continue
        try:
            repo = source(item, args.mirrors, args.cache)
            if dest.exists():
                shutil.rmtree(dest)
            dest.mkdir(parents=True)
            written, missing = write_tree(repo, item.commit, dest)
        except (RuntimeError, OSError) as e:
            failed += 1
            print(f"{head}: failed: {e}", file=sys.stderr, flush=True)
            continue
        lacking = f", {missing} blobs the repository lacks" if missing else ""
        print(f"{head}: {written} files into {dest}{lacking}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
