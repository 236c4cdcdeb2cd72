"""A run over many files: discovery, prefilter, cache, worker pool, cross-file kernels.

The main process reads every file once, decodes it and applies the text
prefilter (a regex for the known libraries' module names), which settles
most files of an ordinary tree without parsing them. The rest go through
the cache and then to a process pool.

Kernel signatures cross files in two waves: files that mention `kernel`
(the only ones that can define one) are linted first; their exports form
the KernelIndex the other files are linted with. A first-wave file that
itself imports a kernel from another first-wave file is linted again once
the index is complete, as is a cached result whose imported kernels have
changed since (`needs`). Functions cross files the same way: every result
carries its file's call-graph summary; once all are in, the project's hot
functions are computed (`callgraph.hot_functions`), and a file whose
functions that graph makes hot, beyond what the file saw itself, is linted
again with them (`told` says which it was linted with). Under pre-commit (`PRE_COMMIT=1`), which already
runs hooks in parallel, the pool is not used.

A notebook (`.ipynb`) is read here too: its code cells become one Python
text and a map of cells (notebooks.py), and from then on it is a file like
any other. Its cache key is that text and that map, not the file's bytes,
so running a notebook again (new outputs, same code) keeps its entry.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..analysis.apis import Api, ApiIndex
from ..analysis.callgraph import Hot, Summary, hot_functions
from ..analysis.plainsummary import plain_summary
from ..analysis.project import KernelIndex
from ..config.pyproject import Config, matches
from ..config.rules import RuleSettings, diagnostic
from ..findings import FileResult
from ..inputs.notebooks import CellMap, Notebook, NotebookError, is_notebook
from ..inputs.source import DecodeError, UnreadableError, decode, read_source
from .cache import Cache
from .helpers import project_helpers
from .handed import Handed, project_params, record_readers
from .handed import told as told_params
from .helpers import told as told_helpers
from .workers import WorkerDied, die_with_parent

_STATE: dict[str, Any] = {}
_DEFINES_KERNEL = re.compile(r"@\s*[\w.]*kernel\b|RawKernel\s*\(")


@dataclass(frozen=True)
class Job:
    path: Path
    display: str
    module_name: str
    is_package: bool
    text: str
    key: str
    encoding: str = "utf-8"
    cells: CellMap | None = None  # a notebook's cells; `text` is then their Python
    admitted: bool = False  # no GPU library named, but it reads the project's device records: lint it anyway

    @property
    def may_export(self) -> bool:
        """Can this file define a kernel (`@kernel`, `@oc.kernel(...)`, `RawKernel(`)?"""
        return _DEFINES_KERNEL.search(self.text) is not None


@dataclass
class RunResult:
    results: list[FileResult] = field(default_factory=list)
    jobs: dict[str, Job] = field(default_factory=dict)  # display path -> job (files that were analysed)
    files: int = 0
    skipped: int = 0
    cached: int = 0
    relinted: int = 0  # files linted again once the project's call graph was known (the second wave)
    index: KernelIndex = field(default_factory=KernelIndex)
    notebooks: dict[str, Notebook] = field(default_factory=dict)  # display path -> notebook (analysed ones)


def discover(paths: Sequence[Path], config: Config) -> list[Path]:
    """Python files and notebooks under `paths`, minus excluded ones; a named file is taken whatever its suffix.

    Exclusion is matched on paths relative to the configuration's folder,
    built by string joins during the walk: resolving every file (a syscall
    each) was a third of a warm run. The walk uses `os.scandir`, whose
    entries know without a syscall whether they are symlinks, so only
    symlinks are resolved: a file reached through a link and under its own
    name is linted once, under its own name. Links are never followed into
    folders, and a link that cannot be resolved (a loop, a dangling link)
    is kept: reading it yields OFF902 for that path while the run goes on.
    What is not a regular file (a FIFO, a device) is kept for the same
    reason; the reader refuses it without opening it blocking.
    """
    root = os.path.realpath(config.root)
    found: list[Path] = []
    links: list[tuple[Path, str]] = []
    seen: set[str] = set()

    def rel_of(absolute: str) -> str:
        if absolute == root:
            return ""
        if absolute.startswith(root + os.sep):
            return absolute[len(root) + 1:].replace(os.sep, "/")
        return absolute.replace(os.sep, "/")

    def add(path: Path, absolute: str) -> None:
        if absolute not in seen:
            seen.add(absolute)
            found.append(path)

    def walk(top: Path, top_base: str) -> None:
        stack = [(top, top_base)]  # a stack, not recursion: trees can be deeper than the recursion limit
        while stack:
            folder, base = stack.pop()
            try:
                with os.scandir(folder) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                continue  # an unreadable folder: nothing in it can be linted
            below: list[tuple[Path, str]] = []
            for entry in entries:
                absolute = os.path.join(base, entry.name)
                if matches(rel_of(absolute), config.exclude):
                    continue
                try:
                    is_folder = entry.is_dir(follow_symlinks=False)
                    is_link = entry.is_symlink()
                except OSError:
                    continue
                if is_folder:
                    below.append((folder / entry.name, absolute))
                elif entry.name.endswith((".py", ".pyi", ".ipynb")):
                    if is_link:
                        links.append((folder / entry.name, absolute))
                    else:
                        add(folder / entry.name, absolute)
            stack.extend(reversed(below))

    for path in paths:
        top = _real(path)
        if path.is_dir():
            walk(path, top)
        elif not matches(rel_of(top), config.exclude):
            add(path, top)
    for path, absolute in links:  # after every real file, so the real name wins
        add(path, _real(Path(absolute)))
    return found


def _real(path: Path) -> str:
    """`os.path.realpath`, which (unlike `Path.resolve` before 3.13) returns something for a symlink loop."""
    return os.path.realpath(path)


def _place(path: Path) -> str:
    """The file's absolute path with its folders resolved but the file itself not followed."""
    return os.path.join(os.path.realpath(path.parent), path.name)


def module_name_of(path: Path) -> tuple[str, bool]:
    """Dotted module name from the package folders (`__init__.py`) above the file."""
    path = Path(_place(path))
    parts = [] if path.stem == "__init__" else [path.stem]
    folder = path.parent
    while (folder / "__init__.py").exists() and folder.parent != folder:
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts) or path.stem, path.stem == "__init__"


def display_path(path: Path) -> str:
    """The path relative to the current folder when it lies inside it; a symlink shows under its own name."""
    place = _place(path)
    cwd = os.path.realpath(os.getcwd())
    if place.startswith(cwd + os.sep):
        return place[len(cwd) + 1:].replace(os.sep, "/")
    return str(path)


def _init_worker(settings: RuleSettings, apis: ApiIndex, parent: int | None = None) -> None:
    if parent is not None:  # a pool worker: go when the command goes, whatever kills it
        die_with_parent(parent)
    _STATE["settings"] = settings
    _STATE["apis"] = apis


def _lint_job(job: Job, sigs: dict, hot: Mapping[str, Hot] | None = None,  # type: ignore[type-arg]
              helpers: Mapping[str, Api] | None = None, params: Handed | None = None) -> FileResult:
    from .engine import lint_text  # LibCST loads only when a file needs parsing
    kernels = _STATE.get("kernels")
    if kernels is None or _STATE.get("sigs") is not sigs:
        kernels = KernelIndex(sigs)
        _STATE["kernels"], _STATE["sigs"] = kernels, sigs
    return lint_text(
        job.text, _STATE["settings"], _STATE["apis"], kernels,
        path=job.display, module_name=job.module_name, is_package=job.is_package, cells=job.cells, hot=hot,
        helpers=helpers, params=params, prefilter=not job.admitted,
    )


def _lint_chunk(chunk: list[Job], sigs: dict, hots: Mapping[str, Mapping[str, Hot]],  # type: ignore[type-arg]
                helpers: Mapping[str, Mapping[str, Api]], params: Mapping[str, Handed]) -> list[FileResult]:
    return [_lint_job(job, sigs, hots.get(job.display), helpers.get(job.display), params.get(job.display))
            for job in chunk]


class Runner:
    def __init__(self, settings: RuleSettings, apis: ApiIndex, cache: Cache, jobs: int, progress: bool,
                 drives: Callable[[FileResult], bool] = lambda result: True) -> None:
        """`drives(result)`: may this file's loops make other files' functions hot (no for a test's loops)?"""
        self.settings = settings
        self.drives = drives
        self.apis = apis
        self.cache = cache
        self.jobs = max(1, jobs)
        if os.environ.get("PRE_COMMIT") == "1":
            self.jobs = 1
        self.progress = progress and sys.stderr.isatty()
        self._pool: ProcessPoolExecutor | None = None
        self._plain: dict[str, FileResult] = {}  # summaries of files without GPU code, for the call graph only
        self._plain_paths: dict[str, Path] = {}

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)

    def _map(self, jobs: list[Job], sigs: dict,  # type: ignore[type-arg]
             hots: Mapping[str, Mapping[str, Hot]] | None = None,
             helpers: Mapping[str, Mapping[str, Api]] | None = None,
             params: Mapping[str, Handed] | None = None) -> list[FileResult]:
        hots = hots or {}
        helpers = helpers or {}
        params = params or {}
        if self.jobs == 1 or len(jobs) < 8:
            _init_worker(self.settings, self.apis)
            return [r for i, job in enumerate(jobs)
                    if (r := self._tick(_lint_job(job, sigs, hots.get(job.display), helpers.get(job.display),
                                                  params.get(job.display)), i, len(jobs)))]
        if self._pool is None:
            method = "fork" if sys.platform.startswith("linux") else "spawn"
            self._pool = ProcessPoolExecutor(
                self.jobs, mp_context=multiprocessing.get_context(method),
                initializer=_init_worker, initargs=(self.settings, self.apis, os.getpid()),
            )
        size = max(1, min(64, len(jobs) // (self.jobs * 4)))
        chunks = [jobs[i:i + size] for i in range(0, len(jobs), size)]
        parts = [{job.display: hots[job.display] for job in chunk if job.display in hots} for chunk in chunks]
        helper_parts = [{job.display: helpers[job.display] for job in chunk if job.display in helpers}
                        for chunk in chunks]
        param_parts = [{job.display: params[job.display] for job in chunk if job.display in params} for chunk in chunks]
        out: list[FileResult] = []
        try:
            for chunk_result in self._pool.map(_lint_chunk, chunks, [sigs] * len(chunks), parts, helper_parts,
                                                param_parts):
                out.extend(chunk_result)
                self._tick(None, len(out) - 1, len(jobs))
        except BrokenProcessPool:
            raise WorkerDied(
                "a worker process ended abruptly (killed, or out of memory); run again, or with --jobs 1"
            ) from None
        return out

    def _read(self, path: Path, out: RunResult) -> Job | None:
        """The file as a Job to lint; None when it is settled here (OFF902, or no known API in it)."""
        display = display_path(path)
        try:
            data = read_source(path)
        except UnreadableError as exc:
            out.results.append(FileResult(display, diagnostic(self.settings, "OFF902", 1, 1, str(exc))))
            return None
        if is_notebook(path):
            return self._read_notebook(path, display, data, out)
        try:
            decoded = decode(data)
        except DecodeError as exc:
            out.results.append(FileResult(display, diagnostic(self.settings, "OFF902", 1, 1, f"cannot decode: {exc}")))
            return None
        if not self.apis.mentions_api(decoded.text):
            out.skipped += 1
            self._plain_summary(display, data, decoded.text, path)
            return None
        module_name, is_package = module_name_of(path)
        key = self.cache.key(data, module_name)
        return Job(path, display, module_name, is_package, decoded.text, key, decoded.encoding)

    def _admit(self, displays: list[str]) -> list[Job]:
        """Jobs for files the prefilter passed over that read the project's device records (`handed.record_readers`):
        linted in full, whatever they import."""
        out = []
        for display in displays:
            path = self._plain_paths[display]
            try:
                data = read_source(path)
                decoded = decode(data)
            except (UnreadableError, DecodeError):
                continue  # gone or changed since it was read: it stays a file without GPU code, as it was then
            module_name, is_package = module_name_of(path)
            out.append(Job(path, display, module_name, is_package, decoded.text,
                           self.cache.key(data, module_name, kind="records"), decoded.encoding, admitted=True))
        return out

    def _plain_summary(self, display: str, data: bytes, text: str, path: Path) -> None:
        """Keep the call-graph summary of a file without GPU code: its step loops may run other files' functions.

        Cached like a linted file's result (an empty one when the file gives
        the graph nothing), so a warm run parses none of these files again.
        """
        module_name, is_package = module_name_of(path)
        key = self.cache.key(data, module_name, kind="plain")
        result = self.cache.get(key)
        if result is None or result.path != display:
            found = plain_summary(text, module_name, is_package, display)
            summary, tests = found if found is not None else (None, None)
            result = FileResult(display, skipped=True, summary=summary, tests=tests)
            self.cache.put(key, result)
        if result.summary is not None:
            self._plain[display] = result
            self._plain_paths[display] = path

    def _read_notebook(self, path: Path, display: str, data: bytes, out: RunResult) -> Job | None:
        try:
            notebook = Notebook.parse(data)
        except NotebookError as exc:
            out.results.append(FileResult(display, diagnostic(self.settings, "OFF902", exc.line, exc.column, str(exc))))
            return None
        if not notebook.python or not self.apis.mentions_api(notebook.code):
            out.skipped += 1
            return None
        module_name, _ = module_name_of(path)
        key = self.cache.key(notebook.cache_data, module_name, kind="ipynb")
        out.notebooks[display] = notebook
        return Job(path, display, module_name, False, notebook.code, key, "utf-8", notebook.map)

    def _tick(self, result: FileResult | None, i: int, total: int) -> FileResult | None:
        """Progress on stderr for long runs in a terminal: every 100 files and at the end."""
        done = i + 1
        if self.progress and total >= 200 and (done % 100 == 0 or done == total):
            sys.stderr.write(f"\roffload-lint: {done}/{total} files" + ("\n" if done == total else ""))
            sys.stderr.flush()
        return result

    def run(self, files: Iterable[Path]) -> RunResult:
        out = RunResult()
        candidates: list[Job] = []
        for path in files:
            out.files += 1
            job = self._read(path, out)
            if job is not None:
                candidates.append(job)
        out.jobs = {job.display: job for job in candidates}

        first: list[Job] = []
        second: list[Job] = []
        done: dict[str, FileResult] = {}
        for job in candidates:
            hit = self.cache.get(job.key)
            if hit is not None:
                done[job.display] = hit
            elif job.may_export:
                first.append(job)
            else:
                second.append(job)
        fresh = dict(zip((j.display for j in first), self._map(first, {})))
        done.update(fresh)
        sigs = {sig.qualname: sig for result in done.values() for sig in result.exports}
        index = KernelIndex(sigs)
        stale = [j for j in candidates if j.display in done and not _needs_hold(done[j.display], index)]
        redo = second + stale
        fresh.update(zip((j.display for j in redo), self._map(redo, sigs)))
        done.update(fresh)
        admitted = self._admit(record_readers(self._plain, done))
        candidates += admitted
        out.skipped -= len(admitted)
        for job in admitted:
            self._plain.pop(job.display, None)
            hit = self.cache.get(job.key)
            done[job.display] = hit if hit is not None else self._map([job], sigs)[0]
            if hit is None:
                fresh[job.display] = done[job.display]
        hots = _project_hot({**self._plain, **done}, self.drives)
        helpers = project_helpers(done, hots)
        params = project_params(done, hots)
        told = [j for j in candidates if tuple(sorted(hots.get(j.display, {}))) + told_helpers(helpers.get(j.display))
                + told_params(params.get(j.display)) != done[j.display].told]
        fresh.update(zip((j.display for j in told), self._map(told, sigs, hots, helpers, params)))
        out.relinted = len(told)
        done.update(fresh)
        out.cached = len(candidates) - len(fresh)
        for job in candidates:
            if job.display in fresh:
                self.cache.put(job.key, fresh[job.display])
            out.results.append(done[job.display])
        out.index = index
        return out


def _project_hot(done: Mapping[str, FileResult], drives: Callable[[FileResult], bool]) -> dict[str, dict[str, Hot]]:
    """Per file, its functions that other files' loops or roles make hot (what its own summary cannot see).

    A test's loops run a function over a few cases, not once per step of
    real work: files `drives` refuses give the graph their edges but no roots.
    """
    summaries = {path: r.summary for path, r in done.items() if isinstance(r.summary, Summary)}
    hot = hot_functions(s if drives(done[path]) else replace(s, roots=()) for path, s in summaries.items())
    out: dict[str, dict[str, Hot]] = {}
    for path, summary in summaries.items():
        mine = {q: hot[q] for q in summary.functions if q in hot and q not in summary.hot_here}
        if mine:
            out[path] = mine
    return out


def _needs_hold(result: FileResult, index: KernelIndex) -> bool:
    for qualname, digest in result.needs:
        sig = index.lookup(qualname)
        if (sig.digest() if sig is not None else None) != digest:
            return False
    return True
