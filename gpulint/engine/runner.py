"""Checking, fixing or diffing one file, turning every per-file failure into a reported error."""

from __future__ import annotations

import difflib
import enum
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, List, Mapping, Optional, Tuple

from gpulint.engine.cache import ResultCache
from gpulint.engine.consulted import recording_consulted
from gpulint.engine.diagnostics import Diagnostic
from gpulint.frontend.notebook import Notebook, changed_cells, parse_notebook, rewrite, show
from gpulint.engine.source import SourceError, SourceFile, quiet_compile, read_source, write_source
from gpulint.engine.time_budget import TimeBudgetExceeded, time_budget

if TYPE_CHECKING:
    import libcst as cst

    from gpulint.engine.reparse import Parse


class Mode(enum.Enum):
    CHECK = "check"
    FIX = "fix"
    DIFF = "diff"


@dataclass(frozen=True)
class FileError:
    """A file that could not be checked or fixed, with the position where there is one."""

    path: str
    message: str
    line: Optional[int] = None
    column: Optional[int] = None
    transient: bool = False
    """An error a rerun might not repeat (a time budget, an internal error): never cached."""
    cell: Optional[int] = None
    """For a notebook, the cell that ``line`` counts in."""

    def __str__(self) -> str:
        cell = "" if self.cell is None else f":cell {self.cell}"
        where = self.path if self.line is None else f"{self.path}{cell}:{self.line}:{self.column}"
        return f"{where}: {self.message}"


@dataclass
class FileResult:
    path: str
    diagnostics: List[Diagnostic] = field(default_factory=list)
    fixed: int = 0
    error: Optional[FileError] = None
    diff: str = ""
    text: Optional[str] = None
    """The final source text (fixed where fixing was asked for, else as read); None when unreadable.
    For a notebook, the program its code cells make."""
    notebook: Optional[Notebook] = None
    new_file_text: Optional[str] = None
    """What the file on disk should become (a notebook's rewritten JSON, or ``text``)."""
    fixed_codes: Tuple[str, ...] = ()
    """The rule code of each fix applied."""

    def locate(self, line: int) -> Tuple[Optional[int], int]:
        """(cell, line within it) of a line of ``text`` for a notebook; (None, line) otherwise."""
        if self.notebook is None:
            return None, line
        return self.notebook.locate(line)


def _syntax_error(path: str, text: str, error: cst.ParserSyntaxError) -> FileError:
    """Where and why ``text`` does not parse; Python's own parser words and places this best."""
    try:
        quiet_compile(text, path)
    except SyntaxError as python_error:
        if python_error.lineno is not None:
            return FileError(path, f"cannot parse: {python_error.msg}", python_error.lineno, python_error.offset or 1)
    except (ValueError, RecursionError, MemoryError):
        pass
    return FileError(path, f"cannot parse: {error.message}", error.raw_line, error.raw_column + 1)


DEFAULT_TIME_BUDGET = 60.0
"""Seconds one file may take before it is given up as a per-file error."""


@dataclass(frozen=True)
class Job:
    """How to process a file: which rules (by code), check, fix or diff, and within what time."""

    codes: Tuple[str, ...]
    mode: Mode = Mode.CHECK
    unsafe_fixes: bool = False
    options: Mapping[str, object] = field(default_factory=dict)
    budget: Optional[float] = DEFAULT_TIME_BUDGET
    prefilter: bool = True
    """Whether rules may skip what they cannot reach (see ``linter.lint_source``); never changes a finding."""


def process_text(path: str, text: str, job: Job, parse: Optional[Parse] = None) -> FileResult:
    """Lint ``text`` and, in FIX and DIFF modes, compute its fixed form, within the job's budget;
    ``parse`` replaces Python's parse of each text linted (see ``linter.lint_source``)."""
    import libcst as cst  # LibCST and the rules load here: a run answered from the cache needs neither

    from gpulint.engine.fixer import FixError, applicabilities, fix_text
    from gpulint.engine.linter import lint_source
    from gpulint.engine.reparse import parse as parse_whole
    from gpulint.rules import rules_for

    def lint(source: str) -> List[Diagnostic]:
        return lint_source(
            source, path, rules_for(job.codes), prefilter=job.prefilter, options=job.options, parse=parse or parse_whole,
        )

    try:
        with time_budget(job.budget):
            if job.mode is Mode.CHECK:
                return FileResult(path, lint(text), text=text)
            fixed = fix_text(text, lint, applicabilities(job.unsafe_fixes))
    except TimeBudgetExceeded:
        message = f"gave up after {job.budget:g} s (the per-file time budget, --file-time-budget); nothing written"
        return FileResult(path, error=FileError(path, message, transient=True), text=text)
    except cst.ParserSyntaxError as error:
        return FileResult(path, error=_syntax_error(path, text, error), text=text)
    except FixError as error:
        return FileResult(path, error.diagnostics, error=FileError(path, str(error)), text=text)
    except RecursionError:
        return FileResult(path, error=FileError(path, "too deeply nested to analyse"), text=text)
    except Exception as error:  # noqa: BLE001 - one file's internal error must not stop the run
        message = f"internal error: {type(error).__name__}: {str(error)[:300]}"
        return FileResult(path, error=FileError(path, message, transient=True), text=text)
    diff = _unified_diff(path, text, fixed.text) if job.mode is Mode.DIFF else ""
    return FileResult(path, fixed.remaining, fixed=fixed.applied, diff=diff, text=fixed.text, fixed_codes=fixed.applied_codes)


def process_notebook_text(path: str, text: str, job: Job) -> FileResult:
    """Lint (and fix) a notebook's code cells as one program; ``new_file_text`` is the notebook
    with only the changed cells rewritten. A cell that does not parse is the file's error: the
    other cells are still checked, and nothing is fixed."""
    try:
        notebook = parse_notebook(text)
    except SourceError as error:
        return FileResult(path, error=FileError(path, str(error)))
    result = process_text(path, notebook.code, _notebook_job(job, notebook))
    code = notebook.code if result.text is None else result.text
    result.notebook = notebook
    result.text, result.diagnostics = show(notebook, code, result.diagnostics)
    result.error = _cell_error(path, notebook, result.error)
    if result.error is not None:
        return result
    result.new_file_text = rewrite(notebook, code) if code != notebook.code else text
    if job.mode is Mode.DIFF:
        result.diff = _cell_diff(path, notebook, code)
    return result


def _notebook_job(job: Job, notebook: Notebook) -> Job:
    """The job for a notebook's program: only a check when a cell does not parse, a fix for a diff."""
    if notebook.syntax_error is not None:
        return replace(job, mode=Mode.CHECK)
    return replace(job, mode=Mode.FIX) if job.mode is Mode.DIFF else job


def _cell_error(path: str, notebook: Notebook, error: Optional[FileError]) -> Optional[FileError]:
    """A notebook's error placed in its cell: the program's own, else that of a cell that does not parse."""
    if error is not None:
        if error.line is None:
            return error
        cell, line = notebook.locate(error.line)
        return replace(error, line=line, cell=cell)
    broken = notebook.syntax_error
    if broken is None:
        return None
    return FileError(path, f"cannot parse: {broken.message}", broken.line, broken.column, cell=broken.cell)


def _cell_diff(path: str, notebook: Notebook, code: str) -> str:
    """A unified diff of each cell that ``code`` changes, in the cell's own lines."""
    return "".join(
        _unified_diff(f"{path}:cell {cell.index}", _line_ended(cell.source), _line_ended(new_source))
        for cell, new_source in changed_cells(notebook, code)
    )


def _line_ended(source: str) -> str:
    return source if source.endswith("\n") or not source else source + "\n"


def process_source(path: str, text: str, job: Job) -> FileResult:
    """A notebook's or a Python file's text, by the name's extension."""
    if is_notebook(path):
        return process_notebook_text(path, text, job)
    result = process_text(path, text, job)
    result.new_file_text = result.text
    return result


def _unified_diff(path: str, old: str, new: str) -> str:
    if old == new:
        return ""
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=path, tofile=path))


def is_notebook(path: str) -> bool:
    return path.endswith(".ipynb")


def _cached(display: str, source: SourceFile, job: Job, cache: Optional[ResultCache]) -> Optional[FileResult]:
    if cache is None or job.mode is not Mode.CHECK:
        return None
    cached = cache.load(cache.key(display, source.text, job))
    if cached is None:
        return None
    diagnostics, error = cached
    result = FileResult(display, diagnostics, text=source.text)
    if error is not None:
        message, line, column, cell = error
        result.error = FileError(display, message, line, column, cell=cell)
    if is_notebook(display):
        try:
            result.notebook = parse_notebook(source.text)
            result.text = result.notebook.program
        except SourceError:
            pass
    return result


def cached_result(path: Path, job: Job, cache: Optional[ResultCache]) -> Optional[FileResult]:
    """The cached check of a file, without analysing it; None if it must be processed."""
    if cache is None or job.mode is not Mode.CHECK or path.is_dir():
        return None
    try:
        return _cached(str(path), read_source(path), job, cache)
    except SourceError:
        return None


def process_file(path: Path, job: Job, cache: Optional[ResultCache] = None) -> FileResult:
    """Process a file on disk; in FIX mode, write it back atomically if it changed. Checks are
    answered from ``cache`` where it has the file's content under the same job."""
    display = str(path)
    if path.is_dir():
        return FileResult(display, error=FileError(display, "is a directory, not a Python file"))
    try:
        source: SourceFile = read_source(path)
    except SourceError as error:
        return FileResult(display, error=FileError(display, str(error)))
    cached = _cached(display, source, job, cache)
    if cached is not None:
        return cached
    with recording_consulted() as consulted:
        result = process_source(display, source.text, job)
    if cache is not None and job.mode is Mode.CHECK and (result.error is None or not result.error.transient):
        failure = result.error
        error_fields = None if failure is None else (failure.message, failure.line, failure.column, failure.cell)
        cache.store(cache.key(display, source.text, job), display, result.diagnostics, error_fields, consulted)
    if job.mode is Mode.FIX and result.error is None and result.new_file_text not in (None, source.text):
        try:
            write_source(source, result.new_file_text)
        except SourceError as error:
            return FileResult(display, result.diagnostics, error=FileError(display, str(error)))
    return result
