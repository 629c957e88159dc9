"""``gpulint server`` driven end to end by a real LSP client (pytest-lsp) over stdio: diagnostics on
open and change, code actions applied to the text, notebooks, configuration, bad documents, shutdown."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path
from typing import List, Sequence

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient

pytestmark = pytest.mark.asyncio(loop_scope="function")

LOADS = 'import torch\n\nmodel.load_state_dict(torch.load("weights.pt"))\n'
UNSAFE = 'import torch\n\ncheckpoint = torch.load("run.pt")\nprint(checkpoint["epoch"])\n'
SETTLE_SECONDS = 30.0


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "gpulint", "server"]))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(), initialization_options={"debounce": 0},
    ))
    yield
    await lsp_client.shutdown_session()


DEBOUNCE = 2.0


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "gpulint", "server"]))
async def debounced_client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=types.ClientCapabilities(), initialization_options={"debounce": DEBOUNCE},
    ))
    yield
    await lsp_client.shutdown_session()


async def published(client: LanguageClient, uri: str, within: float = SETTLE_SECONDS) -> Sequence[types.Diagnostic]:
    """The diagnostics the server publishes next for ``uri`` (after ``client.diagnostics`` was
    cleared), within ``within`` seconds."""
    deadline = asyncio.get_running_loop().time() + within
    while uri not in client.diagnostics:
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"no diagnostics published for {uri}")
        await asyncio.sleep(0.01)
    return client.diagnostics.pop(uri)


def open_file(client: LanguageClient, path: Path, text: str) -> str:
    path.write_text(text)
    uri = from_fs_path(str(path))
    assert uri is not None
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text),
    ))
    return uri


def offset(text: str, position: types.Position) -> int:
    """The character offset of an LSP position (lines end at \\r\\n, \\r or \\n only; the
    text before the position on its line is ASCII here, so UTF-16 units are characters)."""
    lines = re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)
    return sum(len(line) for line in lines[: position.line]) + position.character


def applied(text: str, edits: Sequence[types.TextEdit]) -> str:
    """``text`` with the edits applied (ASCII text: UTF-16 units are characters)."""
    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        start, end = offset(text, edit.range.start), offset(text, edit.range.end)
        text = text[:start] + edit.new_text + text[end:]
    return text


async def actions(client: LanguageClient, uri: str, diagnostic: types.Diagnostic, only: List[str] = None) -> List[types.CodeAction]:
    result = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic], only=only),
    ))
    return [action for action in result or [] if isinstance(action, types.CodeAction)]


def edited(action: types.CodeAction, uri: str, text: str) -> str:
    assert action.edit is not None and action.edit.changes is not None
    return applied(text, action.edit.changes[uri])


async def test_diagnostics_on_open_carry_code_link_and_range(client: LanguageClient, tmp_path: Path):
    uri = open_file(client, tmp_path / "train.py", LOADS)
    diagnostics = await published(client, uri)
    assert [d.code for d in diagnostics] == ["GPU001"]
    finding = diagnostics[0]
    assert finding.source == "gpulint"
    assert finding.code_description is not None and finding.code_description.href.endswith("rules/GPU001.md")
    assert finding.range.start == types.Position(line=2, character=22)
    assert finding.range.end == types.Position(line=2, character=46)
    assert "map_location" in finding.message


async def test_change_is_checked_again(client: LanguageClient, tmp_path: Path):
    uri = open_file(client, tmp_path / "train.py", LOADS)
    assert len(await published(client, uri)) == 1
    fixed_line = 'model.load_state_dict(torch.load("weights.pt", map_location="cpu"))'
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=LOADS.replace(LOADS.splitlines()[2], fixed_line))],
    ))
    assert list(await published(client, uri)) == []
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=LOADS + 'again = torch.load("b.pt")\n')],
    ))
    assert [d.range.start.line for d in await published(client, uri)] == [2, 3]


def change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
    ))


async def test_a_change_after_a_pause_is_checked_at_once_and_quick_changes_once(debounced_client: LanguageClient, tmp_path: Path):
    client = debounced_client
    uri = open_file(client, tmp_path / "train.py", LOADS)
    assert len(await published(client, uri)) == 1
    await asyncio.sleep(DEBOUNCE * 1.1)
    change(client, uri, 2, LOADS + 'a = torch.load("a.pt")\n')
    assert len(await published(client, uri, within=DEBOUNCE * 0.75)) == 2  # not kept waiting for the debounce
    change(client, uri, 3, LOADS + 'a = torch.load("a.pt")\nb = torch.load("b.pt")\n')
    await asyncio.sleep(DEBOUNCE * 0.25)
    change(client, uri, 4, LOADS + 'a = torch.load("a.pt")\nb = torch.load("b.pt")\nc = torch.load("c.pt")\n')
    assert len(await published(client, uri)) == 4  # versions 3 and 4 checked once, on the last text
    await asyncio.sleep(DEBOUNCE * 1.5)
    assert uri not in client.diagnostics
    change(client, uri, 5, LOADS)  # a pause after earlier changes: checked at once again
    assert len(await published(client, uri, within=DEBOUNCE * 0.75)) == 1


async def test_safe_fix_noqa_and_fix_all_apply(client: LanguageClient, tmp_path: Path):
    uri = open_file(client, tmp_path / "train.py", LOADS)
    finding = (await published(client, uri))[0]
    offered = await actions(client, uri, finding)
    titles = [action.title for action in offered]
    assert any("map_location" in title and "unsafe" not in title for title in titles)
    quick_fix = next(action for action in offered if "map_location" in action.title)
    assert quick_fix.kind == types.CodeActionKind.QuickFix and quick_fix.is_preferred
    assert edited(quick_fix, uri, LOADS) == LOADS.replace('"weights.pt")', '"weights.pt", map_location="cpu")')
    noqa = next(action for action in offered if "noqa" in action.title)
    assert edited(noqa, uri, LOADS) == LOADS.replace('"weights.pt"))\n', '"weights.pt"))  # noqa: GPU001\n')
    fix_all = await actions(client, uri, finding, only=[types.CodeActionKind.SourceFixAll])
    assert [action.kind for action in fix_all] == ["source.fixAll.gpulint"]
    assert edited(fix_all[0], uri, LOADS) == LOADS.replace('"weights.pt")', '"weights.pt", map_location="cpu")')


async def test_unsafe_fix_is_a_separate_action_that_says_so(client: LanguageClient, tmp_path: Path):
    uri = open_file(client, tmp_path / "resume.py", UNSAFE)
    finding = (await published(client, uri))[0]
    offered = await actions(client, uri, finding)
    unsafe = [action for action in offered if "map_location" in action.title]
    assert len(unsafe) == 1 and "unsafe: may change behaviour" in unsafe[0].title
    assert not unsafe[0].is_preferred
    assert 'map_location="cpu"' in edited(unsafe[0], uri, UNSAFE)
    assert await actions(client, uri, finding, only=["source.fixAll.gpulint"]) == []


async def test_notebook_cells_are_one_program_with_findings_per_cell(client: LanguageClient, tmp_path: Path):
    notebook_path = tmp_path / "explore.ipynb"
    notebook_path.write_text("{}")
    notebook_uri = from_fs_path(str(notebook_path))
    assert notebook_uri is not None
    cells = ["import torch\n", "%matplotlib inline\nweights = torch.load('w.pt')\nnet.load_state_dict(weights)\n"]
    cell_uris = [f"{notebook_uri}#cell{index}" for index in range(len(cells))]
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=notebook_uri, notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=cell_uri) for cell_uri in cell_uris],
        ),
        cell_text_documents=[
            types.TextDocumentItem(uri=cell_uri, language_id="python", version=1, text=text)
            for cell_uri, text in zip(cell_uris, cells)
        ],
    ))
    first, second = await published(client, cell_uris[0]), await published(client, cell_uris[1])
    assert list(first) == []
    assert [(d.code, d.range.start.line, d.range.start.character) for d in second] == [("GPU001", 1, 10)]
    quick_fix = next(action for action in await actions(client, cell_uris[1], second[0]) if "map_location" in action.title)
    assert quick_fix.edit is not None and quick_fix.edit.changes is not None and list(quick_fix.edit.changes) == [cell_uris[1]]
    assert edited(quick_fix, cell_uris[1], cells[1]) == cells[1].replace("'w.pt')", "'w.pt', map_location='cpu')")


async def test_configuration_is_read_and_reloaded_and_a_broken_one_is_reported(client: LanguageClient, tmp_path: Path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.gpulint]\nselect = "GPU001"\n')
    uri = open_file(client, tmp_path / "train.py", LOADS)
    assert [d.code for d in await published(client, uri)] == ["GPU001"]
    assert any("select must be a list" in message.message for message in client.messages)
    assert client.messages[-1].type == types.MessageType.Error
    pyproject.write_text('[tool.gpulint]\nignore = ["GPU001"]\n')
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=from_fs_path(str(pyproject)) or "", type=types.FileChangeType.Changed),
    ]))
    assert list(await published(client, uri)) == []


async def test_bad_documents_do_not_stop_the_server(client: LanguageClient, tmp_path: Path):
    broken = open_file(client, tmp_path / "broken.py", "import torch\ndef f(:\n    torch.load('x')\n")
    problems = await published(client, broken)
    assert [d.severity for d in problems] == [types.DiagnosticSeverity.Information]
    assert "could not check" in problems[0].message and problems[0].range.start.line == 1
    huge = open_file(client, tmp_path / "huge.py", "x = 1\n" * 400_000 + LOADS)
    assert list(await published(client, huge)) == []
    assert any("not checked" in message.message for message in client.log_messages)
    uri = open_file(client, tmp_path / "train.py", LOADS)
    assert [d.code for d in await published(client, uri)] == ["GPU001"]


async def test_positions_follow_lsp_line_breaks_not_form_feeds(client: LanguageClient, tmp_path: Path):
    text = 'import torch\n\x0c\nnet.load_state_dict(torch.load("w.pt"))  # caf\u00e9 \U0001f600\n'
    uri = open_file(client, tmp_path / "feed.py", text)
    finding = (await published(client, uri))[0]
    assert finding.range.start == types.Position(line=2, character=20)
    quick_fix = next(action for action in await actions(client, uri, finding) if "map_location" in action.title)
    assert edited(quick_fix, uri, text) == text.replace('"w.pt"))', '"w.pt", map_location="cpu"))')


async def test_code_actions_on_a_changed_document_use_its_new_text(client: LanguageClient, tmp_path: Path):
    uri = open_file(client, tmp_path / "train.py", LOADS)
    finding = (await published(client, uri))[0]
    moved = "\n\n" + LOADS
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=moved)],
    ))
    moved_range = types.Range(
        start=types.Position(line=finding.range.start.line + 2, character=finding.range.start.character),
        end=types.Position(line=finding.range.end.line + 2, character=finding.range.end.character),
    )
    offered = await actions(client, uri, types.Diagnostic(range=moved_range, message=finding.message))
    quick_fix = next(action for action in offered if "map_location" in action.title)
    assert edited(quick_fix, uri, moved) == moved.replace('"weights.pt")', '"weights.pt", map_location="cpu")')
