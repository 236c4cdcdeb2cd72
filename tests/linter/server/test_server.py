"""`offload-lint server` driven over stdio by a real LSP client (pytest-lsp's, on pygls), never by calling handlers.

Each test starts the server as a subprocess (`python -m linter server`) in
a project of its own and speaks the protocol to it: initialize, open,
change, code actions, hover, shutdown and exit. Expected positions,
messages and fixed texts come from the command line (`offload-lint
--format json`, `--fix`) on the same files, converted to the protocol's
units here, independently of the server's own conversion, so the two
cannot agree by sharing a bug.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, AsyncIterator, Sequence

import pytest
from lsprotocol import types
from pygls.protocol import default_converter
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from offload_core.catalog import load_catalog

from ..kit import run_cli

CATALOG = load_catalog()
WAIT = 120  # seconds: a generous bound on a loaded machine, never a performance figure

EMOJI = textwrap.dedent('''\
    import cupy as cp
    import numpy as np

    # données: «le tableau» 😀
    label = "élan 😀"; d = cp.asarray(np.zeros(1024))
''')
HOIST = textwrap.dedent('''\
    import cupy as cp
    import numpy as np

    w = np.ones(8)
    for i in range(3):
        dw = cp.asarray(w)  # ∑ 😀
        print(dw.sum())
''')
ALIAS = CATALOG.rules["OFF201"].invalid[0].code  # offload(axpy, v, v, 2.0) with `axpy(y: InOut, x: In, ...)`


class Client(LanguageClient):
    """pytest-lsp's client, which also keeps every diagnostics notification and the server's exit code."""

    def __init__(self) -> None:
        super().__init__(converter_factory=default_converter)
        features = dict(DEFAULT_CLIENT_FEATURES)
        features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _record
        register_lsp_features(self, features)
        self.publishes: list[types.PublishDiagnosticsParams] = []
        self.encoding: str | None = None
        self.returncode: int | None = None
        self.exited = asyncio.Event()

    async def server_exit(self, server: asyncio.subprocess.Process) -> None:
        self.returncode = server.returncode
        self.exited.set()
        await super().server_exit(server)


def _record(ls: Client, params: types.PublishDiagnosticsParams) -> None:
    ls.diagnostics[params.uri] = params.diagnostics
    ls.publishes.append(params)


@contextlib.asynccontextmanager
async def serving(root: Path, *args: str, editor: str = "visual-studio-code") -> AsyncIterator[Client]:
    """A server for the project at `root`, initialised with a real editor's capabilities; shut down after."""
    client = Client()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OFFLOAD_", "PRE_COMMIT"))}
    await client.start_io(sys.executable, "-m", "linter", "server", *args, cwd=str(root), env=env)
    result = await asyncio.wait_for(client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities(editor),
        root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
    )), WAIT)
    client.encoding = result.capabilities.position_encoding
    try:
        yield client
        await asyncio.wait_for(client.shutdown_session(), WAIT)
        await asyncio.wait_for(client.exited.wait(), WAIT)
    finally:
        await stop(client)


async def stop(client: Client) -> None:
    """Stop the client; a server still running (a test failed before its shutdown) is ended first."""
    if not client.exited.is_set():
        server = client._server  # pygls's handle on the process it started; stop() would wait for it forever
        if server is not None and server.returncode is None:
            server.kill()
    await client.stop()


def open_file(client: Client, path: Path, text: str | None = None, version: int = 1) -> str:
    text = path.read_text(encoding="utf-8") if text is None else text
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))
    return uri


def change(client: Client, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
    ))


async def published(client: Client, uri: str, version: int | None) -> Sequence[types.Diagnostic]:
    """The diagnostics the server published (or publishes within WAIT) for `uri` at `version`."""

    async def wait() -> Sequence[types.Diagnostic]:
        while True:
            for params in reversed(client.publishes):
                if params.uri == uri and params.version == version:
                    return params.diagnostics
            await asyncio.sleep(0.02)

    return await asyncio.wait_for(wait(), WAIT)


# -- positions, computed here from the protocol's definition -------------------------------


def units(text: str, encoding: str) -> int:
    if encoding == "utf-16":
        return len(text.encode("utf-16-le")) // 2
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    return len(text)


def lsp_lines(text: str) -> list[str]:
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def position(text: str, line: int, column: int, encoding: str) -> tuple[int, int]:
    """A 1-based line and code-point column as the protocol's (0-based line, code units)."""
    return line - 1, units(lsp_lines(text)[line - 1][: column - 1], encoding)


def offset(text: str, pos: types.Position, encoding: str) -> int:
    lines = text.split("\n")  # the texts here use \n only
    start = sum(len(line) + 1 for line in lines[: pos.line])
    line = lines[pos.line] if pos.line < len(lines) else ""
    column = 0
    while column < len(line) and units(line[:column], encoding) < pos.character:
        column += 1
    return start + column


def apply(text: str, edits: Sequence[types.TextEdit], encoding: str) -> str:
    spans = [(offset(text, e.range.start, encoding), offset(text, e.range.end, encoding), e.new_text) for e in edits]
    for start, end, new in sorted(spans, key=lambda s: (s[0], s[1]), reverse=True):
        text = text[:start] + new + text[end:]
    return text


def cli_findings(root: Path, *paths: str) -> list[dict[str, Any]]:
    proc = run_cli("--format", "json", "--no-cache", *paths, cwd=root)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def cli_fixed(root: Path, name: str, text: str, *flags: str) -> str:
    copy = root / "cli-copy" / name
    copy.parent.mkdir(exist_ok=True)
    copy.write_text(text, encoding="utf-8")
    proc = run_cli("--fix", "--no-cache", *flags, str(copy), cwd=root)
    assert proc.returncode in (0, 1), proc.stderr
    return copy.read_text(encoding="utf-8")


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# -- tests ------------------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("editor, encoding", [("visual-studio-code", "utf-16"), ("neovim@v0.11", "utf-8")])
async def test_diagnostics_on_open_and_change_in_the_editors_units(tmp_path: Path, editor: str, encoding: str) -> None:
    path = write(tmp_path, "a.py", EMOJI)
    expected = cli_findings(tmp_path, "a.py")
    assert [f["code"] for f in expected] == ["OFF105"]
    (cli,) = expected
    async with serving(tmp_path, editor=editor) as client:
        assert client.encoding == encoding
        uri = open_file(client, path)
        (diag,) = await published(client, uri, 1)
        assert diag.code == "OFF105"
        assert diag.source == "offload-lint"
        assert diag.severity == types.DiagnosticSeverity.Warning
        assert diag.message == cli["message"]
        start = position(EMOJI, cli["line"], cli["column"], encoding)
        end = position(EMOJI, cli["end_line"], cli["end_column"], encoding)
        assert (diag.range.start.line, diag.range.start.character) == start
        assert (diag.range.end.line, diag.range.end.character) == end
        # the emoji and the accented letter before the finding are where code points and units part
        assert start[1] != cli["column"] - 1

        change(client, uri, EMOJI.replace("cp.asarray(np.zeros(1024))", "cp.zeros(1024)"), 2)
        assert await published(client, uri, 2) == ()

        client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri)))
        assert await published(client, uri, None) == ()
    assert client.returncode == 0


@pytest.mark.asyncio
async def test_safe_fix_is_the_preferred_quick_fix_and_matches_cli_fix(tmp_path: Path) -> None:
    path = write(tmp_path, "a.py", EMOJI)
    expected = cli_fixed(tmp_path, "a.py", EMOJI)
    assert expected != EMOJI
    async with serving(tmp_path) as client:
        uri = open_file(client, path)
        (diag,) = await published(client, uri, 1)
        actions = await asyncio.wait_for(client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri), range=diag.range,
            context=types.CodeActionContext(diagnostics=[diag]),
        )), WAIT)
        assert actions is not None
        quick = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
        fix_all = [a for a in actions if a.kind == "source.fixAll.offload-lint"]
        assert len(quick) == 1 and len(fix_all) == 1
        (action,) = quick
        assert action.is_preferred is True
        assert "OFF105" in action.title and "unsafe" not in action.title
        assert action.diagnostics is not None and [d.code for d in action.diagnostics] == ["OFF105"]
        assert action.diagnostics[0].range == diag.range
        assert action.edit is not None and action.edit.changes is not None
        assert apply(EMOJI, action.edit.changes[uri], "utf-16") == expected
        assert fix_all[0].edit is not None and fix_all[0].edit.changes is not None
        assert apply(EMOJI, fix_all[0].edit.changes[uri], "utf-16") == expected

        # a request for source actions only gets the fix-all action
        only = await asyncio.wait_for(client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri), range=diag.range,
            context=types.CodeActionContext(diagnostics=[], only=["source.fixAll"]),
        )), WAIT)
        assert only is not None and [a.kind for a in only] == ["source.fixAll.offload-lint"]


@pytest.mark.asyncio
async def test_unsafe_fix_is_marked_and_not_preferred(tmp_path: Path) -> None:
    path = write(tmp_path, "loop.py", HOIST)
    expected = cli_fixed(tmp_path, "loop.py", HOIST, "--unsafe-fixes")
    assert cli_fixed(tmp_path, "loop.py", HOIST) == HOIST  # --fix alone leaves it: the fix is unsafe
    async with serving(tmp_path, editor="neovim@v0.11") as client:
        uri = open_file(client, path)
        (diag,) = await published(client, uri, 1)
        assert diag.code == "OFF101"
        # the cursor inside the finding, not its whole range
        inside = types.Position(line=diag.range.start.line, character=diag.range.start.character + 3)
        actions = await asyncio.wait_for(client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri), range=types.Range(start=inside, end=inside),
            context=types.CodeActionContext(diagnostics=[diag]),
        )), WAIT)
        assert actions is not None
        (action,) = actions  # no fix-all: there is no safe fix
        assert action.kind == types.CodeActionKind.QuickFix
        assert not action.is_preferred
        assert "unsafe" in action.title and "OFF101" in action.title
        assert action.edit is not None and action.edit.changes is not None
        assert apply(HOIST, action.edit.changes[uri], "utf-8") == expected

        # nothing is offered away from the finding
        away = types.Position(line=0, character=0)
        none = await asyncio.wait_for(client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri), range=types.Range(start=away, end=away),
            context=types.CodeActionContext(diagnostics=[]),
        )), WAIT)
        assert not none


@pytest.mark.asyncio
async def test_hover_on_a_finding_shows_the_catalog_text(tmp_path: Path) -> None:
    path = write(tmp_path, "a.py", EMOJI)
    rule = CATALOG.rules["OFF105"]
    async with serving(tmp_path) as client:
        uri = open_file(client, path)
        (diag,) = await published(client, uri, 1)
        middle = types.Position(line=diag.range.start.line, character=diag.range.start.character + 5)
        hover = await asyncio.wait_for(client.text_document_hover_async(
            types.HoverParams(text_document=types.TextDocumentIdentifier(uri), position=middle)), WAIT)
        assert hover is not None
        assert isinstance(hover.contents, types.MarkupContent)
        assert hover.contents.kind == types.MarkupKind.Markdown
        text = hover.contents.value
        assert text.startswith("**OFF105 host-alloc-then-upload** (warning)")
        for part in (diag.message, rule.summary, rule.rationale.strip(), rule.advice.strip(), "Quick fix: Create with cp.zeros"):
            assert part in text
        assert hover.range == diag.range

        elsewhere = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri), position=types.Position(line=0, character=3))), WAIT)
        assert elsewhere is None


@pytest.mark.asyncio
async def test_hover_and_actions_follow_an_unlinted_change(tmp_path: Path) -> None:
    """A request right after a change (inside the debounce interval) answers for the new text."""
    path = write(tmp_path, "a.py", EMOJI)
    moved = "\n\n" + EMOJI
    async with serving(tmp_path, "--debounce-ms", "60000") as client:
        uri = open_file(client, path)
        (diag,) = await published(client, uri, 1)
        change(client, uri, moved, 2)
        line = diag.range.start.line + 2
        hover = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri),
            position=types.Position(line=line, character=diag.range.start.character))), WAIT)
        assert hover is not None and hover.range is not None and hover.range.start.line == line
        (again,) = await published(client, uri, 2)
        assert again.range.start.line == line


@pytest.mark.asyncio
async def test_pyproject_configuration_and_file_contexts(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[tool.offload-lint]\nignore = ["OFF105"]\nextend-exclude = ["generated"]\n')
    hoisted = HOIST.split("\n\n", 1)[1]  # the loop that OFF101 reports, without the imports
    both = EMOJI + hoisted  # OFF105 and OFF101
    lib = write(tmp_path, "src/both.py", both)
    test = write(tmp_path, "tests/test_both.py", "import cupy as cp\n" + ALIAS + hoisted)  # OFF201 and OFF101
    skipped = write(tmp_path, "generated/g.py", EMOJI)
    assert [f["code"] for f in cli_findings(tmp_path, "src/both.py")] == ["OFF101"]
    assert [f["code"] for f in cli_findings(tmp_path, "tests/test_both.py")] == ["OFF201"]
    assert [f["code"] for f in cli_findings(tmp_path, "--select", "OFF101", "tests/test_both.py")] == []
    async with serving(tmp_path) as client:
        lib_uri = open_file(client, lib)
        assert [d.code for d in await published(client, lib_uri, 1)] == ["OFF101"]  # OFF105 ignored
        test_uri = open_file(client, test)
        # the test context silences the performance rules (OFF1xx) and keeps ownership errors
        assert [d.code for d in await published(client, test_uri, 1)] == ["OFF201"]
        gen_uri = open_file(client, skipped)
        assert await published(client, gen_uri, 1) == ()
    logs = [m.message for m in client.log_messages]
    assert any(m.endswith("g.py: 0 findings (excluded by the configuration)") for m in logs), logs


@pytest.mark.asyncio
async def test_a_broken_configuration_is_one_error_message(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[tool.offload-lint]\nselct = ["OFF1"]\n')
    path = write(tmp_path, "a.py", EMOJI)
    proc = run_cli(str(path), cwd=tmp_path)
    assert proc.returncode == 2
    cli_line = proc.stderr.strip()
    async with serving(tmp_path) as client:
        uri = open_file(client, path)
        assert await published(client, uri, 1) == ()
        change(client, uri, EMOJI + "\n", 2)
        assert await published(client, uri, 2) == ()
        errors = [m for m in client.messages if m.type == types.MessageType.Error]
        assert [m.message for m in errors] == [cli_line]  # shown once, not on every change
        assert "unknown key(s) in [tool.offload-lint]: selct" in cli_line


@pytest.mark.asyncio
async def test_changes_are_debounced_into_one_lint(tmp_path: Path) -> None:
    path = write(tmp_path, "a.py", EMOJI)
    async with serving(tmp_path, "--debounce-ms", "1500") as client:
        uri = open_file(client, path)
        await published(client, uri, 1)
        for version in range(2, 7):
            change(client, uri, EMOJI + "#" * version + "\n", version)
        assert [d.code for d in await published(client, uri, 6)] == ["OFF105"]
    lints = [m.message for m in client.log_messages if "a.py: " in m.message]
    assert len(lints) == 2, lints  # the open, and one for the five changes


@pytest.mark.asyncio
async def test_results_cache_is_shared_with_the_cli(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", "[tool.offload-lint]\n")
    first = write(tmp_path, "first.py", EMOJI)
    second = write(tmp_path, "second.py", HOIST)
    cache = tmp_path / ".offload-lint-cache"

    def entries() -> dict[str, int]:
        return {p.name: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file() and len(p.name) == 40}

    proc = run_cli("first.py", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert len(entries()) == 1
    async with serving(tmp_path) as client:
        uri = open_file(client, first)
        assert [d.code for d in await published(client, uri, 1)] == ["OFF105"]
        uri = open_file(client, second)
        assert [d.code for d in await published(client, uri, 1)] == ["OFF101"]
    logs = [m.message for m in client.log_messages]
    assert any(m.endswith("first.py: 1 finding (from the cache)") for m in logs), logs
    assert any("second.py: 1 finding (linted in" in m for m in logs), logs
    written = entries()
    assert len(written) == 2  # the server stored the file it linted
    proc = run_cli("first.py", "second.py", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert entries() == written  # the CLI found both entries: nothing new, nothing rewritten


@pytest.mark.asyncio
async def test_kernels_imported_from_another_file(tmp_path: Path) -> None:
    kernel_src, launch = ALIAS.split("\nv = ", 1)
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/kernels.py", kernel_src)
    app = write(tmp_path, "pkg/app.py",
                "import numpy as np\nfrom offload_core import offload\nfrom .kernels import axpy\n\nv = " + launch)
    expected = cli_findings(tmp_path, "pkg")
    assert [(Path(f["path"]).name, f["code"]) for f in expected] == [("app.py", "OFF201")]
    async with serving(tmp_path) as client:
        uri = open_file(client, app)
        (diag,) = await published(client, uri, 1)
        assert diag.code == "OFF201" and diag.message == expected[0]["message"]
        assert diag.severity == types.DiagnosticSeverity.Error
        # the kernel's signature comes from the editor when its file is open there
        kernels_uri = open_file(client, tmp_path / "pkg/kernels.py",
                                kernel_src.replace("y: InOut, x: In", "y: In, x: In"))
        await published(client, kernels_uri, 1)
        change(client, uri, app.read_text(encoding="utf-8") + "\n", 2)
        assert await published(client, uri, 2) == ()


@pytest.mark.asyncio
async def test_unsaved_documents_are_linted_and_notebook_cells_are_not(tmp_path: Path) -> None:
    """An `untitled:` document gets diagnostics; a notebook's cell, alone, would get wrong ones, so it gets none."""
    path = write(tmp_path, "a.py", EMOJI)
    cell = "vscode-notebook-cell:" + (tmp_path / "nb.ipynb").as_posix() + "#W0sZmlsZQ%3D%3D"
    untitled = "untitled:Untitled-1"
    async with serving(tmp_path) as client:
        for uri, text in ((cell, "%timeit d = cp.asarray(np.zeros(1024))\n"), (untitled, EMOJI)):
            client.text_document_did_open(types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
        assert [d.code for d in await published(client, untitled, 1)] == ["OFF105"]
        file_uri = open_file(client, path)
        assert [d.code for d in await published(client, file_uri, 1)] == ["OFF105"]
        # lints run one at a time in the order the documents came: the cell's would have been published by now
        assert [p.uri for p in client.publishes] == [untitled, file_uri]
    # only the file on disk is stored in the results cache, not the unsaved text
    entries = [p for p in (tmp_path / ".offload-lint-cache").rglob("*") if p.is_file() and len(p.name) == 40]
    assert len(entries) == 1


NOTEBOOK_CELLS = (
    ("markdown", "# Uploads\nText with `cp.asarray(x)` in it."),
    ("code", "import cupy as cp\nimport numpy as np"),
    ("code", '%timeit np.zeros(3)\nlabel = "é 😀"; d = cp.asarray(np.zeros(1024))'),
    ("markdown", "Now the loop:"),
    ("code", HOIST.split("\n\n", 1)[1].rstrip("\n")),
)


def cell_sources(path: Path) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells]


def open_notebook(client: Client, path: Path, cells: Sequence[tuple[str, str]]) -> tuple[str, list[str]]:
    """Open a notebook as VS Code does (notebookDocument/didOpen with every cell); its URI and its cells' URIs."""
    uri = path.as_uri()
    cell_uris = [f"vscode-notebook-cell:{path.as_posix()}#cell{n}" for n in range(1, len(cells) + 1)]
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(uri=uri, notebook_type="jupyter-notebook", version=1, cells=[
            types.NotebookCell(
                kind=types.NotebookCellKind.Code if kind == "code" else types.NotebookCellKind.Markup, document=c)
            for (kind, _), c in zip(cells, cell_uris)]),
        cell_text_documents=[
            types.TextDocumentItem(uri=c, language_id="python" if kind == "code" else "markdown", version=1, text=text)
            for (kind, text), c in zip(cells, cell_uris)],
    ))
    return uri, cell_uris


@pytest.mark.asyncio
async def test_a_notebook_is_linted_as_one_program_and_fixed_cell_by_cell(tmp_path: Path) -> None:
    """Cells are linted together as `offload-lint nb.ipynb` lints the file; findings, fixes and hover per cell."""
    write(tmp_path, "pyproject.toml", "[tool.offload-lint]\n")
    document = {"cells": [
        {"cell_type": kind, "metadata": {}, "source": text.splitlines(keepends=True),
         **({"execution_count": None, "outputs": []} if kind == "code" else {})}
        for kind, text in NOTEBOOK_CELLS
    ], "metadata": {"kernelspec": {"language": "python", "name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    path = write(tmp_path, "nb.ipynb", json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    expected = cli_findings(tmp_path, "nb.ipynb")
    # names flow from cell 2 (the imports) into cells 3 and 5; the magic in cell 3 is understood
    assert [(f["cell"], f["code"]) for f in expected] == [(3, "OFF105"), (5, "OFF101")]
    write(tmp_path, "safe/nb.ipynb", path.read_text(encoding="utf-8"))
    assert run_cli("--fix", "--no-cache", "safe/nb.ipynb", cwd=tmp_path).returncode == 1
    safe_fixed = cell_sources(tmp_path / "safe/nb.ipynb")
    write(tmp_path, "unsafe/nb.ipynb", path.read_text(encoding="utf-8"))
    assert run_cli("--fix", "--unsafe-fixes", "--no-cache", "unsafe/nb.ipynb", cwd=tmp_path).returncode in (0, 1)
    unsafe_fixed = cell_sources(tmp_path / "unsafe/nb.ipynb")
    texts = [text for _, text in NOTEBOOK_CELLS]
    assert safe_fixed[2] != texts[2] and safe_fixed[4] == texts[4] and unsafe_fixed[4] != texts[4]
    assert run_cli("nb.ipynb", cwd=tmp_path).returncode == 1  # fills the results cache

    async with serving(tmp_path) as client:
        nb_uri, cells = open_notebook(client, path, NOTEBOOK_CELLS)
        assert await published(client, cells[1], 1) == ()
        for finding in expected:
            n = finding["cell"] - 1
            (diag,) = await published(client, cells[n], 1)
            assert (diag.code, diag.message) == (finding["code"], finding["message"])
            start = position(texts[n], finding["line"], finding["column"], "utf-16")
            end = position(texts[n], finding["end_line"], finding["end_column"], "utf-16")
            assert ((diag.range.start.line, diag.range.start.character),
                    (diag.range.end.line, diag.range.end.character)) == (start, end)
        assert not any(p.uri in (cells[0], cells[3], nb_uri) for p in client.publishes)  # markdown: nothing

        async def actions(n: int, diag: types.Diagnostic) -> list[types.CodeAction]:
            got = await asyncio.wait_for(client.text_document_code_action_async(types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(cells[n]), range=diag.range,
                context=types.CodeActionContext(diagnostics=[diag]))), WAIT)
            assert got is not None
            return [a for a in got if isinstance(a, types.CodeAction)]

        (upload,) = await published(client, cells[2], 1)
        by_kind = {a.kind: a for a in await actions(2, upload)}
        assert set(by_kind) == {types.CodeActionKind.QuickFix, "source.fixAll.offload-lint"}
        for action in by_kind.values():  # the quick fix and the fix-all both change cell 3 only, as --fix does
            assert action.edit is not None and action.edit.changes is not None
            assert list(action.edit.changes) == [cells[2]]
            assert apply(texts[2], action.edit.changes[cells[2]], "utf-16") == safe_fixed[2]
        assert by_kind[types.CodeActionKind.QuickFix].is_preferred is True

        (loop,) = await published(client, cells[4], 1)
        (unsafe,) = [a for a in await actions(4, loop) if a.kind == types.CodeActionKind.QuickFix]
        assert "unsafe" in unsafe.title and not unsafe.is_preferred
        assert unsafe.edit is not None and unsafe.edit.changes is not None and list(unsafe.edit.changes) == [cells[4]]
        assert apply(texts[4], unsafe.edit.changes[cells[4]], "utf-16") == unsafe_fixed[4]

        hover = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(cells[4]), position=loop.range.start)), WAIT)
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        assert CATALOG.rules["OFF101"].summary in hover.contents.value and hover.range == loop.range

        # a change to one cell re-lints the notebook: cell 3 is clean, cell 5 keeps its finding
        fixed_cell = texts[2].replace("cp.asarray(np.zeros(1024))", "cp.zeros(1024)")
        client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(version=2, uri=nb_uri),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
                types.NotebookDocumentCellContentChanges(
                    document=types.VersionedTextDocumentIdentifier(uri=cells[2], version=2),
                    changes=[types.TextDocumentContentChangeWholeDocument(text=fixed_cell)])])),
        ))
        assert await published(client, cells[2], 2) == ()
        client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=nb_uri),
            cell_text_documents=[types.TextDocumentIdentifier(c) for c in cells]))
        assert await published(client, cells[4], None) == ()
    logs = [m.message for m in client.log_messages if "nb.ipynb: " in m.message]
    assert logs[0].endswith("nb.ipynb: 2 findings (from the cache)"), logs
    assert any("nb.ipynb: 1 finding (linted in" in m for m in logs[1:]), logs  # after the change


@pytest.mark.asyncio
async def test_exit_without_shutdown_is_code_1(tmp_path: Path) -> None:
    client = Client()
    await client.start_io(sys.executable, "-m", "linter", "server", cwd=str(tmp_path))
    try:
        await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"), root_uri=tmp_path.as_uri())), WAIT)
        client.exit(None)
        await asyncio.wait_for(client.exited.wait(), WAIT)
    finally:
        await stop(client)
    assert client.returncode == 1


def test_without_pygls_the_command_says_so_in_one_line(tmp_path: Path) -> None:
    code = "import sys\nsys.modules['pygls'] = None\nfrom linter.cli import main\nraise SystemExit(main(['server']))\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=WAIT,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1
    assert proc.stderr.startswith("offload-lint: the language server needs pygls")
    assert "pip install 'offload-guard[lsp]'" in proc.stderr


def test_bad_server_arguments_are_exit_2(tmp_path: Path) -> None:
    proc = run_cli("server", "--debounce-ms", "soon", cwd=tmp_path)
    assert proc.returncode == 2
    assert "--debounce-ms needs a whole number of milliseconds, got 'soon'" in proc.stderr
