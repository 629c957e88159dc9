"""Inserting statements into a block, or a block around statements, without disturbing their
comments, blank lines and indentation."""

from __future__ import annotations

from typing import Iterator, List, Optional, Sequence, Tuple

import libcst as cst
from libcst import MetadataDependent
from libcst.metadata import ParentNodeProvider

METADATA_DEPENDENCIES = (ParentNodeProvider,)

Replacement = Tuple[cst.CSTNode, cst.CSTNode]
"""(old node, new node) for ``Rule.replacement_edit``."""

NO_STATEMENT_BOUNDARY = "there is no statement boundary here where a `del` could go"
NOT_DELETABLE = "a name to delete may still be read, or be unbound, on some path after this point"
MODULE_LEVEL_DELETION = "module-level code: another module, or a later notebook cell, may still use the names it deletes"
"""Why a deleting fix (``del``) is withheld or unsafe, as one line of help."""


def _parent(owner: MetadataDependent, node: cst.CSTNode) -> cst.CSTNode:
    return owner.get_metadata(ParentNodeProvider, node)


def _small(code: str) -> cst.BaseSmallStatement:
    line = cst.parse_statement(code + "\n")
    assert isinstance(line, cst.SimpleStatementLine)
    return line.body[0]


def insert_before(owner: MetadataDependent, statement: cst.BaseSmallStatement, code: str) -> Optional[Replacement]:
    """Insert the small statement ``code`` just before ``statement``.

    On a line of its own the new statement gets its own line above, taking over the comments and
    blank lines that preceded the old one; within a ``;``-separated line it joins that line."""
    line = _parent(owner, statement)
    if not isinstance(line, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return None
    index = next(i for i, small in enumerate(line.body) if small is statement)
    if isinstance(line, cst.SimpleStatementLine) and index == 0:
        block = _parent(owner, line)
        if not isinstance(block, (cst.Module, cst.IndentedBlock)):
            return None
        new_line = cst.SimpleStatementLine(body=[_small(code)], leading_lines=line.leading_lines)
        body: List[cst.BaseStatement] = []
        for existing in block.body:
            if existing is line:
                body.extend([new_line, line.with_changes(leading_lines=())])
            else:
                body.append(existing)
        return block, block.with_changes(body=body)
    joined = _small(code).with_changes(semicolon=cst.Semicolon(whitespace_after=cst.SimpleWhitespace(" ")))
    return line, line.with_changes(body=[*line.body[:index], joined, *line.body[index:]])


def insert_after(owner: MetadataDependent, statement: cst.CSTNode, codes: Sequence[str]) -> Optional[Replacement]:
    """Insert the statements ``codes``, each on its own line, just after ``statement`` in its block."""
    block = _parent(owner, statement)
    if not isinstance(block, (cst.Module, cst.IndentedBlock)):
        return None
    new_lines = [cst.parse_statement(code + "\n") for code in codes]
    body = []
    for existing in block.body:
        body.append(existing)
        if existing is statement:
            body.extend(new_lines)
    return block, block.with_changes(body=body)


def wrapping_indent(owner: MetadataDependent, statement: cst.CSTNode, wrapped: Sequence[cst.CSTNode]) -> Optional[str]:
    """The indentation a new block around ``wrapped`` (which starts with ``statement``) adds: the
    step of the block that holds ``statement``, else of the first block inside ``wrapped``, where it
    is not the module's default (a file indented with tabs, whose default LibCST took from an
    earlier block indented with spaces); None, the module's default, otherwise."""
    holder = _parent(owner, statement)
    if isinstance(holder, cst.IndentedBlock) and holder.indent is not None:
        return holder.indent
    for node in wrapped:
        for block in _blocks(node):
            if block.indent is not None:
                return block.indent
    return None


def _blocks(node: cst.CSTNode) -> Iterator[cst.IndentedBlock]:
    """The indented blocks in ``node``, outermost first."""
    if isinstance(node, cst.IndentedBlock):
        yield node
    for child in node.children:
        yield from _blocks(child)
