"""``--format sarif``: a SARIF 2.1.0 log with every rule's metadata, the results and their fixes, and
each file that could not be checked as a tool execution notification."""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import List, Optional, TextIO

from gpulint import __version__, rules
from gpulint.engine.diagnostics import Diagnostic
from gpulint.engine.line_index import LineIndex
from gpulint.frontend.pages import PAGES_URL, read_page, sections
from gpulint.report import RunReport
from gpulint.engine.runner import FileError, FileResult

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"


def _uri(path: str) -> str:
    return PurePath(path).as_posix()


def _rules() -> List[dict]:
    entries = []
    for rule in rules.rules_for(rules.ALL_CODES):
        page = read_page(rule.code) or ""
        entries.append({
            "id": rule.code,
            "name": rule.name,
            "shortDescription": {"text": (rule.__doc__ or rule.name).strip()},
            "fullDescription": {"text": sections(page).get("What it does", rule.name)},
            "helpUri": f"{PAGES_URL}{rule.code}.md",
            "help": {"text": page, "markdown": page},
            "defaultConfiguration": {"level": "error"},
            "properties": {"fixAvailability": rule.fix_availability.value},
        })
    return entries


def _region(line: int, column: int, end_line: int, end_column: int) -> dict:
    return {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column}


def _result(file_result: FileResult, diagnostic: Diagnostic, index: Optional[LineIndex]) -> dict:
    """A SARIF result; in a notebook, lines count within the cell, named in ``properties``."""
    codes = list(rules.ALL_CODES)
    location = {"artifactLocation": {"uri": _uri(diagnostic.path)}}
    cell, line = file_result.locate(diagnostic.start.line)
    _, end_line = file_result.locate(diagnostic.end.line)
    result = {
        "ruleId": diagnostic.code,
        "ruleIndex": codes.index(diagnostic.code),
        "level": "error",
        "message": {"text": diagnostic.message},
        "locations": [{"physicalLocation": {
            **location,
            "region": _region(line, diagnostic.start.column, end_line, diagnostic.end.column),
        }}],
    }
    if cell is not None:
        result["properties"] = {"cell": cell}
    if diagnostic.fix is not None and index is not None:
        replacements = []
        for edit in diagnostic.fix.edits:
            (start_line, start_column), (stop_line, stop_column) = index.position(edit.start), index.position(edit.end)
            region = _region(file_result.locate(start_line)[1], start_column, file_result.locate(stop_line)[1], stop_column)
            replacements.append({"deletedRegion": region, "insertedContent": {"text": edit.content}})
        result["fixes"] = [{
            "description": {"text": f"{diagnostic.fix.title} ({diagnostic.fix.applicability.value})"},
            "artifactChanges": [{**location, "replacements": replacements}],
        }]
    return result


def _notification(error: FileError) -> dict:
    """A file that could not be checked, as a tool execution notification."""
    location: dict = {"artifactLocation": {"uri": _uri(error.path)}}
    if error.line is not None:
        location["region"] = {"startLine": error.line, "startColumn": error.column or 1}
    notification: dict = {
        "level": "error",
        "message": {"text": error.message},
        "locations": [{"physicalLocation": location}],
    }
    if error.cell is not None:
        notification["properties"] = {"cell": error.cell}
    return notification


def render(report: RunReport, stream: TextIO, color: bool) -> None:
    results: List[dict] = []
    for file_result in report.results:
        index = LineIndex(file_result.text) if file_result.text is not None else None
        results.extend(_result(file_result, d, index) for d in file_result.diagnostics)
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "gpulint",
                "version": __version__,
                "informationUri": PAGES_URL.rsplit("/rules/", 1)[0],
                "rules": _rules(),
            }},
            "invocations": [{
                "executionSuccessful": not report.errors,
                "toolExecutionNotifications": [_notification(error) for error in report.errors],
            }],
            "results": results,
        }],
    }
    json.dump(log, stream, indent=2)
    stream.write("\n")
