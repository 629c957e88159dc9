"""Python's parse of successive versions of one document, reparsing only the top-level statements
that an edit touches: an editor sends the whole text on every keystroke, and most of it is
unchanged.

The lines the two versions share at their start and at their end are found; the top-level
statements that reach into the lines between, widened by one statement on each side and to every
statement that shares a line with them (``a = 1; b()``), are parsed again from the new text, from
the line after the last statement kept before them (a decorator's ``@`` may stand lines above its
expression), and the statements before them are kept. Where the line count is the same, the
statements after them are kept too; where it changed, the rest of the file is parsed again as well
(shifting the kept nodes' line numbers would cost more than Python's parser does).

Lines that hold whole top-level statements, and no part of another, start outside any bracket or
string, so they parse on their own exactly as they do inside the file (a line that a backslash
joins to the kept statement before them can only be blank or a comment, or the statement would end
on it; were it changed, that statement would be reparsed too). Where the new text of the reparsed
lines does not parse on its own (an unclosed bracket or string runs past them, a block lost its
body), the whole text is parsed instead. Lines end at ``\\n`` only here: a text with a ``\\r`` not followed by ``\\n`` is always
parsed whole.
"""

from __future__ import annotations

import ast
from typing import Callable, List, Optional, Sequence, Tuple

from gpulint.engine.source import quiet_compile


Parse = Callable[[str], Optional[ast.Module]]
"""Python's own (much faster than LibCST's) parse of a source text, or None where it rejects it:
:func:`parse`, or a document's :class:`Reparser`."""


def parse(text: str) -> Optional[ast.Module]:
    """Python's own parse of ``text``, or None where it rejects it."""
    try:
        tree = quiet_compile(text, "<gpulint>")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return tree if isinstance(tree, ast.Module) else None


class Reparser:
    """Parses the versions of one document in turn, each from the last one parsed."""

    def __init__(self) -> None:
        self._text: Optional[str] = None
        self._tree: Optional[ast.Module] = None

    def __call__(self, text: str) -> Optional[ast.Module]:
        tree = self._reparse(text) if self._tree is not None else None
        if tree is None:
            tree = parse(text)
        if tree is not None:  # a version that does not parse is skipped: the next is compared with the last that did
            self._text, self._tree = text, tree
        return tree

    def _reparse(self, text: str) -> Optional[ast.Module]:
        old_text, old_tree = self._text, self._tree
        assert old_text is not None and old_tree is not None
        if text == old_text:
            return old_tree
        if _has_lone_carriage_return(text) or _has_lone_carriage_return(old_text):
            return None
        old_lines, new_lines = old_text.split("\n"), text.split("\n")
        prefix, suffix = _shared_lines(old_lines, new_lines)
        statements = old_tree.body
        spans = [_lines_of(statement) for statement in statements]
        first = next((index for index, (_, end) in enumerate(spans) if end > prefix), len(spans))
        last_changed = len(old_lines) - suffix
        last = max((index for index, (start, _) in enumerate(spans) if start <= last_changed), default=-1)
        first, last = max(first - 1, 0), min(max(last, first) + 1, len(spans) - 1)
        while first > 0 and spans[first - 1][1] >= spans[first][0]:  # statements sharing a line (``a = 1; b()``)
            first -= 1
        while last + 1 < len(spans) and spans[last + 1][0] <= spans[last][1]:
            last += 1
        same_length = len(new_lines) == len(old_lines)
        start_line = spans[first - 1][1] + 1 if first > 0 else 1
        end_line = spans[last][1] if same_length and last + 1 < len(spans) else len(old_lines)
        assert start_line <= prefix + 1 and end_line >= last_changed, "the reparsed lines hold every changed line"
        end_in_new = end_line + len(new_lines) - len(old_lines)
        region = "\n".join(new_lines[start_line - 1:end_in_new])
        if end_in_new < len(new_lines):
            region += "\n"
        parsed = parse("\n" * (start_line - 1) + region)
        if parsed is None:
            return None
        kept_after: Sequence[ast.stmt] = statements[last + 1:] if end_line < len(old_lines) else ()
        return ast.Module(body=[*statements[:first], *parsed.body, *kept_after], type_ignores=[])


def _lines_of(statement: ast.stmt) -> Tuple[int, int]:
    """The first and last line of a top-level statement, from its first decorator's expression."""
    decorators: List[ast.expr] = getattr(statement, "decorator_list", [])
    start = min([statement.lineno, *(decorator.lineno for decorator in decorators)])
    return start, statement.end_lineno or statement.lineno


def _shared_lines(old: Sequence[str], new: Sequence[str]) -> Tuple[int, int]:
    """How many lines the two texts share at their start, and then at their end."""
    limit = min(len(old), len(new))
    prefix = 0
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    return prefix, suffix


def _has_lone_carriage_return(text: str) -> bool:
    return text.count("\r") != text.count("\r\n")
