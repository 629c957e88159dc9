"""``--format github``: GitHub Actions workflow commands, shown as annotations on the diff."""

from __future__ import annotations

from typing import TextIO

from gpulint.report import RunReport


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: RunReport, stream: TextIO, color: bool) -> None:
    for d in report.diagnostics:
        properties = ",".join([
            f"file={_escape_property(d.path)}",
            f"line={d.start.line}",
            f"col={d.start.column}",
            f"endLine={d.end.line}",
            f"endColumn={d.end.column}",
            f"title={d.code}",
        ])
        stream.write(f"::error {properties}::{_escape_data(f'{d.code} {d.message}')}\n")
