"""One line per diagnostic: ``path:line:col: CODE [*] message``."""

from __future__ import annotations

from typing import TextIO

from gpulint.diagnostics import Diagnostic
from gpulint.report import RunReport
from gpulint.report.style import Style


def headline(report: RunReport, diagnostic: Diagnostic, style: Style) -> str:
    marker = " [*]" if report.applies_with_fix(diagnostic) else ""
    where = f"{style.bold(diagnostic.path)}{style.cyan(':')}{diagnostic.start.line}{style.cyan(':')}{diagnostic.start.column}"
    return f"{where}{style.cyan(':')} {style.red(diagnostic.code)}{marker} {diagnostic.message}"


def render(report: RunReport, stream: TextIO, color: bool) -> None:
    style = Style(color)
    for diagnostic in report.diagnostics:
        stream.write(headline(report, diagnostic, style) + "\n")
