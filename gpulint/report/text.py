"""The default format: each diagnostic with a source frame, a caret under its span and a help line."""

from __future__ import annotations

import difflib
from collections import Counter
from typing import List, TextIO

from gpulint.engine.diagnostics import Applicability, Diagnostic, Fix, apply_chosen
from gpulint.report import RunReport
from gpulint.report.summary import plural
from gpulint.rules import rule_for
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


def _preview(text: str, fix: Fix, style: Style, indent: str) -> List[str]:
    """The lines the fix changes, before (``-``) and after (``+``), marked unsafe where it is."""
    fixed = apply_chosen(text, [fix])
    old_lines, new_lines = text.splitlines(), fixed.splitlines()
    kind = fix.applicability.value
    shown = [f"{indent}= fix ({kind}):" if fix.applicability is Applicability.SAFE else f"{indent}= fix ({style.red(kind)}):"]
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, old_start, old_end, new_start, new_end in matcher.get_opcodes():
        if tag == "equal":
            continue
        shown += [f"{indent}  {style.red('- ' + line)}" for line in old_lines[old_start:old_end]]
        shown += [f"{indent}  {style.green('+ ' + line)}" for line in new_lines[new_start:new_end]]
    return shown


def render_fixed(report: RunReport, stream: TextIO) -> None:
    """``--fix --show-fixes``: per file, how many fixes of each rule were applied."""
    fixed = [result for result in report.results if result.fixed_codes]
    if not fixed:
        return
    stream.write(f"Fixed {plural(report.fixed, 'problem')}:\n")
    for result in fixed:
        stream.write(f"- {result.path}:\n")
        for code, count in sorted(Counter(result.fixed_codes).items()):
            stream.write(f"    {count} × {code} ({rule_for(code).name})\n")


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
            if report.show_fixes and diagnostic.fix is not None and result.text is not None:
                for line in _preview(result.text, diagnostic.fix, style, " " * (len(str(shown_number)) + 1)):
                    stream.write(line + "\n")
            stream.write("\n")
