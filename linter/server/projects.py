"""What an open document is linted with, and its lint: the configuration, contexts and cache of `offload-lint`.

An editor shows a file, not a run, so the server finds the configuration
for each document the way the command line finds it for a path (the
nearest pyproject.toml with `[tool.offload-lint]` above it) and keeps one
`Session` per configuration file, rebuilt when that file changes on disk.
What a user sees is then decided by the same code as on the command line
(`Session.visible`): per-file ignores, the rules a file's context silences
(a test file gets the test context's rule set), suppression comments.

The results cache is the command line's: same folder, same salt, and keys
made from the bytes the document would have on disk (for a notebook: its
cells' Python and layout, as the command line keys an .ipynb), so a file
the CLI linted opens with its cached result and the other way round. Reading it
costs nothing, so every lint reads it; only texts that are on disk (a
document just opened or saved) are written to it, so that typing does not
fill the cache with drafts.

Kernel signatures cross files as in a run: a document that launches a
kernel it imports (`from .kernels import daxpy`) is linted with the
signatures of the files those imports name, taken from the editor when
they are open there and from disk otherwise.

A notebook is linted as `offload-lint` lints an .ipynb file: its code
cells as one Python text with their cell map, so findings carry the cell
they are in; its fixes are turned back into cell texts by the same code
that writes a fixed notebook (`Notebook.fixed_sources`).
"""

from __future__ import annotations

import argparse
import io
import os
import time
import tokenize
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Mapping, Sequence

from offload_core.catalog import Rule

from ..analysis.project import KernelIndex, KernelSig
from ..findings import FileResult, Finding, Fix
from ..inputs.notebooks import Notebook, NotebookFixError
from ..inputs.source import DecodeError, UnreadableError, decode, read_source
from ..run.runner import module_name_of
from ..run.session import Session

#: what `Session` reads of the command line: the server's defaults (fixes of both kinds are offered, marked)
_ARGS = dict(no_cache=False, cache_dir=None, unsafe_fixes=True, show_suppressed=False, jobs=1)


@dataclass(frozen=True)
class Linted:
    """One document's lint: the text it ran on, the findings a user sees, and what fixing needs."""

    path: Path | None
    text: str
    findings: tuple[Finding, ...]
    rules: Mapping[str, Rule]
    result: FileResult
    session: Session
    kernels: KernelIndex
    module_name: str
    is_package: bool
    cached: bool = False
    excluded: bool = False
    seconds: float = 0.0
    notebook: Notebook | None = None  # a notebook's lint: `text` is its cells' Python, findings carry cells

    def relint(self, text: str) -> FileResult:
        """The same lint (settings, kernels, module name, cells) of another text: for fixing in rounds."""
        from ..run.engine import lint_text

        return lint_text(
            text, self.session.settings, self.session.apis, self.kernels,
            path=self.result.path, module_name=self.module_name, is_package=self.is_package,
            cells=self.notebook.map if self.notebook is not None else None,
        )

    def writable(self, text: str, fix: Fix) -> bool:
        """Can `fix` be applied to `text` (in a notebook: without rewriting a line of IPython syntax)?"""
        return self.notebook is None or self.cell_sources(applied(text, fix)) is not None

    def cell_sources(self, text: str) -> dict[int, str] | None:
        """A notebook's fixed Python as the new source of each changed cell; None when it cannot go back."""
        assert self.notebook is not None
        try:
            return self.notebook.fixed_sources(text)
        except NotebookFixError:
            return None

    @cached_property
    def fixed(self) -> str:
        """The text with every safe fix applied, in rounds, as `offload-lint --fix` writes it.

        Kept once computed: editors ask for code actions at every move of
        the cursor, and each round of fixes lints the text again.
        """
        from ..outputs.applying import apply_rounds

        def applicable(result: FileResult) -> list[Finding]:
            return [f for f in self.session.visible(result)
                    if not f.suppressed and f.fix is not None and f.fix.safety == "safe"]

        accept = self.writable if self.notebook is not None else None
        text, _, _ = apply_rounds(self.text, self.result, self.relint, applicable, accept)
        return text


def applied(text: str, fix: Fix) -> str:
    """`text` with one fix applied."""
    from ..outputs.applying import apply_fixes

    return apply_fixes(text, [fix])[0]


class Projects:
    """The sessions of the configurations the open documents use, and linting a document with them."""

    def __init__(self, folders: Sequence[Path]) -> None:
        # deepest first, so a document gets the innermost workspace folder it lies in
        self.folders = sorted((f.resolve() for f in folders), key=lambda f: len(f.parts), reverse=True)
        self._sessions: dict[tuple[object, ...], Session] = {}

    def folder_of(self, path: Path | None) -> Path | None:
        if path is None:
            return self.folders[-1] if self.folders else None
        place = _place(path)
        return next((f for f in self.folders if place == f or f in place.parents), None)

    def session_for(self, path: Path | None) -> Session:
        """The session of the configuration `path` falls under; raises ConfigError or CatalogError."""
        from ..config.pyproject import find_pyproject

        start = path.parent if path is not None else self.folder_of(None)
        config_path = find_pyproject([start]) if start is not None and start.is_dir() else None
        if config_path is not None:
            try:
                stat = config_path.stat()
                key: tuple[object, ...] = (config_path, stat.st_mtime_ns, stat.st_size)
            except OSError:
                key = (config_path,)
            root = None
        else:
            # No configuration: defaults rooted in the workspace folder, where the CLI is usually run;
            # outside any folder there is no place for a cache that the user would expect.
            root = self.folder_of(path)
            key = (None, root)
        session = self._sessions.get(key)
        if session is None:
            args = argparse.Namespace(**{**_ARGS, "no_cache": config_path is None and root is None})
            session = Session.configured(config_path, args, root=root)
            self._sessions = {k: s for k, s in self._sessions.items() if k[0] != key[0]}  # an older version
            self._sessions[key] = session
        return session

    def lint(self, path: Path | None, text: str, store: bool, open_texts: Mapping[Path, str],
             notebook: Notebook | None = None) -> Linted:
        """Lint a document's text, or a notebook's cells (`notebook`, whose Python `text` is); `store` when
        the text is the file's content on disk (open, save)."""
        from ..run.engine import lint_text

        started = time.perf_counter()
        session = self.session_for(path)
        name = str(path) if path is not None else "<untitled>"
        if path is not None and session.config.excluded(path):
            empty = FileResult(name)
            return Linted(path, text, (), session.rules, empty, session, KernelIndex(), "__main__", False, excluded=True,
                          notebook=notebook)
        module_name, is_package = module_name_of(path) if path is not None and path.parent.is_dir() else ("__main__", False)
        if notebook is not None:
            is_package = False
            key: str | None = session.cache.key(notebook.cache_data, module_name, kind="ipynb")
        else:
            data = file_bytes(text)
            key = session.cache.key(data, module_name) if data is not None else None
        result = session.cache.get(key) if key is not None else None
        cached = result is not None

        def run(kernels: KernelIndex) -> FileResult:
            return lint_text(text, session.settings, session.apis, kernels, path=name, module_name=module_name,
                             is_package=is_package, cells=notebook.map if notebook is not None else None)

        if result is None:
            result = run(KernelIndex())
        kernels = self._kernels(result, path, session, open_texts)
        if not needs_hold(result, kernels):
            result, cached = run(kernels), False
        if store and not cached and key is not None and path is not None:
            session.cache.put(key, result)
        result = replace(result, path=name)  # a cached result carries the CLI's display path
        findings = tuple(f for f in session.visible(result) if not f.suppressed)
        return Linted(path, text, findings, session.rules, result, session, kernels, module_name, is_package,
                      cached=cached, seconds=time.perf_counter() - started, notebook=notebook)

    def _kernels(self, result: FileResult, path: Path | None, session: Session,
                 open_texts: Mapping[Path, str]) -> KernelIndex:
        """The signatures of the kernels `result` imports, from the files its imports name."""
        from ..run.engine import lint_text

        if not result.needs or path is None:
            return KernelIndex()
        sigs: dict[str, KernelSig] = {}
        for source in kernel_files([q for q, _ in result.needs], path):
            module_name, is_package = module_name_of(source)
            text = open_texts.get(source)
            data: bytes | None = None
            if text is None:
                try:
                    data = read_source(source)
                    text = decode(data).text
                except (UnreadableError, DecodeError):
                    continue
            else:
                data = file_bytes(text) if _on_disk(source, text) else None
            key = session.cache.key(data, module_name) if data is not None else None
            found = session.cache.get(key) if key is not None else None
            if found is None:
                found = lint_text(text, session.settings, session.apis, None, path=str(source),
                                  module_name=module_name, is_package=is_package)
                if key is not None:
                    session.cache.put(key, found)
            sigs.update((sig.qualname, sig) for sig in found.exports)
        return KernelIndex(sigs)


def needs_hold(result: FileResult, kernels: KernelIndex) -> bool:
    """Did `result` see the same signatures for the kernels it imports as `kernels` has now?"""
    for qualname, digest in result.needs:
        sig = kernels.lookup(qualname)
        if (sig.digest() if sig is not None else None) != digest:
            return False
    return True


def kernel_files(qualnames: Sequence[str], path: Path) -> list[Path]:
    """Files that may define the kernels named (`pkg.kernels.daxpy`), other than `path` itself.

    Module names are looked up from the document's package root (the folder
    above its outermost `__init__.py`) and from its own folder, which is how
    a script's `from kernels import daxpy` finds `kernels.py` beside it.
    """
    folder = path.parent
    top = folder
    while (top / "__init__.py").exists() and top.parent != top:
        top = top.parent
    out: list[Path] = []
    for qualname in qualnames:
        parts = qualname.split(".")[:-1]
        if not parts:
            continue
        for base in dict.fromkeys((top, folder)):
            for candidate in (base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts, "__init__.py")):
                if candidate != path and candidate not in out and candidate.is_file():
                    out.append(candidate)
    return out


def file_bytes(text: str) -> bytes | None:
    """The bytes of a file that holds `text`, as the CLI's cache keys them; None where that is not certain.

    The encoding is the one the text itself declares (`# coding: latin-1`),
    UTF-8 otherwise; a text that does not come back unchanged from those
    bytes (a BOM, a character the declared encoding lacks) gets no key, so
    it can never be served another text's result.
    """
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(text.encode("utf-8", "surrogatepass")).readline)
        data = text.encode(encoding)
        return data if decode(data).text == text else None
    except (SyntaxError, LookupError, UnicodeError, DecodeError):
        return None


def _on_disk(path: Path, text: str) -> bool:
    try:
        data = read_source(path)
        return decode(data).text == text
    except (UnreadableError, DecodeError):
        return False


def _place(path: Path) -> Path:
    return Path(os.path.realpath(path.parent)) / path.name
