"""Adding ``import gc`` (or any standard-library module) where an import sorter would put it.

isort and ruff's ``I001`` group a file's leading imports into sections — ``__future__``, the standard
library, everything else — and, within a section, put ``import x`` lines before ``from x import y``
lines, each sorted by module name. A new standard-library import goes into that section at its
sorted place; without one, it opens the section just before the first import that follows it,
separated by a blank line.
"""

from __future__ import annotations

import sys
from typing import List, Optional

import libcst as cst

STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) | {"gc", "os", "sys"}


def _top_name(line: cst.BaseStatement) -> Optional[str]:
    """The top-level package a one-import line imports from; None for other lines."""
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    statement = line.body[0]
    if isinstance(statement, cst.Import):
        node: cst.BaseExpression = statement.names[0].name
    elif isinstance(statement, cst.ImportFrom):
        if statement.relative or statement.module is None:
            return "."
        node = statement.module
    else:
        return None
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else None


def _imports(line: cst.SimpleStatementLine, name: str) -> bool:
    return any(
        isinstance(statement, cst.Import)
        and any(alias.asname is None and isinstance(alias.name, cst.Name) and alias.name.value == name for alias in statement.names)
        for statement in line.body
    )


def _is_docstring(statement: cst.CSTNode) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def add_stdlib_import(module: cst.Module, name: str) -> Optional[cst.Module]:
    """``module`` with ``import name`` added among its leading imports; the module itself if it
    already has that import; None if it has no leading imports to place it among."""
    body: List[cst.BaseStatement] = list(module.body)
    start = 1 if body and _is_docstring(body[0]) else 0
    header: List[int] = []
    for index in range(start, len(body)):
        line = body[index]
        if not (isinstance(line, cst.SimpleStatementLine) and _top_name(line) is not None):
            break
        if _imports(line, name):
            return module
        header.append(index)
    after_future = [index for index in header if _top_name(body[index]) != "__future__"]
    if not after_future:
        return None
    stdlib = [index for index in after_future if _top_name(body[index]) in STDLIB]
    plain = [index for index in stdlib if _is_plain_import(body[index])]
    later = [index for index in plain if str(_top_name(body[index])).lower() > name.lower()]
    new_line = cst.parse_statement(f"import {name}\n")
    assert isinstance(new_line, cst.SimpleStatementLine)
    if later or (stdlib and not plain):
        _insert_before(body, later[0] if later else stdlib[0], new_line, separate=False)
    elif plain:
        body.insert(plain[-1] + 1, new_line)
    else:
        _insert_before(body, after_future[0], new_line, separate=True)
    return module.with_changes(body=body)


def _is_plain_import(line: cst.BaseStatement) -> bool:
    return isinstance(line, cst.SimpleStatementLine) and isinstance(line.body[0], cst.Import)


def _insert_before(body: List[cst.BaseStatement], index: int, new_line: cst.SimpleStatementLine, separate: bool) -> None:
    """Put ``new_line`` before ``body[index]``: the blank lines above that line go above the new
    one, its comments stay with it; ``separate`` adds a blank line between them (a new section)."""
    occupant = body[index]
    assert isinstance(occupant, cst.SimpleStatementLine)
    leading = list(occupant.leading_lines)
    blanks = 0
    while blanks < len(leading) and leading[blanks].comment is None:
        blanks += 1
    gap = [cst.EmptyLine()] if separate else []
    body[index:index + 1] = [
        new_line.with_changes(leading_lines=leading[:blanks]),
        occupant.with_changes(leading_lines=[*gap, *leading[blanks:]]),
    ]
