"""GPU002: a whole pickled model, loaded only to copy its weights, kept alive afterwards."""

from __future__ import annotations

import ast
from typing import List, Optional, Sequence, Set, Tuple, Union, cast

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider

from gpulint.edits import statements
from gpulint.edits.statements import MODULE_LEVEL_DELETION, NO_STATEMENT_BOUNDARY, NOT_DELETABLE
from gpulint.analysis import scope
from gpulint.analysis.aliases import AliasGroup
from gpulint.analysis.scope import STORING_METHODS, ScopeAnalysis
from gpulint.engine.diagnostics import Applicability, FixOutcome, NoFix
from gpulint.engine.rule import FixAvailability, Rule
from gpulint.semantic.model import SemanticModel
from gpulint.semantic.reached_reads import reached_reads
from gpulint.semantic.torch_api import LOADERS, TENSOR_ATTRIBUTES

MAPPING_ATTRIBUTES = frozenset({
    "keys", "items", "values", "get", "pop", "update", "copy", "setdefault", "clear", "popitem",
    "__getitem__", "__contains__", "__len__", "__iter__", "move_to_end", "_metadata",
    "iteritems", "iterkeys", "itervalues", "has_key", "viewitems", "viewkeys", "viewvalues",
})
"""Attributes a plain state dict has (an ``OrderedDict`` with ``_metadata``; Python 2's dict
methods too): using only these does not show the object is a module."""
COPY_METHODS = frozenset({"load_state_dict", "copy_", "set_"})
BLOCKS = (cst.Module, cst.IndentedBlock, cst.SimpleStatementSuite)
Block = Union[cst.Module, cst.IndentedBlock, cst.SimpleStatementSuite]

BlockPath = List[Tuple[Block, cst.CSTNode]]
"""(block, statement of that block) from the scope's body down to a statement."""


def _quoted(names: Sequence[str]) -> str:
    return ", ".join(f"'{name}'" for name in names)


class WholeModelPickleKeptAlive(Rule):
    """A whole pickled module loaded just to copy its weights keeps them all on the device."""

    code = "GPU002"
    name = "whole-model-pickle-kept-alive"
    message = (
        "the model loaded here stays alive in {names} after its weights were copied; "
        "delete {them} once done (then gc.collect())"
    )
    fix_title = "Delete the loaded model and its aliases after their last use, then `gc.collect()`"
    fix_availability = FixAvailability.SOMETIMES
    tokens = frozenset({"load"})
    targets = LOADERS

    METADATA_DEPENDENCIES = (PositionProvider, *scope.METADATA_DEPENDENCIES, *statements.METADATA_DEPENDENCIES)

    @classmethod
    def seeds(cls, model: SemanticModel) -> List[ast.Call]:
        """The loads whose value the code uses as a module (see :meth:`_loads_module`)."""
        return [call for call in cls.candidate_calls(model) if cls._loads_module(model, call)]

    @staticmethod
    def _loads_module(model: SemanticModel, call: ast.Call) -> bool:
        """``name = torch.load(...)`` (or an attribute or method of it) where the attribute on the
        call or, lacking one, an attribute of ``name`` at a read the load's value may reach
        (:func:`~gpulint.semantic.reached_reads.reached_reads`; not ``emb.normal_(0, 0.05)`` after
        ``emb = torch.zeros(n, d)`` in the other branch of an ``if``) is one a state dict does not
        have: the loaded object is a whole module."""
        value: ast.AST = call
        parent = model.parent(value)
        if isinstance(parent, ast.Attribute):
            if not _shows_module(parent.attr):
                return False
            while (isinstance(parent, ast.Attribute) and parent.value is value) or (
                isinstance(parent, ast.Call) and parent.func is value
            ):
                value, parent = parent, model.parent(parent)
            return _bound_to_name(parent, value)
        if not _bound_to_name(parent, value):
            return False
        assert isinstance(parent, ast.Assign)
        target = parent.targets[0]
        place = model.place(target)
        if place is None:
            return False
        reached = reached_reads(model, parent, place.binding)
        return any(
            isinstance(use_parent, ast.Attribute) and use_parent.value is use and _shows_module(use_parent.attr)
            for use in (model.uses(place.binding) if reached is None else reached) for use_parent in [model.parent(use)]
        )

    def visit_Module(self, node: cst.Module) -> None:
        model = self.context.model
        self.module_loads = {model.span(call.func) for call in self.seeds(model)} if model is not None else set()

    def _parent(self, node: cst.CSTNode) -> cst.CSTNode:
        return self.get_metadata(ParentNodeProvider, node)

    def visit_Call(self, node: cst.Call) -> None:
        names = self.qualified_names(node.func)
        if not names or not names <= LOADERS or (self.context.model is not None and not self._is_module(node)):
            return
        binding = self._binding(node)
        analysis = self.context.analyses.of(self, node) if binding else None
        if binding is None or analysis is None:
            return
        statement, name = binding
        if self.context.model is None and not self._is_module_on_libcst(node, name, analysis):
            return
        group = AliasGroup([name], self._steps(analysis))
        if group.names & analysis.escaping or not self._weights_copied(group, analysis) or self._escapes(group, analysis):
            return
        self._check_kept_alive(node, statement, group, analysis)

    def _binding(self, call: cst.Call) -> Optional[Tuple[cst.Assign, str]]:
        """(statement, name) for ``name = torch.load(...)``, ``name = torch.load(...).roberta`` or
        ``name = torch.load(...).state_dict()``."""
        value: cst.CSTNode = call
        parent = self._parent(value)
        while (isinstance(parent, cst.Attribute) and parent.value is value) or (
            isinstance(parent, cst.Call) and parent.func is value and value is not call
        ):
            value, parent = parent, self._parent(parent)
        if isinstance(parent, cst.Assign) and parent.value is value and len(parent.targets) == 1:
            target = parent.targets[0].target
            if isinstance(target, cst.Name):
                return parent, target.value
        return None

    def _is_module(self, call: cst.Call) -> bool:
        """Whether the model decided the load's value is a whole module (:meth:`_loads_module`)."""
        code_range = self.get_metadata(PositionProvider, call.func, None)
        if code_range is None:
            return False
        start, end = code_range.start, code_range.end
        return (start.line, start.column, end.line, end.column) in self.module_loads

    def _is_module_on_libcst(self, call: cst.Call, name: str, analysis: ScopeAnalysis) -> bool:
        """:meth:`_loads_module` on LibCST's scopes, for a file Python's own parser rejects (no model)."""
        parent = self._parent(call)
        if isinstance(parent, cst.Attribute):
            return _shows_module(parent.attr.value)
        for assignment in analysis.scope.assignments[name]:
            for access in assignment.references:
                use = self._parent(access.node)
                if isinstance(use, cst.Attribute) and use.value is access.node and _shows_module(use.attr.value):
                    return True
        return False

    @staticmethod
    def _steps(analysis: ScopeAnalysis) -> List[cst.CSTNode]:
        return [step.node for step in analysis.graph.steps if step.node is not None]

    def _weights_copied(self, group: AliasGroup, analysis: ScopeAnalysis) -> bool:
        found = False

        class Copies(cst.CSTVisitor):
            def visit_Call(self, call: cst.Call) -> None:
                nonlocal found
                if isinstance(call.func, cst.Attribute) and call.func.attr.value in COPY_METHODS:
                    found = found or any(group.derives(arg.value) for arg in call.args)

        for node in self._steps(analysis):
            if isinstance(node, cst.BaseSmallStatement):
                node.visit(Copies())
        return found

    def _escapes(self, group: AliasGroup, analysis: ScopeAnalysis) -> bool:
        """Returned, yielded, or stored on an object or a container that is not local."""
        local = {assignment.name for assignment in analysis.scope.assignments if assignment.scope is analysis.scope}
        for node in self._steps(analysis):
            if isinstance(node, cst.Return) and node.value is not None and group.derives(node.value):
                return True
            if isinstance(node, cst.Expr) and isinstance(node.value, (cst.Yield, cst.Await)):
                inner = node.value.value if isinstance(node.value, cst.Yield) else None
                if isinstance(inner, cst.BaseExpression) and group.derives(inner):
                    return True
            if isinstance(node, cst.Expr) and isinstance(node.value, cst.Call) and self._stores(node.value, group, local, analysis):
                return True
            if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)) and node.value is not None and group.derives(node.value):
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, cst.Attribute):
                        return True
                    if isinstance(target, cst.Subscript) and not (
                        isinstance(target.value, cst.Name) and target.value.value in local
                        and target.value.value not in analysis.parameters
                    ):
                        return True
        return False

    @staticmethod
    def _stores(call: cst.Call, group: AliasGroup, local: Set[str], analysis: ScopeAnalysis) -> bool:
        """``container.append(x)`` on a container that outlives the scope, or ``setattr(o, n, x)``."""
        if not any(group.derives(arg.value) for arg in call.args):
            return False
        if isinstance(call.func, cst.Name):
            return call.func.value == "setattr"
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in STORING_METHODS:
            receiver = call.func.value
            return not (isinstance(receiver, cst.Name) and receiver.value in local and receiver.value not in analysis.parameters)
        return False

    def _block_path(self, node: cst.CSTNode, analysis: ScopeAnalysis) -> BlockPath:
        path: BlockPath = []
        current = node
        while current is not analysis.node:
            parent = self._parent(current)
            if isinstance(parent, BLOCKS):
                path.append((parent, current))
            current = parent
        return list(reversed(path))

    def _check_kept_alive(self, call: cst.Call, binding: cst.Assign, group: AliasGroup, analysis: ScopeAnalysis) -> None:
        paths = [self._block_path(self._statement_of(binding), analysis)]
        for step in analysis.graph.steps:
            if step.node is not None and (step.reads | step.binds | step.deletes) & group.names:
                paths.append(self._block_path(self._statement_of(step.node), analysis))
        depth = 0
        while all(len(path) > depth for path in paths) and len({id(path[depth][0]) for path in paths}) == 1:
            depth += 1
        if depth == 0:
            return
        block = paths[0][depth - 1][0]
        body: List[cst.CSTNode] = list(block.body)
        last = max((path[depth - 1][1] for path in paths), key=body.index)
        if group.names & analysis.live_after_statement(last):
            return
        loaded = binding.value
        holding = analysis.holding_after_statement(
            last, lambda name, value: name in group.names and (value is loaded or group.derives(value)), group.gained_by
        )
        remaining = analysis.in_binding_order(holding - group.loop_variables)
        if not remaining or not self._work_follows(last, block, analysis):
            return
        them = "it" if len(remaining) == 1 else "them"
        message = self.message.format(names=_quoted(remaining), them=them)
        self.report(call, message, self._fix(last, remaining, analysis))

    def _statement_of(self, node: cst.CSTNode) -> cst.CSTNode:
        """The statement line holding a small statement; a compound statement is its own."""
        parent = self._parent(node)
        return parent if isinstance(node, cst.BaseSmallStatement) and isinstance(parent, cst.SimpleStatementLine) else node

    def _work_follows(self, last: cst.CSTNode, block: Block, analysis: ScopeAnalysis) -> bool:
        """Whether the scope does real work (a call or a loop) after ``last``: later statements of its
        block and of every enclosing block, or another iteration of an enclosing loop."""
        current, current_block = last, block
        while True:
            body: List[cst.CSTNode] = list(current_block.body)
            if any(_does_work(statement) for statement in body[body.index(current) + 1 :]):
                return True
            if isinstance(current_block, cst.Module):
                return False
            owner = self._parent(current_block)
            while owner is not analysis.node and not isinstance(self._parent(owner), BLOCKS):
                if isinstance(owner, (cst.For, cst.While)):
                    return True
                owner = self._parent(owner)
            if owner is analysis.node:
                return False
            if isinstance(owner, (cst.For, cst.While)):
                return True
            current, current_block = owner, cast(Block, self._parent(owner))  # the loop above stopped at a block

    def _fix(self, last: cst.CSTNode, names: List[str], analysis: ScopeAnalysis) -> FixOutcome:
        if not analysis.deletable_after(last, frozenset(names)):
            return NoFix(NOT_DELETABLE)
        if not self._gc_is_free(analysis):
            return NoFix("`gc` names something other than the standard module here")
        replacement = statements.insert_after(self, last, [f"del {', '.join(names)}", "gc.collect()"])
        if replacement is None:
            return NoFix(NO_STATEMENT_BOUNDARY)
        edits = [self.replacement_edit(*replacement), self.import_edit("gc")]
        if analysis.is_module:
            return self.make_fix(Applicability.UNSAFE, edits, analysis.isolation, note=MODULE_LEVEL_DELETION)
        return self.make_fix(Applicability.SAFE, edits, analysis.isolation)

    @staticmethod
    def _gc_is_free(analysis: ScopeAnalysis) -> bool:
        """Whether ``gc`` means (or, once imported, will mean) the standard module in this scope."""
        for scope_ in (analysis.scope, analysis.scope.globals):
            for assignment in scope_.assignments["gc"]:
                node = getattr(assignment, "node", None)
                if not (isinstance(node, cst.Import) and any(
                    alias.asname is None and isinstance(alias.name, cst.Name) and alias.name.value == "gc"
                    for alias in node.names
                )):
                    return False
        return True


def _bound_to_name(statement: Optional[ast.AST], value: ast.AST) -> bool:
    """Whether ``statement`` is ``name = value``."""
    return (
        isinstance(statement, ast.Assign) and statement.value is value and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
    )


def _shows_module(attribute: str) -> bool:
    return attribute not in MAPPING_ATTRIBUTES and attribute not in TENSOR_ATTRIBUTES


def _does_work(statement: cst.CSTNode) -> bool:
    found: Set[bool] = set()

    class Work(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            found.add(True)

        def visit_For(self, node: cst.For) -> None:
            found.add(True)

        def visit_While(self, node: cst.While) -> None:
            found.add(True)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    statement.visit(Work())
    return bool(found)
