"""Applying fixes: non-overlapping edits per pass, re-linting until nothing more changes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Collection, FrozenSet, Iterable, List, Tuple

import libcst as cst

from gpulint.engine.diagnostics import Applicability, Diagnostic, Fix, apply_chosen
from gpulint.engine.source import quiet_compile

MAX_PASSES = 10

Lint = Callable[[str], List[Diagnostic]]


class FixError(Exception):
    """Fixes that could not be applied; the file is left as it was. ``diagnostics`` are the
    findings of the unfixed text."""

    def __init__(self, message: str, diagnostics: List[Diagnostic]) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics


@dataclass(frozen=True)
class FixResult:
    text: str
    applied: int
    remaining: List[Diagnostic]
    applied_codes: Tuple[str, ...] = ()
    """The rule code of each fix applied, in the order applied."""


def applicabilities(unsafe_fixes: bool) -> FrozenSet[Applicability]:
    if unsafe_fixes:
        return frozenset({Applicability.SAFE, Applicability.UNSAFE})
    return frozenset({Applicability.SAFE})


def apply_fixes(text: str, fixes: Iterable[Fix]) -> tuple:
    """(new text, number of fixes applied): each fix applied whole, skipping any that touches an
    earlier one or shares its isolation key."""
    chosen = choose_fixes(fixes)
    return apply_chosen(text, chosen), len(chosen)


def choose_fixes(fixes: Iterable[Fix]) -> List[Fix]:
    """The fixes one pass applies: in order, each that touches no earlier one nor shares its isolation key."""
    chosen: List[Fix] = []
    isolated = set()
    for fix in sorted(fixes, key=lambda f: f.span):
        if fix.isolation is not None and fix.isolation in isolated:
            continue
        if all(_disjoint(fix, other) for other in chosen):
            chosen.append(fix)
            if fix.isolation is not None:
                isolated.add(fix.isolation)
    return chosen


def _disjoint(first: Fix, second: Fix) -> bool:
    """No edit of one touches an edit of the other, except an identical one (two fixes adding the
    same import), which is applied once."""
    return all(a == b or a.end < b.start or b.end < a.start for a in first.edits for b in second.edits)


def compiles(text: str) -> bool:
    """Whether the running Python compiles ``text`` (its warnings about the code silenced)."""
    try:
        quiet_compile(text, "<gpulint>")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def fix_text(text: str, lint: Lint, allowed: Collection[Applicability]) -> FixResult:
    """Fix ``text`` until stable, or raise ``FixError``.

    The result parses with LibCST, and, where the original compiles with the running Python, it
    compiles too (LibCST accepts newer syntax than some Pythons do).
    """
    original = text
    applied = 0
    codes: List[str] = []
    diagnostics = first = lint(text)
    passes = 0
    while True:
        fixable = [d for d in diagnostics if d.fix is not None and d.fix.applicability in allowed]
        code_of = {id(d.fix): d.code for d in fixable}
        chosen = choose_fixes(d.fix for d in fixable if d.fix is not None)
        new_text, count = apply_chosen(text, chosen), len(chosen)
        if new_text == text:
            if applied and not compiles(text) and compiles(original):
                raise FixError("fixes produced code that this Python cannot compile; file left unchanged", first)
            return FixResult(text, applied, diagnostics, tuple(codes))
        if passes == MAX_PASSES:
            raise FixError(f"fixes did not settle after {MAX_PASSES} passes; file left unchanged", first)
        try:
            diagnostics = lint(new_text)
        except cst.ParserSyntaxError as error:
            raise FixError(f"fixes produced code that does not parse ({error.message}); file left unchanged", first) from None
        text, applied, passes = new_text, applied + count, passes + 1
        codes.extend(code_of[id(fix)] for fix in chosen)
