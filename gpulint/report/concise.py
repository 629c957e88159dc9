"""One line per diagnostic: ``path:line:col: CODE [*] message``."""

from __future__ import annotations

from typing import TextIO

from gpulint.engine.diagnostics import Diagnostic
from gpulint.report import RunReport
from gpulint.report.style import Style
from gpulint.engine.runner import FileResult


def headline(report: RunReport, result: FileResult, diagnostic: Diagnostic, style: Style) -> str:
    """``path:line:col: CODE [*] message``; in a notebook, ``path:cell N:line:col: ...``."""
    marker = " [*]" if report.applies_with_fix(diagnostic) else ""
    cell, line = result.locate(diagnostic.start.line)
    colon = style.cyan(":")
    where = style.bold(diagnostic.path) + (f"{colon}cell {cell}" if cell is not None else "")
    return f"{where}{colon}{line}{colon}{diagnostic.start.column}{colon} {style.red(diagnostic.code)}{marker} {diagnostic.message}"


def render(report: RunReport, stream: TextIO, color: bool) -> None:
    style = Style(color)
    for result in report.results:
        for diagnostic in result.diagnostics:
            stream.write(headline(report, result, diagnostic, style) + "\n")
