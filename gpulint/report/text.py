"""The default format: each diagnostic with a source frame, a caret under its span and a help line."""

from __future__ import annotations

from typing import List, TextIO

from gpulint.diagnostics import Applicability, Diagnostic
from gpulint.report import RunReport
from gpulint.report.concise import headline
from gpulint.report.style import Style


def _frame(lines: List[str], diagnostic: Diagnostic, style: Style, shown_number: int) -> List[str]:
    number = diagnostic.start.line
    if not 1 <= number <= len(lines):
        return []
    source_line = lines[number - 1].rstrip("\r\n")
    start = diagnostic.start.column - 1
    end = diagnostic.end.column - 1 if diagnostic.end.line == number else len(source_line)
    width = len(str(shown_number))
    gutter = style.blue(" " * width + " |")
    padding = "".join(char if char == "\t" else " " for char in source_line[:start])
    caret = padding + "^" * max(1, end - start)
    return [
        gutter,
        f"{style.blue(str(shown_number) + ' |')} {source_line}",
        f"{gutter} {style.red(caret + ' ' + diagnostic.code)}",
        gutter,
    ]


def _help(report: RunReport, diagnostic: Diagnostic, shown_number: int) -> str:
    """The fix's title and, for a fix that is not safe or a finding without one, why, in one line."""
    indent = " " * (len(str(shown_number)) + 1)
    fix = diagnostic.fix
    why = f": {diagnostic.fix_note}" if diagnostic.fix_note else ""
    if fix is None:
        return f"{indent}= help: no fix{why}" if why else ""
    note = ""
    if fix.applicability is Applicability.UNSAFE and not report.unsafe_fixes:
        note = f" (unsafe fix, applied only with --unsafe-fixes{why})"
    elif fix.applicability is Applicability.UNSAFE:
        note = f" (unsafe fix{why})"
    elif fix.applicability is Applicability.DISPLAY_ONLY:
        note = f" (suggestion: never applied automatically{why})"
    return f"{indent}= help: {fix.title}{note}"


def render(report: RunReport, stream: TextIO, color: bool) -> None:
    style = Style(color)
    for result in report.results:
        lines = (result.text or "").splitlines()
        for diagnostic in result.diagnostics:
            _, shown_number = result.locate(diagnostic.start.line)
            stream.write(headline(report, result, diagnostic, style) + "\n")
            for line in _frame(lines, diagnostic, style, shown_number):
                stream.write(line + "\n")
            help_line = _help(report, diagnostic, shown_number)
            if help_line:
                stream.write(help_line + "\n")
            stream.write("\n")
