"""``--format json``: a JSON list with one object per diagnostic, and one per file that could not be
checked (``"code": null``), as ruff does (schema in the README)."""

from __future__ import annotations

import json
from typing import List, Optional, TextIO

from gpulint.engine.diagnostics import Diagnostic, Edit
from gpulint.engine.line_index import LineIndex
from gpulint.report import RunReport
from gpulint.engine.runner import FileError, FileResult

NOT_CHECKED = "not-checked"
"""The ``name`` of an entry for a file that could not be read, parsed or fixed."""


def _edit(result: FileResult, index: LineIndex, edit: Edit) -> dict:
    line, column = index.position(edit.start)
    end_line, end_column = index.position(edit.end)
    cell, line = result.locate(line)
    _, end_line = result.locate(end_line)
    located = {"cell": cell} if cell is not None else {}
    return {**located, "line": line, "column": column, "end_line": end_line, "end_column": end_column, "content": edit.content}


def diagnostic_object(result: FileResult, diagnostic: Diagnostic, index: Optional[LineIndex]) -> dict:
    fix = None
    if diagnostic.fix is not None and index is not None:
        fix = {
            "applicability": diagnostic.fix.applicability.value,
            "title": diagnostic.fix.title,
            "edits": [_edit(result, index, edit) for edit in diagnostic.fix.edits],
        }
    cell, line = result.locate(diagnostic.start.line)
    _, end_line = result.locate(diagnostic.end.line)
    return {
        "path": diagnostic.path,
        "cell": cell,
        "line": line,
        "column": diagnostic.start.column,
        "end_line": end_line,
        "end_column": diagnostic.end.column,
        "code": diagnostic.code,
        "name": diagnostic.name,
        "message": diagnostic.message,
        "fix": fix,
        "fix_note": diagnostic.fix_note,
    }


def error_object(error: FileError) -> dict:
    """A file that was skipped, in the shape of a diagnostic without a rule."""
    return {
        "path": error.path,
        "cell": error.cell,
        "line": error.line,
        "column": error.column,
        "end_line": error.line,
        "end_column": error.column,
        "code": None,
        "name": NOT_CHECKED,
        "message": error.message,
        "fix": None,
        "fix_note": None,
    }


def render(report: RunReport, stream: TextIO, color: bool) -> None:
    objects: List[dict] = []
    for result in report.results:
        index = LineIndex(result.text) if result.text is not None else None
        objects.extend(diagnostic_object(result, d, index) for d in result.diagnostics)
        if result.error is not None:
            objects.append(error_object(result.error))
    json.dump(objects, stream, indent=2)
    stream.write("\n")
