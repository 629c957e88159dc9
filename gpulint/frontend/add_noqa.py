"""``--add-noqa``: a ``# noqa: GPUxxx`` comment on every line where a finding starts, as ruff adds them.

An existing ``# noqa: CODES`` comment on the line gets the new codes merged into it; any other
comment keeps its text and gets the directive after it. A line that ends inside a string or
with a backslash continuation cannot take a comment and is left alone (and counted as such).
In a notebook the directives go into each cell's own source.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, replace
from typing import Dict, Iterable, List, Set, Tuple

from gpulint.engine.diagnostics import Diagnostic, Position
from gpulint.frontend.notebook import CodeCell, Notebook, rewrite_cells

_CODES_IN_NOQA = re.compile(r"(#\s*noqa:\s?)([A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*)", re.IGNORECASE)


@dataclass(frozen=True)
class NoqaResult:
    text: str
    added: int
    """Lines that got a directive or new codes in one."""
    skipped: int
    """Lines that cannot take a comment."""


def _uncommentable_lines(source: str) -> Set[int]:
    """Lines that end inside a string token or a backslash continuation."""
    lines: Set[int] = set()
    fstring_start, fstring_end = getattr(tokenize, "FSTRING_START", None), getattr(tokenize, "FSTRING_END", None)
    open_fstrings: List[int] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                lines.update(range(token.start[0], token.end[0]))
            elif fstring_start is not None and token.type == fstring_start:
                open_fstrings.append(token.start[0])
            elif fstring_end is not None and token.type == fstring_end and open_fstrings:
                lines.update(range(open_fstrings.pop(), token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        return set(range(1, source.count("\n") + 2))
    return lines


def _comment_start(line: str) -> int:
    """Where the line's comment starts, or -1; ``#`` inside strings does not count."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(line).readline):
            if token.type == tokenize.COMMENT:
                return token.start[1]
    except (tokenize.TokenError, SyntaxError):
        pass
    return -1


def _with_codes(line: str, codes: Iterable[str]) -> str:
    """``line`` (without its newline) with a noqa directive naming ``codes`` too."""
    start = _comment_start(line)
    comment = line[start:] if start >= 0 else ""
    existing = _CODES_IN_NOQA.search(comment)
    if existing is not None:
        merged = sorted({*re.split(r"[,\s]+", existing.group(2).upper()), *codes})
        return line[: start + existing.start(2)] + ", ".join(merged) + line[start + existing.end(2):]
    return f"{line.rstrip()}  # noqa: {', '.join(sorted(set(codes)))}"


def add_noqa(source: str, diagnostics: List[Diagnostic]) -> NoqaResult:
    """``source`` with a directive on the first line of each finding."""
    wanted: Dict[int, Set[str]] = {}
    for diagnostic in diagnostics:
        wanted.setdefault(diagnostic.start.line, set()).add(diagnostic.code)
    blocked = _uncommentable_lines(source)
    lines = source.splitlines(keepends=True)
    added = skipped = 0
    for number, codes in sorted(wanted.items()):
        if not 1 <= number <= len(lines):
            continue
        text = lines[number - 1]
        content = text.rstrip("\r\n")
        ending = text[len(content):]
        if number in blocked or content.rstrip().endswith("\\"):
            skipped += 1
            continue
        lines[number - 1] = _with_codes(content, codes) + ending
        added += 1
    return NoqaResult("".join(lines), added, skipped)


def add_noqa_to_notebook(notebook: Notebook, diagnostics: List[Diagnostic]) -> NoqaResult:
    """The notebook's text with a directive on the first line of each finding, in its cell."""
    by_cell: Dict[int, List[Diagnostic]] = {}
    for diagnostic in diagnostics:
        index, line = notebook.locate(diagnostic.start.line)
        by_cell.setdefault(index, []).append(replace(diagnostic, start=Position(line, diagnostic.start.column)))
    changed: List[Tuple[CodeCell, str]] = []
    added = skipped = 0
    for cell in notebook.cells:
        if cell.index not in by_cell:
            continue
        outcome = add_noqa(cell.source, by_cell[cell.index])
        added, skipped = added + outcome.added, skipped + outcome.skipped
        if outcome.text != cell.source:
            changed.append((cell, outcome.text))
    return NoqaResult(rewrite_cells(notebook, changed), added, skipped)
