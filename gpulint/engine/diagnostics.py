"""The data a rule reports: diagnostics, fixes, edits and fix applicability."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Optional, Sequence, Tuple, Union


class Applicability(enum.Enum):
    """How confidently a fix may be applied, ordered from most to least applicable (as in ruff)."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


@dataclass(frozen=True)
class Edit:
    """Replace the text between two 0-based character offsets of the original source."""

    start: int
    end: int
    content: str

    @classmethod
    def between(cls, old: str, new: str) -> Optional["Edit"]:
        """The smallest single edit that turns ``old`` into ``new``, or None if they are equal."""
        if old == new:
            return None
        prefix = 0
        limit = min(len(old), len(new))
        while prefix < limit and old[prefix] == new[prefix]:
            prefix += 1
        suffix = 0
        limit -= prefix
        while suffix < limit and old[-1 - suffix] == new[-1 - suffix]:
            suffix += 1
        return cls(prefix, len(old) - suffix, new[prefix : len(new) - suffix])


@dataclass(frozen=True)
class Fix:
    """A set of edits that together resolve one diagnostic."""

    title: str
    applicability: Applicability
    edits: Tuple[Edit, ...]
    isolation: Optional[str] = None
    """Fixes with the same key are applied one per pass: each is computed on the code as it was,
    and two of them (say, two deletions of one name in one function) may not combine."""
    note: Optional[str] = None
    """For a fix that is not safe: why it may change what the program does, in one line."""

    @property
    def span(self) -> Tuple[int, int]:
        return min(e.start for e in self.edits), max(e.end for e in self.edits)


def apply_chosen(text: str, chosen: Sequence[Fix]) -> str:
    """``text`` with the edits of ``chosen`` (fixes that do not overlap) applied."""
    edits = sorted({edit for fix in chosen for edit in fix.edits}, key=lambda e: e.start, reverse=True)
    for edit in edits:
        text = text[: edit.start] + edit.content + text[edit.end :]
    return text


@dataclass(frozen=True)
class NoFix:
    """A finding without a fix, and why there is none, in one line."""

    reason: str


FixOutcome = Union[Fix, NoFix]
"""What a rule decides about fixing a finding: a fix, or why there is none."""


@dataclass(frozen=True)
class Position:
    """A 1-based line and 1-based column."""

    line: int
    column: int


@dataclass(frozen=True)
class Diagnostic:
    """One finding of one rule in one file."""

    path: str
    start: Position
    end: Position
    code: str
    name: str
    message: str
    fix: Optional[Fix] = field(default=None)
    fix_note: Optional[str] = None
    """Why the fix is unsafe, or why there is none: one line of help text."""
