"""The language server: open documents in; diagnostics, code actions and hover text out (pygls, stdio).

Documents are synchronised whole (`TextDocumentSyncKind.Full`): the client
sends the full text on every change, so the server never patches text by
positions, and a lint always sees exactly what the editor shows.

A document is linted when it is opened or saved, and a short while after
the last change (`--debounce-ms`): typing coalesces into one lint of the
latest text. Lints run one at a time on a worker thread, so the server
keeps answering while LibCST parses; a result whose document changed
meanwhile is dropped, since a newer lint is already scheduled. A request
that needs the findings of the current text (code actions, hover) lints it
first if it has not been linted yet, so an action never edits text that
has moved. Saving a file re-lints the other open documents soon after,
because they may import its kernels.

Configuration mistakes are shown once each as an error message (the same
line the CLI prints), and the document gets no diagnostics until the file
is fixed; every lint is logged (`window/logMessage`) with its count and
whether the cache answered.
"""

from __future__ import annotations

import asyncio
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lsprotocol import types
from offload_core.catalog import CatalogError
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from .. import __version__
from ..config import ConfigError
from . import messages
from .positions import LineIndex
from .projects import Linted, Projects

PYTHON_SUFFIXES = (".py", ".pyi")
#: the documents served: files and new unsaved ones. A notebook's cells come as documents of their own
#: (`vscode-notebook-cell:`), and one cell linted alone is wrong: its names come from earlier cells, and
#: IPython syntax (`%timeit`) is a syntax error outside a notebook. Notebooks are left to `offload-lint`.
SCHEMES = ("file", "untitled")


@dataclass(frozen=True)
class State:
    """The last lint published for a document, with the line index its positions were converted by."""

    version: int | None
    linted: Linted
    lines: LineIndex


class LintServer(LanguageServer):
    def __init__(self, debounce: float) -> None:
        super().__init__("offload-lint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)
        self.debounce = debounce
        self.projects = Projects([])
        self.opened: set[str] = set()
        self.states: dict[str, State] = {}
        self.timers: dict[str, asyncio.TimerHandle] = {}
        self.tasks: set[asyncio.Task[Any]] = set()
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="offload-lint")
        self.shown: set[str] = set()
        self.shut_down = False

    # -- documents ------------------------------------------------------------------

    def document(self, uri: str) -> TextDocument | None:
        return self.workspace.get_text_document(uri) if uri in self.opened else None

    def set_folders(self, uris: list[str]) -> None:
        folders = [Path(p) for p in (to_fs_path(u) for u in uris) if p]
        self.projects = Projects(folders)

    # -- scheduling -----------------------------------------------------------------

    def start(self, uri: str, store: bool = False) -> None:
        """Lint the document now (as a task), replacing any lint scheduled for it."""
        self.cancel(uri)
        task = asyncio.ensure_future(self.refresh(uri, store))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def schedule(self, uri: str) -> None:
        """Lint the document once no change has come for the debounce interval."""
        self.cancel(uri)
        self.timers[uri] = asyncio.get_running_loop().call_later(self.debounce, self.start, uri)

    def cancel(self, uri: str) -> None:
        timer = self.timers.pop(uri, None)
        if timer is not None:
            timer.cancel()

    # -- linting --------------------------------------------------------------------

    async def refresh(self, uri: str, store: bool = False) -> State | None:
        """Lint the document's current text and publish its diagnostics."""
        self.cancel(uri)
        doc = self.document(uri)
        if doc is None:
            return None
        version, text = doc.version, doc.source
        path = _path(uri)
        if not _is_python(uri, path, doc.language_id):
            return None
        open_texts = {p: d.source for u in self.opened if (p := _path(u)) is not None and (d := self.document(u))}
        loop = asyncio.get_running_loop()
        try:
            linted = await loop.run_in_executor(self.executor, self.projects.lint, path, text, store, open_texts)
        except (ConfigError, CatalogError) as exc:
            self.tell(f"offload-lint: {exc}", types.MessageType.Error)
            self.states.pop(uri, None)
            self.publish(uri, version, [])
            return None
        except Exception as exc:  # a bug of ours: one line, and the server goes on
            self.tell(f"offload-lint: internal error: {type(exc).__name__}: {exc} (please report it)", types.MessageType.Error)
            return None
        doc = self.document(uri)
        if doc is None or doc.version != version or doc.source != text:
            return None  # changed or closed meanwhile: a newer lint is scheduled
        state = State(version, linted, LineIndex(text, self.workspace.position_codec))
        self.states[uri] = state
        if linted.result.error is not None:
            self.tell(f"offload-lint: internal error while checking {linted.result.path}: {linted.result.error} "
                      "(please report it)", types.MessageType.Error)
        self.publish(uri, version, messages.diagnostics(linted, state.lines))
        self.log(linted)
        return state

    async def current(self, uri: str) -> State | None:
        """The lint of the document's current text, linting it first if needed."""
        for _ in range(3):
            doc = self.document(uri)
            if doc is None:
                return None
            state = self.states.get(uri)
            if state is not None and state.version == doc.version and state.linted.text == doc.source:
                return state
            state = await self.refresh(uri)
            if state is not None:
                return state
        return None  # not Python, a broken configuration, or a text that kept changing

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


def _is_python(uri: str, path: Path | None, language_id: str | None) -> bool:
    """Is the document a Python file (or an unsaved Python document) that the server lints?"""
    if uri.partition(":")[0] not in SCHEMES:
        return False
    return language_id == "python" or (path is not None and path.suffix in PYTHON_SUFFIXES)


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
        uri = params.text_document.uri
        ls.start(uri, store=True)
        for other in ls.opened - {uri}:
            ls.schedule(other)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: LintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.cancel(uri)
        ls.opened.discard(uri)
        ls.states.pop(uri, None)
        ls.publish(uri, None, [])

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=list(messages.KINDS)))
    async def code_action(ls: LintServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        state = await ls.current(uri)
        if state is None:
            return None
        start = state.lines.from_client(params.range.start)
        end = state.lines.from_client(params.range.end)
        only = params.context.only
        linted = state.linted
        fixed = None
        if any(f.fix is not None and f.fix.safety == "safe" for f in linted.findings) and (
            only is None or any(messages.FIX_ALL.startswith(o) for o in only)
        ):
            fixed = await asyncio.get_running_loop().run_in_executor(ls.executor, linted.fixed)
        return messages.code_actions(linted, state.lines, uri, messages.at(linted, start, end), only, fixed)

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: LintServer, params: types.HoverParams) -> types.Hover | None:
        state = await ls.current(params.text_document.uri)
        if state is None:
            return None
        where = state.lines.from_client(params.position)
        return messages.hover(state.linted, state.lines, messages.at(state.linted, where, where))

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: LintServer, params: None) -> None:
        ls.shut_down = True
        for uri in list(ls.timers):
            ls.cancel(uri)
        ls.executor.shutdown(wait=False, cancel_futures=True)

    return server


def serve(debounce: float) -> int:
    """Run the server on stdin/stdout until the client says exit; 0 after a shutdown request, else 1 (as LSP asks)."""
    server = build(debounce)
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must never corrupt the protocol stream
    server.start_io(sys.stdin.buffer, out)
    return 0 if server.shut_down else 1
