"""Jupyter notebooks: their code cells as one program, and fixed cells written back in place.

The program has one marker comment line before each cell, so that positions map back to cells
and a fixed program splits back into cells. IPython magics and shell escapes are masked with a
``pass`` (or ``name = None`` for ``name = !cmd``) that carries a marker, and restored afterwards.
A fixed notebook is rewritten by replacing the JSON text of the changed cells' sources only, in
the layout the file already uses, so outputs, metadata and formatting stay byte-identical.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from gpulint.source import SourceError

_CELL_MARKER = "# gpulint-cell {index}"
_CELL_LINE = re.compile(r"^# gpulint-cell (\d+)\n", re.MULTILINE)
_MASK_LINE = re.compile(r"^.*# gpulint-masked (\d+)$", re.MULTILINE)
_MAGIC = re.compile(r"^\s*([%!?]|.*\?$)")
_ASSIGNED_MAGIC = re.compile(r"^(\s*)([\w.]+(?:\s*,\s*[\w.]+)*)\s*=\s*[%!]")


@dataclass
class CodeCell:
    index: int
    """1-based position of the cell among all the notebook's cells."""
    source: str
    span: Tuple[int, int]
    """Where the JSON value of the cell's ``source`` lies in the file text."""


@dataclass
class Notebook:
    text: str
    cells: List[CodeCell]
    program: str
    first_lines: List[Tuple[int, int]]
    """(first program line of the cell's code, cell index), in program order."""
    masked: Dict[int, str]

    def locate(self, line: int) -> Tuple[int, int]:
        """(cell index, line within the cell) of a program line."""
        cell, first = self.first_lines[0][1], self.first_lines[0][0]
        for start, index in self.first_lines:
            if start <= line:
                cell, first = index, start
        return cell, line - first + 1


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

    def _container(self, closing: str, keyed: bool) -> list:
        self.position += 1
        items = []
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


def _mask(source: str, masked: Dict[int, str]) -> str:
    lines = source.split("\n")
    if lines and lines[0].lstrip().startswith("%%"):
        selected = range(len(lines))
    else:
        selected = [i for i, line in enumerate(lines) if _MAGIC.match(line) or _ASSIGNED_MAGIC.match(line)]
    for i in selected:
        line = lines[i]
        if not line.strip():
            continue
        number = len(masked)
        masked[number] = line
        assigned = _ASSIGNED_MAGIC.match(line)
        indent = re.match(r"\s*", line).group(0)
        replacement = f"{assigned.group(1)}{assigned.group(2)} = None" if assigned else f"{indent}pass"
        lines[i] = f"{replacement}  # gpulint-masked {number}"
    return "\n".join(lines)


def parse_notebook(text: str) -> Notebook:
    """Read a notebook's code cells; raises ``SourceError`` for anything that is not one."""
    try:
        document = json.loads(text)
    except ValueError as error:
        raise SourceError(f"not a valid notebook: invalid JSON ({error})") from None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise SourceError("not a valid notebook: no list of cells")
    scanner = _Scanner(text)
    top, _, _ = scanner.value()
    cells_value = next(value for key, value, _, _ in top if key == "cells")
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
    masked: Dict[int, str] = {}
    parts, first_lines, line = [], [], 1
    for cell in cells:
        code = _mask(cell.source, masked)
        if not code.endswith("\n"):
            code += "\n"
        parts.append(_CELL_MARKER.format(index=cell.index) + "\n" + code)
        first_lines.append((line + 1, cell.index))
        line += 1 + code.count("\n")
    return Notebook(text, cells, "".join(parts), first_lines or [(1, 1)], masked)


def split_program(notebook: Notebook, program: str) -> Dict[int, str]:
    """Each cell's source in ``program`` (the notebook's program after fixes), magics restored."""
    program = _MASK_LINE.sub(lambda match: notebook.masked[int(match.group(1))], program)
    pieces = _CELL_LINE.split(program)
    leading, rest = pieces[0], pieces[1:]
    sources = {int(index): code for index, code in zip(rest[::2], rest[1::2])}
    if leading and sources:
        first = min(sources)
        sources[first] = leading + sources[first]
    return sources


def _encode_source(original_json: str, source: str, was_list: bool) -> str:
    """``source`` as JSON, in the layout of the value it replaces."""
    ascii_only = "\\u" in original_json
    if not was_list:
        return json.dumps(source, ensure_ascii=ascii_only)
    lines = source.splitlines(keepends=True)
    items = [json.dumps(line, ensure_ascii=ascii_only) for line in lines]
    scanner = _Scanner(original_json)
    elements, _, _ = scanner.value()
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


def rewrite(notebook: Notebook, program: str) -> str:
    """The notebook text with the cells that ``program`` changed rewritten, and nothing else."""
    sources = split_program(notebook, program)
    text = notebook.text
    for cell in sorted(notebook.cells, key=lambda c: c.span[0], reverse=True):
        new_source = sources.get(cell.index)
        if new_source is None:
            continue
        if not cell.source.endswith("\n") and new_source.endswith("\n"):
            new_source = new_source[:-1]
        if new_source == cell.source:
            continue
        start, end = cell.span
        original = text[start:end]
        encoded = _encode_source(original, new_source, original.lstrip().startswith("["))
        text = text[:start] + encoded + text[end:]
    return text
