"""Code that never runs, as the code itself says: the body of an ``if`` whose test is a false
constant (``if False:``, ``if 0:``) or an ``and`` with one (``if resume and False:``), or a name or
attribute that the statement just before the ``if`` sets to one inside a function or class
(``self.use_extra = False`` then ``if self.use_extra:``, a feature switched off in place). Nothing
runs between that assignment and the test, so the body is skipped every time. Also a statement
that follows a ``return``, ``raise``, ``continue`` or ``break`` in the same block of a function or
loop (a test switched off by an early ``return``), and one that follows a call ending the process
(``sys.exit(...)``, ``os._exit(...)``, the builtins ``exit()`` and ``quit()``) in the same block,
the top level of a script included (a conversion script's loop left below ``sys.exit(os.EX_OK)``)
where no ``def`` or ``class`` follows the exit there: with the program's definitions below it, the
exit is a stop left in while debugging the top of the script, and the program is read as it is
meant to run.

A switch set at the top level of a module or notebook cell (``load_model = False`` above the branch
that resumes training) is a setting the user edits before a run, not code that never runs; so is a
``raise`` at the top level, and in a notebook an exit at the top level too (a notebook's later
cells still run when the user runs them).
"""

from __future__ import annotations

import ast
from typing import List, Optional

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.survey import ast_dotted_name, is_falsy_constant

JUMPS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
"""Statements after which nothing more of their block runs."""
EXITS = frozenset({"sys.exit", "os._exit"})
"""Functions that end the process."""
EXIT_BUILTINS = frozenset({"exit", "quit"})
"""Builtins that end the process."""
NOTEBOOK_SUFFIX = ".ipynb"
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def never_runs(model: SemanticModel, node: ast.AST) -> bool:
    """Whether ``node`` lies in the body of an ``if`` that the code shows is always skipped, or
    after a jump in a block of a function or loop."""
    child, ancestor = node, model.parent(node)
    while ancestor is not None:
        if isinstance(ancestor, ast.If) and any(part is child for part in ancestor.body) and _always_false(model, ancestor):
            return True
        if isinstance(child, ast.stmt) and _after_a_jump(model, child, top_level=isinstance(ancestor, ast.Module)):
            return True
        child, ancestor = ancestor, model.parent(ancestor)
    return False


def _after_a_jump(model: SemanticModel, statement: ast.stmt, top_level: bool) -> bool:
    """Whether a ``return``, ``raise``, ``continue`` or ``break`` comes before ``statement`` in its
    block (not the module's top level), or a call that ends the process (not at a notebook's top level)."""
    notebook = model.path is not None and model.path.endswith(NOTEBOOK_SUFFIX)
    block = model.block_of(statement) or []
    for index, earlier in enumerate(block):
        if earlier is statement:
            return False
        if isinstance(earlier, JUMPS) and not top_level:
            return True
        if _ends_the_process(model, earlier) and not (top_level and (notebook or _defines_after(block, index))):
            return True
    return False


def _defines_after(block: List[ast.stmt], index: int) -> bool:
    """Whether a ``def`` or ``class`` follows the statement at ``index`` of ``block``: below an exit
    at a script's top level, the program itself (an ``exit()`` left in while debugging the top of it)."""
    return any(isinstance(later, DEFINITIONS) for later in block[index + 1:])


def _ends_the_process(model: SemanticModel, statement: ast.stmt) -> bool:
    """``sys.exit(0)``, ``os._exit(1)``, ``exit()`` or ``quit()`` as a statement of its own."""
    if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
        return False
    func = statement.value.func
    return bool(model.resolved_names(func) & EXITS) or model.is_builtin(func, EXIT_BUILTINS)


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
