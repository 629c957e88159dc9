"""``# noqa`` suppression comments, read as flake8 and ruff read them."""

from __future__ import annotations

import io
import re
import tokenize
from typing import Dict, FrozenSet, Iterator, List, Optional, Tuple

from gpulint.engine.diagnostics import Diagnostic

_NOQA = re.compile(
    r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?",
    re.IGNORECASE,
)

Suppressions = Dict[int, Optional[FrozenSet[str]]]
"""Line -> the codes its noqa comment names, or None for a blanket ``# noqa``."""


def _comments(source: str) -> Iterator[Tuple[int, str]]:
    """(line, text) of every comment; falls back to a line scan where tokenize cannot follow."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.COMMENT:
                yield token.start[0], token.string
    except (tokenize.TokenError, SyntaxError):
        for number, line in enumerate(source.splitlines(), start=1):
            hash_at = line.find("#")
            if hash_at >= 0:
                yield number, line[hash_at:]


def suppressions(source: str) -> Suppressions:
    found: Suppressions = {}
    for line, comment in _comments(source):
        match = _NOQA.search(comment)
        if match is None:
            continue
        codes = match.group("codes")
        found[line] = None if codes is None else frozenset(re.split(r"[,\s]+", codes.upper()))
    return found


def filter_suppressed(source: str, diagnostics: List[Diagnostic]) -> List[Diagnostic]:
    """Drop the diagnostics a noqa comment on their first line suppresses."""
    if not diagnostics or "noqa" not in source.lower():
        return diagnostics
    table = suppressions(source)
    kept = []
    for diagnostic in diagnostics:
        line = diagnostic.start.line
        if line in table:
            codes = table[line]
            if codes is None or diagnostic.code in codes:
                continue
        kept.append(diagnostic)
    return kept
