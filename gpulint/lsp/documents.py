"""What the language server checks and fixes, without the protocol: a Python document, or a
notebook's code cells checked as one program, with each finding and each edit placed in the
document it belongs to (the file, or one cell).

Positions here are gpulint's (lines and columns from 1, in characters) and edits are character
offsets into that document's own text; :mod:`gpulint.lsp.server` turns them into the client's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Sequence, Tuple

from gpulint.engine.diagnostics import Applicability, Diagnostic, Edit, Fix, Position, apply_chosen
from gpulint.engine.line_index import LineIndex
from gpulint.engine.reparse import Parse
from gpulint.engine.runner import FileError, Job, Mode, process_text
from gpulint.engine.fixer import compiles
from gpulint.engine.source import SourceError
from gpulint.frontend.add_noqa import add_noqa
from gpulint.frontend.notebook import Notebook, changed_cells, parse_notebook, show


@dataclass(frozen=True)
class DocumentEdit:
    """Replace ``start:end`` (character offsets) of one document's text by ``content``."""

    uri: str
    start: int
    end: int
    content: str


@dataclass(frozen=True)
class Finding:
    """A gpulint diagnostic in one document, with its fix as edits of documents (None: no fix, or
    one that spans notebook cells). Whether the fixed code parses is checked when the fix is
    offered (:func:`offered_edits`), not on every keystroke."""

    uri: str
    diagnostic: Diagnostic
    edits: Optional[Tuple[DocumentEdit, ...]]
    program: str = field(default="", repr=False, compare=False)
    """The text the rule's fix applies to: the file's, or the notebook's program."""
    program_fix: Optional[Fix] = field(default=None, repr=False, compare=False)
    """The fix as edits of ``program``."""

    @property
    def applicability(self) -> Optional[Applicability]:
        fix = self.diagnostic.fix
        return fix.applicability if fix is not None and self.edits is not None else None


def offered_edits(finding: Finding) -> Optional[Tuple[DocumentEdit, ...]]:
    """The finding's fix, where applying it leaves code that still parses (and compiles where it did)."""
    if finding.edits is None or finding.program_fix is None or not _parses_after(finding.program, finding.program_fix):
        return None
    return finding.edits


@dataclass(frozen=True)
class Problem:
    """Why a document could not be checked (it does not parse, it ran over its time budget...),
    placed in the document it concerns, with a position where there is one."""

    uri: str
    message: str
    line: Optional[int] = None
    column: Optional[int] = None


@dataclass(frozen=True)
class Document:
    """What to check: a Python file's text, or a notebook's code cells in order, each with its URI."""

    path: str
    """The file's path: it chooses the settings, and rules read it (a test file, a notebook)."""
    parts: Tuple[Tuple[str, str], ...]
    """``(uri, text)``: one for a Python file, one per code cell of a notebook."""
    notebook: bool = False

    @property
    def texts(self) -> Dict[str, str]:
        return dict(self.parts)


@dataclass
class Outcome:
    findings: List[Finding]
    problems: List[Problem]


def check(document: Document, job: Job, parse: Optional[Parse] = None) -> Outcome:
    """The findings of ``job``'s rules on ``document``; ``parse``, where given, parses its program
    (the document's :class:`~gpulint.engine.reparse.Reparser`)."""
    job = replace(job, mode=Mode.CHECK)
    if not document.notebook:
        uri, text = document.parts[0]
        result = process_text(document.path, text, job, parse)
        findings = [_file_finding(uri, text, d) for d in result.diagnostics]
        problems = [_file_problem(uri, result.error)] if result.error is not None else []
        return Outcome(findings, problems)
    notebook = _notebook(document)
    result = process_text(document.path, notebook.code, job, parse)
    placed = _Cells(document, notebook)
    findings = [placed.finding(raw, shown) for raw, shown in zip(result.diagnostics, show(notebook, notebook.code, result.diagnostics)[1])]
    problems = []
    if result.error is not None:
        problems.append(placed.problem(result.error))
    elif notebook.syntax_error is not None:
        broken = notebook.syntax_error
        uri = placed.uri_of(broken.cell)
        problems.append(Problem(uri, f"cannot parse: {broken.message}", broken.line, broken.column))
    return Outcome(findings, problems)


def fix_all(document: Document, job: Job) -> Optional[Dict[str, str]]:
    """The new text of each document that applying every safe fix changes (None: nothing to fix,
    or the fixes could not be applied)."""
    job = replace(job, mode=Mode.FIX, unsafe_fixes=False)
    if not document.notebook:
        uri, text = document.parts[0]
        result = process_text(document.path, text, job)
        if result.error is not None or result.text is None or result.text == text:
            return None
        return {uri: result.text}
    notebook = _notebook(document)
    if notebook.syntax_error is not None:
        return None
    result = process_text(document.path, notebook.code, job)
    if result.error is not None or result.text is None:
        return None
    cells = _Cells(document, notebook)
    changed = {cells.uri_of(cell.index): source for cell, source in changed_cells(notebook, result.text)}
    return changed or None


def with_noqa(document: Document, finding: Finding) -> Optional[str]:
    """The text of the finding's document with a ``# noqa`` directive for it on its first line
    (None where that line cannot take a comment)."""
    text = document.texts[finding.uri]
    outcome = add_noqa(text, [finding.diagnostic])
    return outcome.text if outcome.added else None


def _notebook(document: Document) -> Notebook:
    """The notebook of a document's code cells (as the command line reads an ``.ipynb`` file)."""
    cells: List[Dict[str, object]] = [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": text}
        for _, text in document.parts
    ]
    try:
        return parse_notebook(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    except SourceError as error:  # the JSON is ours: this cannot happen for text cells
        raise AssertionError(str(error)) from None


def _file_finding(uri: str, text: str, diagnostic: Diagnostic) -> Finding:
    fix = diagnostic.fix
    edits = tuple(DocumentEdit(uri, edit.start, edit.end, edit.content) for edit in fix.edits) if fix is not None else None
    return Finding(uri, diagnostic, edits, text, fix)


def _parses_after(text: str, fix: Fix) -> bool:
    """Whether ``text`` with ``fix`` applied still parses: it compiles where the original does
    (Python's own parser is the quick and strict check), else LibCST parses it."""
    fixed = apply_chosen(text, [fix])
    if compiles(text):
        return compiles(fixed)
    import libcst as cst

    try:
        cst.parse_module(fixed)
    except cst.ParserSyntaxError:
        return False
    return True


def _file_problem(uri: str, error: FileError) -> Problem:
    return Problem(uri, error.message, error.line, error.column)


class _Cells:
    """Places positions and edits of a notebook's program in its cells."""

    def __init__(self, document: Document, notebook: Notebook) -> None:
        self.document = document
        self.notebook = notebook
        self.uris = {cell.index: uri for cell, (uri, _) in zip(notebook.cells, document.parts)}
        self.shown = LineIndex(notebook.program)
        self.cell_lines = {uri: LineIndex(text) for uri, text in document.parts}

    def uri_of(self, cell: int) -> str:
        return self.uris[cell]

    def _place(self, position: Position) -> Tuple[str, Position]:
        cell, line = self.notebook.locate(position.line)
        return self.uris[cell], Position(line, position.column)

    def finding(self, raw: Diagnostic, shown: Diagnostic) -> Finding:
        """``shown`` (``raw`` as the notebook shows it) placed in its cell; its fix is kept when
        all its edits lie in that cell."""
        uri, start = self._place(shown.start)
        end_uri, end = self._place(shown.end)
        diagnostic = replace(shown, start=start, end=end if end_uri == uri else start)
        edits = self._edits(uri, shown.fix.edits) if shown.fix is not None else None
        return Finding(uri, diagnostic, edits, self.notebook.code, raw.fix)

    def _edits(self, uri: str, edits: Sequence[Edit]) -> Optional[Tuple[DocumentEdit, ...]]:
        placed = []
        for edit in edits:
            start_uri, start = self._offset(edit.start)
            end_uri, end = self._offset(edit.end)
            if start_uri != uri or end_uri != uri:
                return None
            placed.append(DocumentEdit(uri, start, end, edit.content))
        return tuple(placed)

    def _offset(self, offset: int) -> Tuple[str, int]:
        """The cell and the offset in its text of an offset of the shown program."""
        line, column = self.shown.position(offset)
        uri, position = self._place(Position(line, column))
        starts = self.cell_lines[uri].starts
        if position.line < 1 or position.line > len(starts):
            return "", 0
        return uri, starts[position.line - 1] + position.column - 1

    def problem(self, error: FileError) -> Problem:
        if error.line is None:
            return Problem(self.document.parts[0][0], error.message)
        uri, position = self._place(Position(error.line, error.column or 1))
        return Problem(uri, error.message, position.line, position.column)
