"""``gpulint server``: the Language Server Protocol over stdio, built on pygls.

It checks Python files and notebooks (LSP notebook documents: the code cells as one program) on
open, on change (after a short pause in typing) and on save, and publishes each finding in the
document it belongs to, with its rule code, a link to the rule's page and its fix. Code actions
offer a finding's safe fix as a quick fix, its unsafe fix as a separate action that says it may
change behaviour, "fix all safe fixes" (``source.fixAll.gpulint``, when the client asks for source
actions) and a ``# noqa`` directive. Documents are synchronised whole (positions follow
:mod:`gpulint.lsp.positions`), and code actions on a document changed since its last check check
it again first.
Settings come from ``[tool.gpulint]`` (see :mod:`gpulint.lsp.settings`); a configuration that
cannot be used is shown to the user, and the defaults stand in for it. A document that does not
parse, runs over its time budget or is too large to check gets a message, never a crash.
"""

from __future__ import annotations

import asyncio
import gc
import math
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from gpulint import __version__
from gpulint.engine.diagnostics import Applicability
from gpulint.engine.reparse import Reparser
from gpulint.engine.runner import Job
from gpulint.lsp.documents import Document, DocumentEdit, Finding, Problem, check, fix_all, offered_edits, with_noqa
from gpulint.lsp.positions import Lines
from gpulint.lsp.settings import SettingsCache
from gpulint.rules import rules_for

SOURCE = "gpulint"
FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.{SOURCE}"
RULE_PAGE = "https://github.com/gpulint/gpulint/blob/main/rules/{code}.md"
DEBOUNCE_SECONDS = 0.03
"""The debounce: a change that follows the document's previous change by less than this waits
this long for the next one before it is checked, so that changes a client sends in quick
succession (typing, a paste sent as several changes) are checked once, after the last of them; a
change after a longer pause is checked at once (in the next turn of the event loop)."""
TIME_BUDGET_SECONDS = 5.0
"""How long one check may take before the document is given up until its next change."""
MAX_CHARACTERS = 2_000_000
"""Larger documents are not checked (a message says so)."""
DEPRECATED_CODES = frozenset({"GPU006"})
"""Rules about deprecated APIs, whose findings carry the ``Deprecated`` tag."""


class GpulintServer(LanguageServer):
    """The language server, with the state it keeps between requests."""

    def __init__(self) -> None:
        super().__init__(
            SOURCE,
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Full,
            notebook_document_sync=types.NotebookDocumentSyncOptions(
                notebook_selector=[
                    types.NotebookDocumentFilterWithCells(
                        cells=[types.NotebookCellLanguage(language="python")], notebook="*"
                    )
                ],
                save=True,
            ),
        )
        self.settings = SettingsCache(Path.cwd())
        self.pending: Dict[str, asyncio.TimerHandle] = {}
        self.parsers: Dict[str, Reparser] = {}
        """Each open document's parser, which reparses only what a change touched."""
        self.last_change: Dict[str, float] = {}
        """When each document (file or notebook, by URI) last changed, on the event loop's clock."""
        self.findings: Dict[str, List[Finding]] = {}
        """The last findings of each open document (file or notebook), by its URI."""
        self.checked: Dict[str, Tuple[Tuple[str, Optional[int]], ...]] = {}
        """The versions of the documents the last findings were computed on, by the same URI."""
        self.shown_errors: Set[str] = set()
        self.debounce = DEBOUNCE_SECONDS

    # What is checked.

    def document(self, uri: str) -> Optional[Document]:
        """The document to check for a file or notebook URI (a cell's URI names its notebook)."""
        notebook = self.workspace.get_notebook_document(notebook_uri=uri) or self.workspace.get_notebook_document(cell_uri=uri)
        if notebook is not None:
            parts = []
            for cell in notebook.cells:
                if cell.kind != types.NotebookCellKind.Code:
                    continue
                text_document = self.workspace.get_text_document(cell.document)
                if text_document.language_id in (None, "python"):
                    parts.append((cell.document, text_document.source))
            return Document(_path(notebook.uri), tuple(parts), notebook=True) if parts else None
        if uri not in self.workspace.text_documents:
            return None
        text_document = self.workspace.get_text_document(uri)
        return Document(_path(uri), ((uri, text_document.source),))

    def owner(self, uri: str) -> str:
        """The URI whose check covers ``uri``: its notebook's for a cell, else its own."""
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        return notebook.uri if notebook is not None else uri

    def job(self, document: Document) -> Optional[Job]:
        """The job for a document by its settings, or None where they exclude it."""
        path = Path(document.path) if document.path else None
        resolved = self.settings.for_path(path)
        if resolved.error is not None and resolved.error not in self.shown_errors:
            self.shown_errors.add(resolved.error)
            self.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Error, message=f"gpulint: {resolved.error}; checking with the default settings",
            ))
        settings = resolved.settings
        if path is not None and settings.is_excluded(path):
            return None
        codes = settings.codes_for(path) if path is not None else tuple(sorted(settings.enabled))
        return Job(codes, options=settings.options, budget=TIME_BUDGET_SECONDS)

    # Checking and publishing.

    def schedule(self, uri: str) -> None:
        """Check the document of ``uri`` after a change: at once after a pause, else once changes
        pause (see ``DEBOUNCE_SECONDS``)."""
        owner = self.owner(uri)
        previous = self.pending.pop(owner, None)
        if previous is not None:
            previous.cancel()
        loop = asyncio.get_running_loop()
        now = loop.time()
        after_pause = now - self.last_change.get(owner, -math.inf) >= self.debounce
        self.last_change[owner] = now
        self.pending[owner] = loop.call_later(0 if after_pause else self.debounce, self.check_and_publish, owner)

    def check_and_publish(self, uri: str) -> None:
        self.pending.pop(uri, None)
        document = self.document(uri)
        if document is None:
            return
        uris = [part_uri for part_uri, _ in document.parts]
        findings: List[Finding] = []
        problems: List[Problem] = []
        job = self.job(document)
        size = sum(len(text) for _, text in document.parts)
        if job is not None and size > MAX_CHARACTERS:
            self.log(types.MessageType.Warning, f"{uri}: not checked, {size:,} characters (over {MAX_CHARACTERS:,})")
        elif job is not None:
            with _collector_paused():
                outcome = check(document, job, self.parsers.setdefault(uri, Reparser()))
            findings, problems = outcome.findings, outcome.problems
        self.findings[uri] = findings
        self.checked[uri] = self.versions(document)
        by_uri: Dict[str, List[types.Diagnostic]] = {part: [] for part in uris}
        for finding in findings:
            by_uri.setdefault(finding.uri, []).append(self.to_lsp(finding))
        for problem in problems:
            self.log(types.MessageType.Warning, f"{problem.uri}: {problem.message}")
            if problem.line is not None:
                by_uri.setdefault(problem.uri, []).append(self.problem_to_lsp(problem))
        for part_uri, diagnostics in by_uri.items():
            version = self.workspace.get_text_document(part_uri).version
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=part_uri, diagnostics=diagnostics, version=version)
            )

    def versions(self, document: Document) -> Tuple[Tuple[str, Optional[int]], ...]:
        return tuple((part_uri, self.workspace.get_text_document(part_uri).version) for part_uri, _ in document.parts)

    def recheck_all(self) -> None:
        """Check every open document again (the configuration changed)."""
        self.settings.clear()
        self.shown_errors.clear()
        open_uris = {self.owner(uri) for uri in self.workspace.text_documents}
        open_uris.update(self.workspace.notebook_documents)
        for uri in sorted(open_uris):
            self.check_and_publish(uri)

    def forget(self, uri: str, shown: Sequence[str]) -> None:
        """A closed document: drop its findings and pending check, and clear what ``shown`` (its
        own URI, or its cells') displays."""
        self.findings.pop(uri, None)
        self.checked.pop(uri, None)
        self.last_change.pop(uri, None)
        self.parsers.pop(uri, None)
        pending = self.pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        for shown_uri in shown:
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=shown_uri, diagnostics=[]))

    def log(self, kind: types.MessageType, message: str) -> None:
        self.window_log_message(types.LogMessageParams(type=kind, message=f"gpulint: {message}"))

    # Conversions to the protocol.

    def lines(self, uri: str) -> Lines:
        """The document's lines as the client counts them, in the agreed position encoding."""
        encoding = self.workspace.position_encoding or types.PositionEncodingKind.Utf16
        return Lines(self.workspace.get_text_document(uri).source, str(encoding))

    def range_of(self, uri: str, start: Tuple[int, int], end: Tuple[int, int]) -> types.Range:
        """The client's range for 1-based lines and columns in characters."""
        lines = self.lines(uri)
        return types.Range(lines.position_of(*start), lines.position_of(*end))

    def to_lsp(self, finding: Finding) -> types.Diagnostic:
        diagnostic = finding.diagnostic
        message = diagnostic.message
        if diagnostic.fix_note:
            message += f" ({diagnostic.fix_note})"
        return types.Diagnostic(
            range=self.range_of(
                finding.uri, (diagnostic.start.line, diagnostic.start.column), (diagnostic.end.line, diagnostic.end.column)
            ),
            message=message,
            severity=types.DiagnosticSeverity.Warning,
            code=diagnostic.code,
            code_description=types.CodeDescription(href=RULE_PAGE.format(code=diagnostic.code)),
            source=SOURCE,
            tags=[types.DiagnosticTag.Deprecated] if diagnostic.code in DEPRECATED_CODES else None,
            data={"name": diagnostic.name},
        )

    def problem_to_lsp(self, problem: Problem) -> types.Diagnostic:
        where = (problem.line or 1, problem.column or 1)
        return types.Diagnostic(
            range=self.range_of(problem.uri, where, where),
            message=f"gpulint could not check this file: {problem.message}",
            severity=types.DiagnosticSeverity.Information,
            source=SOURCE,
        )

    def text_edits(self, edits: Sequence[DocumentEdit]) -> types.WorkspaceEdit:
        changes: Dict[str, List[types.TextEdit]] = {}
        for edit in edits:
            lines = self.lines(edit.uri)
            changes.setdefault(edit.uri, []).append(types.TextEdit(
                range=types.Range(lines.position(edit.start), lines.position(edit.end)), new_text=edit.content,
            ))
        return types.WorkspaceEdit(changes=changes)

    def replacement(self, uri: str, new_text: str) -> DocumentEdit:
        """One edit that turns the document's text into ``new_text``: the part between what they share at both ends."""
        old = self.workspace.get_text_document(uri).source
        start = 0
        limit = min(len(old), len(new_text))
        while start < limit and old[start] == new_text[start]:
            start += 1
        end_old, end_new = len(old), len(new_text)
        while end_old > start and end_new > start and old[end_old - 1] == new_text[end_new - 1]:
            end_old, end_new = end_old - 1, end_new - 1
        return DocumentEdit(uri, start, end_old, new_text[start:end_new])

    # Code actions.

    def code_actions(self, params: types.CodeActionParams) -> List[types.CodeAction]:
        uri = params.text_document.uri
        owner = self.owner(uri)
        document = self.document(owner)
        if document is None:
            return []
        if self.checked.get(owner) != self.versions(document):
            self.check_and_publish(owner)
        wanted = params.context.only
        actions: List[types.CodeAction] = []
        if _wants(wanted, types.CodeActionKind.QuickFix):
            for finding in self.findings.get(owner, []):
                if finding.uri != uri or not _overlaps(self.to_lsp(finding).range, params.range):
                    continue
                actions.extend(self.finding_actions(document, finding))
        if wanted is not None and _wants(wanted, FIX_ALL):
            job = self.job(document)
            fixed = fix_all(document, job) if job is not None else None
            if fixed:
                edits = [self.replacement(part_uri, text) for part_uri, text in fixed.items()]
                actions.append(types.CodeAction(
                    title="gpulint: fix all safe fixes", kind=FIX_ALL, edit=self.text_edits(edits),
                ))
        return actions

    def finding_actions(self, document: Document, finding: Finding) -> List[types.CodeAction]:
        diagnostic = finding.diagnostic
        lsp_diagnostic = self.to_lsp(finding)
        actions = []
        fix = diagnostic.fix
        edits = offered_edits(finding)
        if fix is not None and edits is not None:
            if finding.applicability is Applicability.SAFE:
                title = f"{fix.title} ({diagnostic.code})"
            else:
                title = f"{fix.title} ({diagnostic.code}, unsafe: may change behaviour)"
            actions.append(types.CodeAction(
                title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[lsp_diagnostic],
                edit=self.text_edits(edits), is_preferred=finding.applicability is Applicability.SAFE,
            ))
        noqa = with_noqa(document, finding)
        if noqa is not None:
            actions.append(types.CodeAction(
                title=f"Add `# noqa: {diagnostic.code}` on this line", kind=types.CodeActionKind.QuickFix,
                diagnostics=[lsp_diagnostic], edit=self.text_edits([self.replacement(finding.uri, noqa)]),
            ))
        return actions


def _path(uri: str) -> str:
    return to_fs_path(uri) or ""


def _wants(only: Optional[Sequence[str]], kind: str) -> bool:
    """Whether a request limited to ``only`` kinds asks for ``kind`` (``source.fixAll`` asks for ``source.fixAll.gpulint``)."""
    return only is None or any(kind == wanted or kind.startswith(f"{wanted}.") for wanted in only)


def _overlaps(first: types.Range, second: types.Range) -> bool:
    def key(position: types.Position) -> Tuple[int, int]:
        return position.line, position.character

    return key(first.start) <= key(second.end) and key(second.start) <= key(first.end)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector paused while a check runs: a check builds a few hundred thousand
    short-lived objects, which reference counting frees, and each full collection they set off
    would walk everything the server holds."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def build_server() -> GpulintServer:
    server = GpulintServer()
    rules_for(())  # load the rules now, not on the first keystroke

    @server.feature(types.INITIALIZE)
    def initialize(ls: GpulintServer, params: types.InitializeParams) -> None:
        options = params.initialization_options
        if isinstance(options, dict) and isinstance(options.get("debounce"), (int, float)):
            ls.debounce = max(0.0, float(options["debounce"]))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: GpulintServer, params: types.DidOpenTextDocumentParams) -> None:
        if ls.workspace.get_notebook_document(cell_uri=params.text_document.uri) is None:
            ls.check_and_publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: GpulintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: GpulintServer, params: types.DidSaveTextDocumentParams) -> None:
        if params.text_document.uri.endswith("/pyproject.toml"):
            ls.recheck_all()
        else:
            ls.check_and_publish(ls.owner(params.text_document.uri))

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: GpulintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.forget(params.text_document.uri, [params.text_document.uri])

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_did_open(ls: GpulintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        ls.check_and_publish(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_did_change(ls: GpulintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def notebook_did_save(ls: GpulintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        ls.check_and_publish(params.notebook_document.uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_did_close(ls: GpulintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        ls.forget(params.notebook_document.uri, [cell.uri for cell in params.cell_text_documents])

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched_files(ls: GpulintServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(change.uri.endswith("/pyproject.toml") for change in params.changes):
            ls.recheck_all()

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]),
    )
    def code_action(ls: GpulintServer, params: types.CodeActionParams) -> List[types.CodeAction]:
        return ls.code_actions(params)

    return server


def main() -> int:
    """Serve over stdio until the client exits. What is loaded by then (pygls, LibCST, the rules)
    lives as long as the server: it is moved out of the cycle collector's reach."""
    server = build_server()
    gc.collect()
    gc.freeze()
    server.start_io()
    return 0
