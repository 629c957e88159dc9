"""GPU003: ``torch.cuda.empty_cache()`` called while dead tensors are still bound to names."""

from __future__ import annotations

from typing import List, Optional, Sequence, Union

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider

from gpulint.edits import statements
from gpulint.edits.statements import MODULE_LEVEL_DELETION, NO_STATEMENT_BOUNDARY, NOT_DELETABLE
from gpulint.analysis import scope
from gpulint.analysis.scope import ScopeAnalysis
from gpulint.analysis.tensors import subexpressions
from gpulint.analysis.cfg import Step
from gpulint.engine.diagnostics import Applicability, FixOutcome, NoFix
from gpulint.engine.rule import FixAvailability, Rule
from gpulint.semantic.torch_api import EMPTY_CACHE


def _assigns(statement: cst.CSTNode, name: str) -> bool:
    """Whether ``statement`` is a simple statement line that assigns ``name`` plainly (also in a tuple)."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        for target in small.targets if isinstance(small, cst.Assign) else ():
            node = target.target
            elements = [element.value for element in node.elements] if isinstance(node, (cst.Tuple, cst.List)) else [node]
            if any(isinstance(element, cst.Name) and element.value == name for element in elements):
                return True
    return False


def _quoted(names: List[str]) -> str:
    return ", ".join(f"'{name}'" for name in names)


class EmptyCacheWithLiveReferences(Rule):
    """``empty_cache()`` returns cached blocks to the driver only when no tensor references them."""

    code = "GPU003"
    name = "empty-cache-with-live-references"
    message = "empty_cache() cannot release {names}: still bound (add del before the call)"
    fix_title = "Delete the dead tensors before `empty_cache()`"
    fix_availability = FixAvailability.SOMETIMES
    tokens = frozenset({"empty_cache"})
    targets = EMPTY_CACHE

    METADATA_DEPENDENCIES = (PositionProvider, *scope.METADATA_DEPENDENCIES, *statements.METADATA_DEPENDENCIES)

    def visit_Call(self, node: cst.Call) -> None:
        names = self.qualified_names(node.func)
        if not names or not names <= EMPTY_CACHE:
            return
        statement = self.get_metadata(ParentNodeProvider, node)
        if not (isinstance(statement, cst.Expr) and statement.value is node):
            return
        analysis = self.context.analyses.of(self, node)
        step = analysis.step_of(statement) if analysis else None
        if analysis is None or step is None:
            return
        dead = self._dead_tensor_names(analysis, step)
        if dead:
            self.report(node, self.message.format(names=_quoted(dead)), self._fix(analysis, step, statement, dead))

    def _dead_tensor_names(self, analysis: ScopeAnalysis, step: Step) -> List[str]:
        """Names holding device memory worth releasing (forward outputs and values computed from
        them, losses, checkpoints loaded to the device, modules built on it, weights — not token
        ids, masks or inputs, nor one pass's outputs of a loop run without a graph:
        :meth:`_one_pass_without_graph`) that nothing reads after ``step``, and that ``del`` would
        free: not parameters, not stored on an object or in a container, not held by a container
        that stays alive (``kwargs = dict(input_ids=ids)``)."""
        substantial, replaced = set(analysis.device_memory_names()), analysis.replaced_weights()
        holding_memory = analysis.holding_before(
            step, lambda name, value: analysis.tensors.holds_device_memory(value, substantial, replaced)
            and not self._one_pass_without_graph(analysis, name, value)
        )
        live = analysis.live_before(step)
        excluded = live | analysis.escaping | set(analysis.parameters) | analysis.stored_elsewhere()
        dead = {name for name in analysis.holding[step] | holding_memory if name not in excluded}
        held_by = analysis.held_by(step)
        while True:
            still_held = {name for name in dead if held_by.get(name, frozenset()) - dead}
            if not still_held:
                break
            dead -= still_held
        return analysis.in_binding_order(dead & holding_memory)

    def _one_pass_without_graph(self, analysis: ScopeAnalysis, name: str, value: cst.BaseExpression) -> bool:
        """Whether ``name = value`` binds, in a loop of the scope and with gradients off there, a
        value computed from others (a forward output, arithmetic on one) that loads, allocates or
        builds nothing (:meth:`~gpulint.analysis.tensors.TensorLikeness.acquires_memory`) and reads
        ``name`` only as the same pass bound it before (``output, aux = output``; not
        ``outputs = torch.cat([outputs, output])``, which gathers every pass): each pass replaces
        the last, so what stays bound is one pass's outputs, with no graph behind them — a batch's
        logits or restored image, small next to what the loop ran through."""
        statement = self.get_metadata(ParentNodeProvider, value, None)
        model = self.context.model
        if model is None or not isinstance(statement, (cst.Assign, cst.AnnAssign, cst.NamedExpr)):
            return False
        if analysis.tensors.acquires_memory(value):
            return False
        loop = self._pass_of(analysis, statement)
        if loop is None:
            return False
        reads_itself = any(isinstance(child, cst.Name) and child.value == name for child in subexpressions(value))
        if reads_itself and not self._bound_earlier_in_the_pass(statement, loop, name):
            return False
        position = self.get_metadata(PositionProvider, statement, None)
        return position is not None and model.gradients_off_at(position.start.line, position.start.column)

    def _pass_of(self, analysis: ScopeAnalysis, node: cst.CSTNode) -> Optional[Union[cst.For, cst.While]]:
        """The innermost ``for`` or ``while`` loop of the scope whose body holds ``node``."""
        child, parent = node, self.get_metadata(ParentNodeProvider, node, None)
        while parent is not None and parent is not analysis.node:
            if isinstance(parent, (cst.For, cst.While)) and child is parent.body:
                return parent
            child, parent = parent, self.get_metadata(ParentNodeProvider, parent, None)
        return None

    def _bound_earlier_in_the_pass(self, node: cst.CSTNode, loop: Union[cst.For, cst.While], name: str) -> bool:
        """Whether a plain assignment to ``name`` runs before ``node`` on every path through one pass
        of ``loop``: a simple statement earlier in a block that holds ``node``, up to the loop's body."""
        child, parent = node, self.get_metadata(ParentNodeProvider, node, None)
        while parent is not None and child is not loop.body:
            body = getattr(parent, "body", None)
            if isinstance(body, Sequence) and any(item is child for item in body):
                earlier = body[: next(index for index, item in enumerate(body) if item is child)]
                if any(_assigns(item, name) for item in earlier):
                    return True
            child, parent = parent, self.get_metadata(ParentNodeProvider, parent, None)
        return False

    def _fix(self, analysis: ScopeAnalysis, step: Step, statement: cst.Expr, dead: List[str]) -> FixOutcome:
        if not set(dead) <= analysis.bound_if_deleted({step: frozenset(dead)})[step]:
            return NoFix(NOT_DELETABLE)
        replacement = statements.insert_before(self, statement, f"del {', '.join(dead)}")
        if replacement is None:
            return NoFix(NO_STATEMENT_BOUNDARY)
        edits = [self.replacement_edit(*replacement)]
        if analysis.is_module:
            return self.make_fix(Applicability.UNSAFE, edits, analysis.isolation, note=MODULE_LEVEL_DELETION)
        return self.make_fix(Applicability.SAFE, edits, analysis.isolation)
