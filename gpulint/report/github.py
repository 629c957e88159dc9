"""``--format github``: GitHub Actions workflow commands, shown as annotations on the diff."""

from __future__ import annotations

from typing import TextIO

from gpulint.report import RunReport


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: RunReport, stream: TextIO, color: bool) -> None:
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
