"""``--format github``: GitHub Actions workflow commands, shown as annotations on the diff; a file
that could not be checked is an error annotation of its own."""

from __future__ import annotations

from typing import TextIO

from gpulint.report import RunReport
from gpulint.engine.runner import FileError


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _error_line(error: FileError) -> str:
    properties = [f"file={_escape_property(error.path)}"]
    if error.line is not None:
        properties += [f"line={error.line}", f"col={error.column}"]
    where = f"cell {error.cell}: " if error.cell is not None else ""
    properties.append("title=gpulint: file not checked")
    return f"::error {','.join(properties)}::{_escape_data(where + error.message)}\n"


def render(report: RunReport, stream: TextIO, color: bool) -> None:
    for error in report.errors:
        stream.write(_error_line(error))
    for result in report.results:
        for d in result.diagnostics:
            cell, line = result.locate(d.start.line)
            _, end_line = result.locate(d.end.line)
            where = f"cell {cell}: " if cell is not None else ""
            properties = ",".join([
                f"file={_escape_property(d.path)}",
                f"line={line}",
                f"col={d.start.column}",
                f"endLine={end_line}",
                f"endColumn={d.end.column}",
                f"title={d.code}",
            ])
            stream.write(f"::error {properties}::{_escape_data(f'{where}{d.code} {d.message}')}\n")
