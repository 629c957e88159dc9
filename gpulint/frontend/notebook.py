"""Jupyter notebooks: their code cells as one program, and fixed cells written back in place.

The program has one marker comment line before each cell, so that positions map back to cells
and a fixed program splits back into cells. IPython magics and shell escapes are masked with a
``pass`` (or ``name = None`` for ``name = !cmd``) that carries a marker, and restored afterwards.
A line run under ``%time`` or ``%timeit`` keeps its statement, checked and fixed like any other:
only the magic prefix is dropped (the line carries a marker for it too). The cell magics that run
Python (``%%time`` and the like) mask their first line only; other cell magics, and cells that do
not parse, are masked whole. A fixed notebook is rewritten by replacing the JSON text of the
changed cells' sources only, in the layout the file already uses, so outputs, metadata and
formatting stay byte-identical.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
from dataclasses import dataclass, field, replace
from typing import Dict, List, Optional, Sequence, Tuple, cast

from gpulint.engine.diagnostics import Diagnostic, Edit, Position
from gpulint.engine.line_index import LineIndex
from gpulint.engine.source import SourceError, quiet_compile

_CELL_MARKER = "# gpulint-cell {index}"
_CELL_LINE = re.compile(r"^# gpulint-cell (\d+)\n", re.MULTILINE)
_MASK_SUFFIX = "  # gpulint-masked {number}"
_MASK_LINE = re.compile(r"^(.*)  # gpulint-masked (\d+)$", re.MULTILINE)
_PYTHON_CELL_MAGIC = re.compile(r"\s*%%(?:time|timeit|capture|prun|debug)(?:\s.*)?")
_TIMED = re.compile(r"([ \t]*)(%time\s+|%timeit\s+(?:-[nrp]\s*\d+\s+|-[tcqo]+\s+)*)(\S[^\r]*)")
"""``%time STMT`` or ``%timeit [options] STMT``: (indentation, magic prefix, statement)."""
_ESCAPED = re.compile(r"\s*[%!?]")
_HELP = re.compile(r"\s*(?!\d)[\w*]+(?:\.[\w*]+|\[[^\[\]]+\])*\?\??\s*")
"""``obj?``, ``obj.attr??``, ``np.*load*?``: IPython's help on a name, as its whole line."""
_ASSIGNED_MAGIC = re.compile(r"^(\s*)([\w.]+(?:\s*,\s*[\w.]+)*)\s*=\s*[%!]")

Shifts = Dict[int, Tuple[int, int]]
"""Line -> (indentation width, prefix length) of each line whose magic prefix is dropped."""


@dataclass
class CodeCell:
    index: int
    """1-based position of the cell among all the notebook's cells."""
    source: str
    span: Tuple[int, int]
    """Where the JSON value of the cell's ``source`` lies in the file text."""


@dataclass(frozen=True)
class CellSyntaxError:
    """Why and where (1-based line and column within the cell) a code cell does not parse."""

    cell: int
    line: int
    column: int
    message: str


@dataclass
class Masks:
    """What the program hides from Python, by marker number (counted from ``first``): masked
    lines (the original line) and the magic prefixes dropped from lines kept as Python."""

    first: int = 0
    lines: Dict[int, str] = field(default_factory=dict)
    prefixes: Dict[int, str] = field(default_factory=dict)

    @property
    def next(self) -> int:
        return self.first + len(self.lines) + len(self.prefixes)

    def line(self, replacement: str, original: str) -> str:
        """``replacement`` marked as standing for the line ``original``."""
        number = self.next
        self.lines[number] = original
        return replacement + _MASK_SUFFIX.format(number=number)

    def prefix(self, indentation: str, prefix: str, statement: str) -> str:
        """The line ``indentation + prefix + statement`` without ``prefix``, marked."""
        number = self.next
        self.prefixes[number] = prefix
        return indentation + statement + _MASK_SUFFIX.format(number=number)

    def add(self, other: Masks) -> None:
        self.lines.update(other.lines)
        self.prefixes.update(other.prefixes)

    def restore(self, program: str, lines: bool = True) -> str:
        """``program`` with the dropped prefixes back, and the masked lines unless ``lines`` is false."""

        def restored(match: re.Match) -> str:
            code, number = match.group(1), int(match.group(2))
            if number in self.prefixes:
                indentation = _indentation(code)
                return indentation + self.prefixes[number] + code[len(indentation):]
            return self.lines[number] if lines else match.group(0)

        return _MASK_LINE.sub(restored, program)

    def shifts(self, program: str) -> Shifts:
        """Where ``program`` has lines whose magic prefix is dropped."""
        found = {}
        for number, line in enumerate(program.split("\n"), start=1):
            match = _MASK_LINE.fullmatch(line)
            if match and int(match.group(2)) in self.prefixes:
                found[number] = (len(_indentation(match.group(1))), len(self.prefixes[int(match.group(2))]))
        return found


def _shifted(shifts: Shifts, line: int, column: int) -> int:
    """A 1-based column of a line without its magic prefix, in the line with it."""
    indentation, prefix = shifts.get(line, (0, 0))
    return column + prefix if column > indentation else column


@dataclass
class Notebook:
    text: str
    cells: List[CodeCell]
    code: str
    """The code cells as one Python program, magics masked: what is checked and fixed."""
    program: str
    """``code`` as reports show it: lines run under ``%time`` or ``%timeit`` have their prefix back."""
    first_lines: List[Tuple[int, int]]
    """(first program line of the cell's code, cell index), in program order."""
    masks: Masks
    syntax_error: Optional[CellSyntaxError]
    """The first code cell that does not parse (masked whole in ``code``), if any."""

    def locate(self, line: int) -> Tuple[int, int]:
        """(cell index, line within the cell) of a program line."""
        cell, first = self.first_lines[0][1], self.first_lines[0][0]
        for start, index in self.first_lines:
            if start <= line:
                cell, first = index, start
        return cell, line - first + 1


_Entry = Tuple[Optional[str], object, int, int]
"""(key or None, value, start, end) of a value nested in a JSON object or array."""


class _Scanner:
    """Finds where values lie in JSON text (already known to be valid JSON)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.decoder = json.JSONDecoder()
        self.position = 0

    def _skip(self) -> None:
        while self.position < len(self.text) and self.text[self.position] in " \t\r\n":
            self.position += 1

    def value(self) -> Tuple[object, int, int]:
        """(parsed value, start, end) of the value at the current position; nested values of
        objects and arrays are returned as lists of (key or None, value, start, end)."""
        self._skip()
        start = self.position
        char = self.text[start]
        if char == "{":
            return self._container("}", keyed=True), start, self.position
        if char == "[":
            return self._container("]", keyed=False), start, self.position
        parsed, self.position = self.decoder.raw_decode(self.text, start)
        return parsed, start, self.position

    def _container(self, closing: str, keyed: bool) -> List[_Entry]:
        self.position += 1
        items: List[_Entry] = []
        self._skip()
        if self.text[self.position] == closing:
            self.position += 1
            return items
        while True:
            key = None
            if keyed:
                self._skip()
                key, self.position = self.decoder.raw_decode(self.text, self.position)
                self._skip()
                self.position += 1
            value, start, end = self.value()
            items.append((key, value, start, end))
            self._skip()
            char = self.text[self.position]
            self.position += 1
            if char == closing:
                return items


def _source_text(value: object) -> Optional[str]:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(line, str) for line in value):
        return "".join(value)
    return None


def _indentation(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _compiles(code: str) -> bool:
    try:
        quiet_compile(code, "<cell>")
    except (SyntaxError, ValueError):
        return False
    return True


def _replacement(line: str, continued: Optional[str], magic_line: bool) -> Optional[str]:
    """The Python that stands for a line masked whole (one that continues an escape indented by
    ``continued``, a cell magic's line, a magic, a shell escape or help); None for a Python line."""
    if continued is not None:
        return continued + "pass"
    if magic_line:
        return "pass"
    assigned = _ASSIGNED_MAGIC.match(line)
    if assigned:
        return f"{assigned.group(1)}{assigned.group(2)} = None"
    if _ESCAPED.match(line) or _HELP.fullmatch(line):
        return f"{_indentation(line)}pass"
    return None


def _mask_whole(lines: List[str], masks: Masks) -> str:
    return "\n".join(masks.line("pass", line) if line.strip() else line for line in lines)


def _mask(source: str, masks: Masks, statement_aware: bool = False) -> str:
    """A cell's source with its IPython syntax masked; an escape continued with a trailing
    backslash masks its continuation lines too. ``statement_aware``: a line that looks like an
    escape but continues a statement the Python before it leaves open (``% (a, b)`` after
    ``print('...'``) is kept as Python, as IPython keeps it (it reads escapes only where a
    statement starts); this tokenizes the cell again for each such line, so it is asked for only
    where the plain masking does not parse."""
    lines = source.split("\n")
    cell_magic = lines[0].lstrip().startswith("%%")
    if cell_magic and not _PYTHON_CELL_MAGIC.fullmatch(lines[0]):
        return _mask_whole(lines, masks)
    masked: List[str] = []
    continued: Optional[str] = None  # the indentation of the escape that the line continues
    for number, line in enumerate(lines):
        if statement_aware and continued is None and _ESCAPED.match(line) and _statement_open(masked):
            masked.append(line)
            continue
        timed = _TIMED.fullmatch(line) if continued is None else None
        if timed and _compiles(timed.group(3)):
            masked.append(masks.prefix(*timed.groups()))
            continue
        replacement = _replacement(line, continued, number == 0 and cell_magic)
        if replacement is None or not line.strip():
            masked.append(line)
            continued = None
            continue
        masked.append(masks.line(replacement, line))
        escape_indentation = _indentation(line) if continued is None else continued
        continued = escape_indentation if line.rstrip("\r").endswith("\\") else None
    return "\n".join(masked)


def _statement_open(lines: List[str]) -> bool:
    """Whether ``lines`` (a cell's Python so far) leave a bracket, a string or a backslash
    continuation open, so that the next line continues their statement: IPython reads a magic or
    an escape only where a statement starts."""
    if not lines:
        return False
    try:
        for _ in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline):
            pass
    except tokenize.TokenError:
        return True
    except SyntaxError:
        return False
    return False


def _masked_cell(cell: CodeCell, masks: Masks) -> Tuple[str, Optional[CellSyntaxError]]:
    """The cell's code masked (see :func:`_mask`), or, when that does not parse, the cell masked
    whole and why."""
    attempt = Masks(masks.next)
    code = _mask(cell.source, attempt)
    error = None
    try:
        quiet_compile(code, f"cell {cell.index}")
    except SyntaxError as syntax_error:
        aware = Masks(masks.next)
        aware_code = _mask(cell.source, aware, statement_aware=True)
        if _compiles(aware_code):
            attempt, code = aware, aware_code
        else:
            line = syntax_error.lineno or 1
            column = _shifted(attempt.shifts(code), line, syntax_error.offset or 1)
            error = CellSyntaxError(cell.index, line, column, syntax_error.msg)
            attempt = Masks(masks.next)
            code = _mask_whole(cell.source.split("\n"), attempt)
    except (ValueError, RecursionError, MemoryError):
        pass  # not a syntax error: checking the program reports it
    masks.add(attempt)
    return code, error


def parse_notebook(text: str) -> Notebook:
    """Read a notebook's code cells; raises ``SourceError`` for anything that is not one."""
    try:
        document = json.loads(text)
    except ValueError as error:
        raise SourceError(f"not a valid notebook: invalid JSON ({error})") from None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise SourceError("not a valid notebook: no list of cells")
    scanner = _Scanner(text)
    top = cast(List[_Entry], scanner.value()[0])  # the document is an object (checked above)
    cells_value = cast(List[_Entry], next(value for key, value, _, _ in top if key == "cells"))
    cells = []
    for index, (_, cell, _, _) in enumerate(cells_value, start=1):
        if not isinstance(cell, list):
            raise SourceError(f"not a valid notebook: cell {index} is not an object")
        fields = {key: (value, start, end) for key, value, start, end in cell}
        if "cell_type" not in fields or "source" not in fields:
            raise SourceError(f"not a valid notebook: cell {index} has no cell_type or source")
        if fields["cell_type"][0] != "code":
            continue
        _, start, end = fields["source"]
        source = _source_text(json.loads(text[start:end]))
        if source is None:
            raise SourceError(f"not a valid notebook: the source of cell {index} is not text")
        cells.append(CodeCell(index, source, (start, end)))
    return _program(text, cells)


def _program(text: str, cells: List[CodeCell]) -> Notebook:
    masks = Masks()
    parts, first_lines, line = [], [], 1
    syntax_error = None
    for cell in cells:
        code, error = _masked_cell(cell, masks)
        syntax_error = syntax_error or error
        if not code.endswith("\n"):
            code += "\n"
        parts.append(_CELL_MARKER.format(index=cell.index) + "\n" + code)
        first_lines.append((line + 1, cell.index))
        line += 1 + code.count("\n")
    code = "".join(parts)
    program = masks.restore(code, lines=False)
    return Notebook(text, cells, code, program, first_lines or [(1, 1)], masks, syntax_error)


def show(notebook: Notebook, code: str, diagnostics: Sequence[Diagnostic]) -> Tuple[str, List[Diagnostic]]:
    """``code`` (the notebook's ``code``, fixed or not) as reports show it, and ``diagnostics``
    of it with their positions and edits moved into that text."""
    shifts = notebook.masks.shifts(code)
    shown = notebook.masks.restore(code, lines=False)
    if not shifts:
        return shown, list(diagnostics)
    old, new = LineIndex(code), LineIndex(shown)

    def position(where: Position) -> Position:
        return Position(where.line, _shifted(shifts, where.line, where.column))

    def offset(at: int) -> int:
        line, column = old.position(at)
        return new.starts[line - 1] + _shifted(shifts, line, column) - 1

    def moved(diagnostic: Diagnostic) -> Diagnostic:
        fix = diagnostic.fix
        if fix is not None:
            fix = replace(fix, edits=tuple(Edit(offset(e.start), offset(e.end), e.content) for e in fix.edits))
        return replace(diagnostic, start=position(diagnostic.start), end=position(diagnostic.end), fix=fix)

    return shown, [moved(diagnostic) for diagnostic in diagnostics]


def split_program(notebook: Notebook, code: str) -> Dict[int, str]:
    """Each cell's source in ``code`` (the notebook's ``code`` after fixes), magics restored."""
    pieces = _CELL_LINE.split(notebook.masks.restore(code))
    leading, rest = pieces[0], pieces[1:]
    sources = {int(index): source for index, source in zip(rest[::2], rest[1::2])}
    if leading and sources:
        first = min(sources)
        sources[first] = leading + sources[first]
    return sources


def changed_cells(notebook: Notebook, code: str) -> List[Tuple[CodeCell, str]]:
    """The cells whose source ``code`` (the notebook's ``code`` after fixes) changes, with the new source."""
    sources = split_program(notebook, code)
    changed = []
    for cell in notebook.cells:
        new_source = sources.get(cell.index)
        if new_source is None:
            continue
        if not cell.source.endswith("\n") and new_source.endswith("\n"):
            new_source = new_source[:-1]
        if new_source != cell.source:
            changed.append((cell, new_source))
    return changed


def _encode_source(original_json: str, source: str, was_list: bool) -> str:
    """``source`` as JSON, in the layout of the value it replaces."""
    ascii_only = "\\u" in original_json
    if not was_list:
        return json.dumps(source, ensure_ascii=ascii_only)
    lines = source.splitlines(keepends=True)
    items = [json.dumps(line, ensure_ascii=ascii_only) for line in lines]
    scanner = _Scanner(original_json)
    elements = cast(List[_Entry], scanner.value()[0])  # ``was_list``: the value is an array
    if len(elements) >= 1:
        first_start, last_end = elements[0][2], elements[-1][3]
        opening = original_json[1:first_start]
        closing = original_json[last_end:-1]
        separator = original_json[elements[0][3]:elements[1][2]] if len(elements) >= 2 else "," + opening
    else:
        opening, closing, separator = "\n ", "\n", ",\n "
    if not items:
        return "[]"
    return "[" + opening + separator.join(items) + closing + "]"


def rewrite(notebook: Notebook, code: str) -> str:
    """The notebook text with the cells that ``code`` changed rewritten, and nothing else."""
    return rewrite_cells(notebook, changed_cells(notebook, code))


def rewrite_cells(notebook: Notebook, changed: Sequence[Tuple[CodeCell, str]]) -> str:
    """The notebook text with each of these cells given its new source, and nothing else changed."""
    text = notebook.text
    for cell, new_source in sorted(changed, key=lambda item: item[0].span[0], reverse=True):
        start, end = cell.span
        original = text[start:end]
        encoded = _encode_source(original, new_source, original.lstrip().startswith("["))
        text = text[:start] + encoded + text[end:]
    return text
