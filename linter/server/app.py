"""The language server: open documents in; diagnostics, code actions and hover text out (pygls, stdio).

Documents are synchronised whole (`TextDocumentSyncKind.Full`): the client
sends the full text on every change, so the server never patches text by
positions, and a lint always sees exactly what the editor shows.

What is linted is a *unit*: a Python document, or an open notebook, whose
code cells are linted together as `offload-lint` lints the .ipynb file
(names flow from cell to cell, IPython syntax is understood) and whose
findings are published on the cells they are in.

A unit is linted when it is opened or saved, and a short while after the
last change (`--debounce-ms`): typing coalesces into one lint of the
latest text. Lints run one at a time on a worker thread, so the server
keeps answering while LibCST parses; a result whose unit changed
meanwhile is dropped, since a newer lint is already scheduled. A request
that needs the findings of the current text (code actions, hover) lints it
first if it has not been linted yet, so an action never edits text that
has moved. Saving a file re-lints the other open units soon after,
because they may import its kernels.

Configuration mistakes are shown once each as an error message (the same
line the CLI prints), and the unit gets no diagnostics until the file
is fixed; every lint is logged (`window/logMessage`) with its count and
whether the cache answered.
"""

from __future__ import annotations

import asyncio
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from offload_core.catalog import CatalogError

from .. import __version__
from ..config.pyproject import ConfigError
from ..inputs.notebooks import Notebook, NotebookError
from . import messages
from .messages import View
from .positions import LineIndex
from .projects import Linted, Projects

PYTHON_SUFFIXES = (".py", ".pyi")
#: the documents served: files and new unsaved ones. An editor that does not speak the protocol's
#: notebook synchronisation sends a notebook's cells as documents of their own (`vscode-notebook-cell:`),
#: and one cell linted alone is wrong: its names come from earlier cells, and IPython syntax (`%timeit`)
#: is a syntax error outside a notebook. Such cells are left alone.
SCHEMES = ("file", "untitled")
#: notebooks are synchronised as notebooks (all their cells, so that cells are numbered as in the file)
NOTEBOOKS = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithNotebook(
        notebook=types.NotebookDocumentFilterPattern(pattern="**/*.ipynb"))],
    save=True,
)

#: (uri, version, cell number or None, text) of each document a unit is shown in
Doc = tuple[str, "int | None", "int | None", str]


@dataclass(frozen=True)
class Reading:
    """What one lint reads: a document's text, or an open notebook's code cells as one Python text."""

    unit: str  # the document's or the notebook's URI
    path: Path | None
    text: str
    docs: tuple[Doc, ...]
    notebook: Notebook | None = None


@dataclass(frozen=True)
class State:
    """The last lint published for a unit, with the documents it was shown in."""

    docs: tuple[Doc, ...]
    linted: Linted
    views: Mapping[int | None, View]  # by cell number (None: the document itself)


class LintServer(LanguageServer):
    def __init__(self, debounce: float) -> None:
        super().__init__("offload-lint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full,
                         notebook_document_sync=NOTEBOOKS)
        self.debounce = debounce
        self.projects = Projects([])
        self.opened: set[str] = set()  # Python documents (not cells)
        self.notebooks: set[str] = set()
        self.states: dict[str, State] = {}
        self.timers: dict[str, asyncio.TimerHandle] = {}
        self.tasks: set[asyncio.Task[Any]] = set()
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="offload-lint")
        self.shown: set[str] = set()
        self.shut_down = False

    # -- units ----------------------------------------------------------------------

    def set_folders(self, uris: list[str]) -> None:
        folders = [Path(p) for p in (to_fs_path(u) for u in uris) if p]
        self.projects = Projects(folders)

    def unit_of(self, uri: str) -> str | None:
        """The unit a document belongs to: itself, or the open notebook it is a cell of."""
        if uri in self.opened or uri in self.notebooks:
            return uri
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        return notebook.uri if notebook is not None and notebook.uri in self.notebooks else None

    def read(self, unit: str) -> Reading | None:
        """The unit's current text; None when it is closed or not served."""
        if unit.partition(":")[0] not in SCHEMES:
            return None
        path = _path(unit)
        if unit in self.notebooks:
            return self._read_notebook(unit, path)
        if unit not in self.opened:
            return None
        doc = self.workspace.get_text_document(unit)
        if not (doc.language_id == "python" or (path is not None and path.suffix in PYTHON_SUFFIXES)):
            return None
        return Reading(unit, path, doc.source, ((unit, doc.version, None, doc.source),))

    def _read_notebook(self, unit: str, path: Path | None) -> Reading | None:
        notebook = self.workspace.get_notebook_document(notebook_uri=unit)
        if notebook is None:
            return None
        cells: list[tuple[str, str]] = []
        docs: list[Doc] = []
        for number, cell in enumerate(notebook.cells, 1):
            doc = self.workspace.get_text_document(cell.document)
            if cell.kind == types.NotebookCellKind.Markup:
                kind = "markdown"
            elif doc.language_id == "python":
                kind = "code"
                docs.append((cell.document, doc.version, number, doc.source))
            else:
                kind = "raw"  # a code cell in another language is not Python to lint
            cells.append((kind, doc.source))
        try:
            parsed = Notebook.from_cells(cells)
        except NotebookError:  # cannot happen for JSON we wrote; never lint a guess
            return None
        return Reading(unit, path, parsed.code, tuple(docs), parsed)

    # -- scheduling -----------------------------------------------------------------

    def start(self, unit: str, store: bool = False) -> None:
        """Lint the unit now (as a task), replacing any lint scheduled for it."""
        self.cancel(unit)
        task = asyncio.ensure_future(self.refresh(unit, store))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def schedule(self, unit: str) -> None:
        """Lint the unit once no change has come for the debounce interval."""
        self.cancel(unit)
        self.timers[unit] = asyncio.get_running_loop().call_later(self.debounce, self.start, unit)

    def cancel(self, unit: str) -> None:
        timer = self.timers.pop(unit, None)
        if timer is not None:
            timer.cancel()

    # -- linting --------------------------------------------------------------------

    async def refresh(self, unit: str, store: bool = False) -> State | None:
        """Lint the unit's current text and publish its diagnostics."""
        self.cancel(unit)
        reading = self.read(unit)
        if reading is None:
            return None
        open_texts = {p: r.text for u in self.opened if (p := _path(u)) is not None and (r := self.read(u))}
        loop = asyncio.get_running_loop()
        try:
            linted = await loop.run_in_executor(
                self.executor, self.projects.lint, reading.path, reading.text, store, open_texts, reading.notebook)
        except (ConfigError, CatalogError) as exc:
            self.tell(f"offload-lint: {exc}", types.MessageType.Error)
            self.clear(unit)
            for uri, version, _, _ in reading.docs:
                self.publish(uri, version, [])
            return None
        except Exception as exc:  # a bug of ours: one line, and the server goes on
            self.tell(f"offload-lint: internal error: {type(exc).__name__}: {exc} (please report it)", types.MessageType.Error)
            return None
        now = self.read(unit)
        if now is None or now.docs != reading.docs:
            return None  # changed or closed meanwhile: a newer lint is scheduled
        codec = self.workspace.position_codec
        views = {cell: View(uri, version, cell, LineIndex(text, codec)) for uri, version, cell, text in reading.docs}
        state = State(reading.docs, linted, views)
        gone = self.clear(unit)
        self.states[unit] = state
        if linted.result.error is not None:
            self.tell(f"offload-lint: internal error while checking {linted.result.path}: {linted.result.error} "
                      "(please report it)", types.MessageType.Error)
        for uri in gone - {v.uri for v in views.values()}:
            self.publish(uri, None, [])  # a cell that is no longer Python, or no longer there
        for view in views.values():
            self.publish(view.uri, view.version, messages.diagnostics(linted, view))
        self.log(linted)
        return state

    async def current(self, uri: str) -> tuple[State, View] | None:
        """The lint of the unit's current text and the document `uri` in it, linting it first if needed."""
        unit = self.unit_of(uri)
        if unit is None:
            return None
        for _ in range(3):
            reading = self.read(unit)
            if reading is None:
                return None
            state = self.states.get(unit)
            if state is None or state.docs != reading.docs:
                state = await self.refresh(unit)
            if state is not None:
                view = next((v for v in state.views.values() if v.uri == uri), None)
                return (state, view) if view is not None else None
        return None  # a broken configuration, or a text that kept changing

    def clear(self, unit: str) -> set[str]:
        """Forget the unit's lint; the documents it was shown in."""
        state = self.states.pop(unit, None)
        return {v.uri for v in state.views.values()} if state is not None else set()

    # -- output ---------------------------------------------------------------------

    def publish(self, uri: str, version: int | None, diagnostics: list[types.Diagnostic]) -> None:
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics)
        )

    def tell(self, message: str, kind: types.MessageType) -> None:
        """Show a message once (a broken configuration is not repeated on every keystroke); log it always."""
        self.window_log_message(types.LogMessageParams(type=kind, message=message))
        if message not in self.shown:
            self.shown.add(message)
            self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def log(self, linted: Linted) -> None:
        n = len(linted.findings)
        if linted.excluded:
            how = "excluded by the configuration"
        elif linted.cached:
            how = "from the cache"
        else:
            how = f"linted in {linted.seconds * 1000:.0f} ms"
        text = f"{linted.result.path}: {n} finding{'s' if n != 1 else ''} ({how})"
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Log, message=text))


def _path(uri: str) -> Path | None:
    if not uri.startswith("file:"):
        return None
    path = to_fs_path(uri)
    return Path(path) if path else None


def build(debounce: float) -> LintServer:
    """A server with its features registered (a function, so that nothing is global)."""
    server = LintServer(debounce)

    @server.feature(types.INITIALIZE)
    def initialize(ls: LintServer, params: types.InitializeParams) -> None:
        uris = [f.uri for f in params.workspace_folders or []]
        if not uris and params.root_uri:
            uris = [params.root_uri]
        ls.set_folders(uris)

    @server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    def folders_changed(ls: LintServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
        ls.set_folders([f.uri for f in ls.workspace.folders.values()])

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: LintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.opened.add(params.text_document.uri)
        ls.start(params.text_document.uri, store=True)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: LintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: LintServer, params: types.DidSaveTextDocumentParams) -> None:
        saved(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: LintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri in ls.opened:
            closed(ls, uri)
            ls.publish(uri, None, [])  # also when it was never linted (a broken configuration)
            ls.opened.discard(uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_opened(ls: LintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.notebooks.add(params.notebook_document.uri)
        ls.start(params.notebook_document.uri, store=True)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_changed(ls: LintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_saved(ls: LintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        saved(ls, params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_closed(ls: LintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        closed(ls, params.notebook_document.uri)
        ls.notebooks.discard(params.notebook_document.uri)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=list(messages.KINDS)))
    async def code_action(ls: LintServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        found = await ls.current(params.text_document.uri)
        if found is None:
            return None
        state, view = found
        start = view.lines.from_client(params.range.start)
        end = view.lines.from_client(params.range.end)
        only = params.context.only
        linted = state.linted
        fixed = None
        if any(f.fix is not None and f.fix.safety == "safe" for f in linted.findings) and (
            only is None or any(messages.FIX_ALL.startswith(o) for o in only)
        ):
            fixed = await asyncio.get_running_loop().run_in_executor(ls.executor, lambda: linted.fixed)
        findings = messages.at(linted, view, start, end)
        return messages.code_actions(linted, view, state.views, findings, only, fixed)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: LintServer, params: types.HoverParams) -> types.Hover | None:
        found = await ls.current(params.text_document.uri)
        if found is None:
            return None
        state, view = found
        where = view.lines.from_client(params.position)
        return messages.hover(state.linted, view, messages.at(state.linted, view, where, where))

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: LintServer, params: None) -> None:
        ls.shut_down = True
        for unit in list(ls.timers):
            ls.cancel(unit)
        ls.executor.shutdown(wait=False, cancel_futures=True)

    return server


def saved(ls: LintServer, unit: str) -> None:
    """Lint a saved unit now (and store it: it is on disk), and the others soon: they may import its kernels."""
    ls.start(unit, store=True)
    for other in (ls.opened | ls.notebooks) - {unit}:
        ls.schedule(other)


def closed(ls: LintServer, unit: str) -> None:
    """Forget a closed unit and clear the diagnostics of the documents it was shown in."""
    ls.cancel(unit)
    for uri in ls.clear(unit) - {unit}:
        ls.publish(uri, None, [])


def serve(debounce: float) -> int:
    """Run the server on stdin/stdout until the client says exit; 0 after a shutdown request, else 1 (as LSP asks)."""
    server = build(debounce)
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must never corrupt the protocol stream
    server.start_io(sys.stdin.buffer, out)
    return 0 if server.shut_down else 1
