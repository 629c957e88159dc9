"""Blanking function bodies: the text a lint reads when its rules need only some of the functions.

A blanked body keeps its place and length: its first statement becomes ``...`` and every other
character of it, line breaks aside, a space. Every line, column and offset outside the blanked
bodies is the one of the original, so what LibCST parses, resolves and reports there is too.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Iterable, List, Tuple

from gpulint.engine.line_index import LineIndex

PLACEHOLDER = "..."


@dataclass(frozen=True)
class Blanked:
    """A source text with some function bodies blanked, and the offsets of what was blanked."""

    text: str
    spans: Tuple[Tuple[int, int], ...]
    """``(start, end)`` character offsets of each blanked body."""

    def touches(self, start: int, end: int) -> bool:
        """Whether the text between two offsets meets a blanked body, edges included."""
        return any(start <= span_end and span_start <= end for span_start, span_end in self.spans)


def blank_bodies(source: str, functions: Iterable[ast.AST]) -> Blanked:
    """``source`` with the bodies of ``functions`` (``def`` nodes of Python's tree of it) blanked;
    a body too short to hold the placeholder on its first line is left as it is."""
    lines = LineIndex(source)
    spans: List[Tuple[int, int]] = []
    for function in functions:
        first, last = function.body[0], function.body[-1]  # type: ignore[attr-defined]
        decorators = getattr(first, "decorator_list", None)
        start = lines.offset_of_ast(decorators[0].lineno if decorators else first.lineno, first.col_offset)
        end = lines.offset_of_ast(last.end_lineno, last.end_col_offset)
        if decorators and source[start : start + 1] != "@":
            continue
        if "\n" not in source[start : start + len(PLACEHOLDER)] and end - start >= len(PLACEHOLDER):
            spans.append((start, end))
    spans.sort()
    pieces = []
    previous = 0
    for start, end in spans:
        body = source[start + len(PLACEHOLDER) : end]
        pieces += [source[previous:start], PLACEHOLDER, "\n".join(" " * len(line) for line in body.split("\n"))]
        previous = end
    pieces.append(source[previous:])
    return Blanked("".join(pieces), tuple(spans))
