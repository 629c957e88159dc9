"""Code that never runs, as the code itself says: the body of an ``if`` whose test is a false
constant (``if False:``, ``if 0:``) or an ``and`` with one (``if resume and False:``), or a name or
attribute that the statement just before the ``if`` sets to one inside a function or class
(``self.use_extra = False`` then ``if self.use_extra:``, a feature switched off in place). Nothing
runs between that assignment and the test, so the body is skipped every time. Also a statement
that follows a ``return``, ``raise``, ``continue`` or ``break`` in the same block of a function or
loop (a test switched off by an early ``return``).

A switch set at the top level of a module or notebook cell (``load_model = False`` above the branch
that resumes training) is a setting the user edits before a run, not code that never runs; so is a
``raise`` at the top level (a notebook's later cells still run when the user runs them).
"""

from __future__ import annotations

import ast
from typing import Optional

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.survey import ast_dotted_name, is_falsy_constant

JUMPS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
"""Statements after which nothing more of their block runs."""


def never_runs(model: SemanticModel, node: ast.AST) -> bool:
    """Whether ``node`` lies in the body of an ``if`` that the code shows is always skipped, or
    after a jump in a block of a function or loop."""
    child, ancestor = node, model.parent(node)
    while ancestor is not None:
        if isinstance(ancestor, ast.If) and any(part is child for part in ancestor.body) and _always_false(model, ancestor):
            return True
        if isinstance(child, ast.stmt) and not isinstance(ancestor, ast.Module) and _after_a_jump(model, child):
            return True
        child, ancestor = ancestor, model.parent(ancestor)
    return False


def _after_a_jump(model: SemanticModel, statement: ast.stmt) -> bool:
    """Whether a ``return``, ``raise``, ``continue`` or ``break`` comes before ``statement`` in its block."""
    for earlier in model.block_of(statement) or []:
        if earlier is statement:
            return False
        if isinstance(earlier, JUMPS):
            return True
    return False


def _always_false(model: SemanticModel, statement: ast.If) -> bool:
    test = statement.test
    if is_falsy_constant(test) or (isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and any(map(is_falsy_constant, test.values))):
        return True
    tested = ast_dotted_name(statement.test)
    previous = _previous_statement(model, statement)
    return (
        tested is not None and not _at_top_level(model, statement) and isinstance(previous, ast.Assign) and len(previous.targets) == 1
        and ast_dotted_name(previous.targets[0]) == tested and is_falsy_constant(previous.value)
    )


def _at_top_level(model: SemanticModel, statement: ast.If) -> bool:
    """Whether ``statement`` is module-level code (of a script, or of a notebook's cell): no
    function or class holds it."""
    ancestor = model.parent(statement)
    while ancestor is not None:
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return False
        ancestor = model.parent(ancestor)
    return True


def _previous_statement(model: SemanticModel, statement: ast.stmt) -> Optional[ast.stmt]:
    block = model.block_of(statement) or []
    index = next((number for number, child in enumerate(block) if child is statement), 0)
    return block[index - 1] if index > 0 else None
