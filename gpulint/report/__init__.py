"""Output formats: each renders a run's results onto a stream."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, TextIO

from gpulint.engine.diagnostics import Applicability, Diagnostic
from gpulint.engine.runner import FileError, FileResult, Mode


@dataclass(frozen=True)
class RunReport:
    """Everything a reporter may show about one run."""

    results: List[FileResult]
    mode: Mode
    unsafe_fixes: bool
    show_fixes: bool = False
    """``--show-fixes``: a preview of each fix under its finding, and what ``--fix`` fixed."""

    @property
    def diagnostics(self) -> List[Diagnostic]:
        return [d for result in self.results for d in result.diagnostics]

    @property
    def errors(self) -> List[FileError]:
        """The files that could not be checked or fixed, each with why."""
        return [result.error for result in self.results if result.error is not None]

    @property
    def failed_files(self) -> int:
        return len(self.errors)

    @property
    def fixed(self) -> int:
        return sum(result.fixed for result in self.results)

    def applies_with_fix(self, diagnostic: Diagnostic) -> bool:
        """Whether ``--fix`` (with this run's ``--unsafe-fixes`` setting) would fix it."""
        if diagnostic.fix is None:
            return False
        if diagnostic.fix.applicability is Applicability.SAFE:
            return True
        return self.unsafe_fixes and diagnostic.fix.applicability is Applicability.UNSAFE


Reporter = Callable[[RunReport, TextIO, bool], None]


def reporters() -> Dict[str, Reporter]:
    from gpulint.report import concise, github, json_format, sarif, text

    return {
        "text": text.render,
        "concise": concise.render,
        "json": json_format.render,
        "sarif": sarif.render,
        "github": github.render,
    }
