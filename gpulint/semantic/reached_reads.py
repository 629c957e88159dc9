"""The reads of a name that the value one assignment binds may reach, as the statements run.

A GAN's training loop binds ``fake = netG(noise)`` at the top of each iteration and reads it for the
discriminator's and the generator's losses; every hundred steps it binds ``fake = netG(fixed_noise)``
again and only saves ``fake.detach()``. The sampling assignment's value reaches that one read: the
next iteration binds ``fake`` afresh before it reads it. A reader follows the statements; so does
this module, over Python's own tree, from the assignment on: the rest of its block, then the rest of
each block around it (what follows an ``if`` or a ``with``; a loop's body again from its start, and
what follows the loop), up to a statement of one of those blocks that binds the name again with a
plain assignment (whose value is read first), unless a ``break`` or ``continue`` before it may jump
past it, or it is in a ``try`` body (an exception may leave before it). A compound statement on
the way is entered the same way (an ``if``'s branches, a loop's body once, a ``with`` block), but
never ends the walk (a branch or a loop's body may not run); a ``try`` statement, a ``try``'s
handlers, ``else`` and ``finally``, and a loop's test are read whole. The answer errs towards more reads, never fewer: None where the name is read, bound or
declared in any other scope (a closure may read it at any time), and the function's or module's end
ends the walk.
"""

from __future__ import annotations

import ast
from typing import List, Optional, Sequence, Set

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.scopes import Binding
from gpulint.semantic.survey import SCOPES

LOOPS = (ast.For, ast.AsyncFor, ast.While)


def reached_reads(model: SemanticModel, assignment: ast.Assign, binding: Binding) -> Optional[List[ast.Name]]:
    """The reads of ``binding`` that the value ``assignment`` binds to it may reach (see the module
    docstring); None where another scope reads, binds or declares the name."""
    uses = model.uses(binding)
    if any(model.scope_at(use) is not binding.scope for use in uses) or binding.name in (
        binding.scope.globals | binding.scope.nonlocals
    ):
        return None
    walk = _Walk(binding.name)
    node: ast.AST = assignment
    while not isinstance(node, (ast.Module, *SCOPES)):
        block = model.block_of(node)
        parent = model.parent(node)
        if block is None or parent is None:
            return None
        index = next(i for i, member in enumerate(block) if member is node)
        guarded = isinstance(parent, ast.Try)
        if walk.runs(block[index + 1:]) and not guarded:
            break
        if isinstance(parent, ast.Try):
            walk.reads_all([*parent.handlers, *parent.orelse, *parent.finalbody])
        if isinstance(parent, LOOPS) and block is parent.body:
            walk.reads_all([parent.test] if isinstance(parent, ast.While) else [])
            if not (isinstance(parent, (ast.For, ast.AsyncFor)) and walk.binds(parent.target)):
                walk.runs(block[:index + 1])
            walk.reads_all(parent.orelse)
        node = parent
    return [use for use in uses if isinstance(use.ctx, ast.Load) and id(use) in walk.reached]


class _Walk:
    """The reads of one name met so far along the statements that may run."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.reached: Set[int] = set()

    def runs(self, statements: List[ast.stmt]) -> bool:
        """Reads the statements in order; whether one of them binds the name again for sure: an
        assignment to it that no ``break`` or ``continue`` before it may jump past."""
        jumps = False
        for statement in statements:
            if isinstance(statement, ast.Assign) and any(self.binds(target) for target in statement.targets):
                self.reads_all([statement.value, *statement.targets])
                if not jumps:
                    return True
                continue
            self.enters(statement)
            jumps = jumps or any(isinstance(node, (ast.Break, ast.Continue)) for node in ast.walk(statement))
        return False

    def enters(self, statement: ast.stmt) -> None:
        """Reads what ``statement`` may read of the value, running into its blocks: an ``if``'s
        branches, a loop's body once (a body that binds the name again first hands later turns a
        value of its own; a ``for`` target that is the name binds it before the body runs), a
        ``with`` block. A ``try`` (an exception may leave its body anywhere) and any other
        statement is read whole."""
        if isinstance(statement, ast.If):
            self.reads_all([statement.test])
            self.runs(statement.body)
            self.runs(statement.orelse)
        elif isinstance(statement, (ast.For, ast.AsyncFor)):
            self.reads_all([statement.iter])
            if not self.binds(statement.target):
                self.runs(statement.body)
            self.runs(statement.orelse)
        elif isinstance(statement, ast.While):
            self.reads_all([statement.test])
            self.runs(statement.body)
            self.runs(statement.orelse)
        elif isinstance(statement, (ast.With, ast.AsyncWith)):
            self.reads_all([item.context_expr for item in statement.items])
            self.runs(statement.body)
        else:
            self.reads_all([statement])

    def binds(self, target: ast.expr) -> bool:
        """Whether an assignment target binds the name itself (``fake``, or an element of ``a, fake``)."""
        if isinstance(target, ast.Name):
            return target.id == self.name
        if isinstance(target, (ast.Tuple, ast.List)):
            return any(self.binds(element) for element in target.elts)
        return False

    def reads_all(self, nodes: Sequence[ast.AST]) -> None:
        for root in nodes:
            for node in ast.walk(root):
                if isinstance(node, ast.Name) and node.id == self.name and isinstance(node.ctx, ast.Load):
                    self.reached.add(id(node))
