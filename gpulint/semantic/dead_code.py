"""Code that never runs, as the code itself says: the body of an ``if`` whose test is a false
constant (``if False:``, ``if 0:``), or a name or attribute that the statement just before the
``if`` sets to one inside a function or class (``self.use_extra = False`` then
``if self.use_extra:``, a feature switched off in place). Nothing runs between that assignment and
the test, so the body is skipped every time.

A switch set at the top level of a module or notebook cell (``load_model = False`` above the branch
that resumes training) is a setting the user edits before a run, not code that never runs.
"""

from __future__ import annotations

import ast
from typing import Optional

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.survey import ast_dotted_name



def never_runs(model: SemanticModel, node: ast.AST) -> bool:
    """Whether ``node`` lies in the body of an ``if`` that the code shows is always skipped."""
    child, ancestor = node, model.parent(node)
    while ancestor is not None:
        if isinstance(ancestor, ast.If) and any(part is child for part in ancestor.body) and _always_false(model, ancestor):
            return True
        child, ancestor = ancestor, model.parent(ancestor)
    return False


def _always_false(model: SemanticModel, statement: ast.If) -> bool:
    if _false_constant(statement.test):
        return True
    tested = ast_dotted_name(statement.test)
    previous = _previous_statement(model, statement)
    return (
        tested is not None and not _at_top_level(model, statement) and isinstance(previous, ast.Assign) and len(previous.targets) == 1
        and ast_dotted_name(previous.targets[0]) == tested and _false_constant(previous.value)
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


def _false_constant(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value in (False, None, 0, "") and not isinstance(node.value, float)


def _previous_statement(model: SemanticModel, statement: ast.stmt) -> Optional[ast.stmt]:
    block = model.block_of(statement) or []
    index = next((number for number, child in enumerate(block) if child is statement), 0)
    return block[index - 1] if index > 0 else None
