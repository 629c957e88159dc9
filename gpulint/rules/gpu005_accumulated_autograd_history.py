"""GPU005: a loss (or other tensor with autograd history) accumulated across loop iterations."""

from __future__ import annotations

import ast
import re
from typing import Callable, Dict, FrozenSet, Iterator, List, Optional, Set, Tuple, Union

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider

from gpulint.analysis import scope
from gpulint.analysis.gradients import GradientFlow
from gpulint.analysis.cfg import Step
from gpulint.analysis.scope import ScopeAnalysis
from gpulint.analysis.tensors import dotted_name, subexpressions
from gpulint.engine.diagnostics import Applicability, FixOutcome, NoFix
from gpulint.engine.rule import FileContext, FixAvailability, Rule
from gpulint.semantic.backward import backpropagated_functions
from gpulint.semantic.batch_names import BATCH_WORDS, name_words
from gpulint.semantic.detached import only_detached
from gpulint.semantic.history import LOSS_FUNCTION, AutogradHistory
from gpulint.semantic.model import BUILTIN_NAMES, SemanticModel
from gpulint.semantic.survey import Survey, argument_values, ast_dotted_name
from gpulint.semantic.torch_api import (
    AUTOGRAD_ENTRY_POINTS,
    BINARY_TENSOR_METHODS,
    DEVICE_KEEPING_TENSOR_METHODS,
    ELEMENTWISE_METHODS,
    HISTORY_FREE_METHODS,
    LAYOUT_METHODS,
    FUNCTIONAL_NAMESPACE,
    REDUCTIONS,
    TORCH_PACKAGE,
    is_torch_tensor_function,
)

APPENDING_METHODS = frozenset({"append", "extend", "insert"})
LOSS_CLASS = re.compile(r"(Loss|Criterion)$")
STORING_METHODS = frozenset({"append", "extend", "insert", "update", "setdefault", "add"})
OPTIMIZER_WORDS = frozenset({"opt", "optim", "optimizer", "optimiser", "optimizers"})
"""Words of the name of an optimizer whose ``.step()`` ends an update."""
UPDATE_CALL = re.compile(r"optimi[sz]e|update|step", re.IGNORECASE)
"""Names of helpers that run an update when handed an optimizer (``optimize``, ``update_step``)."""
ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)
"""Operators whose result keeps the autograd history of either operand."""
MAX_HISTORY_DEPTH = 6
"""How deep :meth:`AccumulatedAutogradHistory._may_carry` follows bindings and operands, and how
many times :meth:`AccumulatedAutogradHistory._history_holding` reads a scope again."""
HELPER_FUNCTION = re.compile(r".*collate.*", re.IGNORECASE)
"""Functions that assemble one batch: what they stack or sum is data, not history across steps."""


class AccumulatedAutogradHistory(Rule):
    """Summing or collecting losses that carry their graph keeps every iteration's graph alive."""

    code = "GPU005"
    name = "accumulated-autograd-history"
    message = (
        "`{value}` carries autograd history into `{accumulator}`, which outlives the iteration: "
        "without backward every step's activations stay on the device, with it the graph nodes pile "
        "up in host memory (accumulate `{detached}.detach()`, or `.item()` for a Python number)"
    )
    fix_title = "Accumulate `.detach()`ed values"
    fix_availability = FixAvailability.SOMETIMES
    tokens = frozenset({"+", "append", "extend", "insert", "]"})

    METADATA_DEPENDENCIES = (PositionProvider, *scope.METADATA_DEPENDENCIES)

    def __init__(self, context: FileContext) -> None:
        super().__init__(context)
        # The frozen models' calls whose inputs are being read (_given_shown_history), which may
        # read the same call again through the names its output is bound to.
        self._reading_inputs: Set[int] = set()
        self._history_read: Dict[Tuple[int, int], Dict[Step, FrozenSet[str]]] = {}
        # The data loop whose accumulation is being read (_check): values bound before it are the
        # same in every iteration.
        self._accumulating_loop: Optional[cst.CSTNode] = None
        self._backpropagated_names: Dict[int, Set[str]] = {}
        self._scope_backward_names: Dict[int, Set[str]] = {}

    @classmethod
    def seeds(cls, model: SemanticModel) -> List[ast.AST]:
        """The statements (outside forward passes) that add or append, inside a loop, a value that
        may carry autograd history (by the model); none in a module that runs another framework."""
        if model.runs_another_framework:
            return []
        history = model.derived(AutogradHistory)
        seeds: List[ast.AST] = []
        for statement, value in _accumulated_values(model):
            scope = model.scope_of(statement)
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)) and (scope.name == "forward" or scope.name.startswith("forward_")):
                continue
            if isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)) and history.may_carry(value):
                seeds.append(statement)
        return seeds

    def _parent(self, node: cst.CSTNode) -> cst.CSTNode:
        return self.get_metadata(ParentNodeProvider, node)

    def _names(self, node: cst.CSTNode) -> FrozenSet[str]:
        return self.qualified_names(node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        """``total += loss``, and ``logs["loss"] += loss`` (whatever the key: ``+=`` accumulates)."""
        if isinstance(node.operator, cst.AddAssign):
            target = node.target.value if isinstance(node.target, cst.Subscript) else node.target
            self._check(node, target, node.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1:
            return
        target = node.targets[0].target
        value = node.value
        if isinstance(target, cst.Subscript):
            if not _constant_key(target):
                self._check(node, target.value, value)
        elif isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
            accumulator = dotted_name(target)
            for own, other in ((value.left, value.right), (value.right, value.left)):
                if accumulator and _scaled(own, accumulator):
                    self._check(node, target, other)

    def visit_Call(self, node: cst.Call) -> None:
        """``losses.append(loss)``, and ``logs["loss"].append(loss)``: a list held in a container
        lives as long as the container."""
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in APPENDING_METHODS and node.args:
            receiver = node.func.value
            self._check(node, receiver.value if isinstance(receiver, cst.Subscript) else receiver, node.args[-1].value)

    def _check(self, statement: cst.CSTNode, accumulator: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if self.context.model is not None and self.context.model.runs_another_framework:
            return
        accumulated = dotted_name(accumulator)
        loop = self._data_loop(statement, accumulated) if accumulated is not None else None
        if accumulated is None or loop is None or self._grad_off(statement):
            return
        analysis = self.context.analyses.of(self, statement)
        if analysis is None or _is_forward(analysis.node) or self._in_batch_helper(analysis.node) or self._on_the_cpu(analysis.node, loop):
            return
        self._accumulating_loop = loop
        try:
            if not self._carries_history(value, loop, analysis, statement) or self._backpropagated(accumulated, analysis):
                return
        finally:
            self._accumulating_loop = None
        message = self.message.format(
            value=self.context.module.code_for_node(value),
            detached=self.context.module.code_for_node(_parenthesized(value)),
            accumulator=accumulated,
        )
        self.report(value, message, self._fix(value, accumulated, analysis))

    def _fix(self, value: cst.BaseExpression, accumulated: str, analysis: ScopeAnalysis) -> FixOutcome:
        """Safe for a local accumulator that never leaves its function; unsafe in module-level code;
        none where the accumulator may be backpropagated by code gpulint cannot see: an attribute,
        its history leaving the function (returned or yielded directly, through a value computed
        from it or in a container; put in a container the caller passed; a Python number from
        ``.item()`` carries none), or summed in a loss or criterion function."""
        if "." in accumulated:
            return NoFix(f"`{accumulated}` is an attribute, and code elsewhere may backpropagate what it holds")
        if self._in_loss_function(analysis.node):
            return NoFix("this sum is in a loss or criterion, whose result is meant to be backpropagated")
        if isinstance(analysis.node, cst.FunctionDef):
            flow = GradientFlow(analysis.node, names={accumulated})
            if accumulated not in flow.own:
                return NoFix(f"`{accumulated}` comes from outside the function, where it may be backpropagated")
            if flow.escapes():
                return NoFix(f"`{accumulated}` leaves the function, and a caller may backpropagate it")
        detached = cst.Call(func=cst.Attribute(value=_parenthesized(value), attr=cst.Name("detach")))
        edits = [self.replacement_edit(value, detached)]
        if isinstance(analysis.node, cst.Module):
            return self.make_fix(Applicability.UNSAFE, edits, note=f"module-level `{accumulated}`: later code may backpropagate it")
        return self.make_fix(Applicability.SAFE, edits)

    def _on_the_cpu(self, scope_node: cst.CSTNode, loop: Union[cst.For, cst.While]) -> bool:
        """Module-level code of a module that never puts anything on an accelerator
        (:attr:`~gpulint.semantic.model.SemanticModel.mentions_accelerator`), whose loop calls
        nothing imported but torch's own functions: the models a script or notebook builds run on
        the CPU, and what it accumulates holds host memory, not the GPU's. (A model imported from
        another module, or a function of such a module, may be one code elsewhere moved.)"""
        model = self.context.model
        if not isinstance(scope_node, cst.Module) or model is None or model.mentions_accelerator:
            return False
        return all(
            not names or any(name.split(".")[0] == TORCH_PACKAGE for name in names)
            for names in (self._names(node.func) for node in subexpressions(loop.body) if isinstance(node, cst.Call))
        )

    def _in_loss_function(self, scope_node: cst.CSTNode) -> bool:
        """A function named as one that computes a loss (``loss_fn``, ``compute_loss``,
        ``criterion``), or a method of a class named for one (``ComputeLoss``, ``SetCriterion``):
        what it sums is what the caller backpropagates."""
        return self._inside_named(
            scope_node, lambda name: bool(LOSS_FUNCTION.match(name)), lambda name: bool(LOSS_CLASS.search(name)),
        )

    def _inside_named(self, scope_node: cst.CSTNode, function: Callable[[str], bool], cls: Callable[[str], bool]) -> bool:
        """Whether ``scope_node``, or a function or class around it, is a function whose name
        ``function`` accepts or a class whose name ``cls`` accepts."""
        current: Optional[cst.CSTNode] = scope_node
        while current is not None and not isinstance(current, cst.Module):
            if isinstance(current, cst.FunctionDef) and function(current.name.value):
                return True
            if isinstance(current, cst.ClassDef) and cls(current.name.value):
                return True
            current = self.get_metadata(ParentNodeProvider, current, None)
        return False

    def _data_loop(self, node: cst.CSTNode, accumulated: str) -> Optional[Union[cst.For, cst.While]]:
        """The innermost loop around ``node`` that draws batches and across whose iterations
        ``accumulated`` lives on; None when a loop on the way starts it afresh each iteration
        (``loss = 0.0`` before summing over crops or heads) or no loop draws batches."""
        current = self._parent(node)
        while not isinstance(current, (cst.Module, cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            if isinstance(current, (cst.For, cst.While)):
                if not self._outlives_iteration(accumulated, current):
                    return None
                if _draws_batches(current) and not self._pieces_of_a_batch(current) and not self._parts_of_one_update(current, accumulated):
                    return current
            current = self._parent(current)
        return None

    def _pieces_of_a_batch(self, loop: Union[cst.For, cst.While]) -> bool:
        """A loop over pieces of one batch of a loop around it that draws batches (``for chunk in
        zip(data.chunk(4), targets.chunk(4))``): every name its iterable reads is that loop's target
        or a name its body binds to a value computed from the target (builtins such as ``zip``
        aside), and none is named for a loader (``for x, y in loader`` over an outer loop's
        loaders draws batches of its own). What it sums or collects is summed within one step."""
        if not isinstance(loop, cst.For):
            return False
        parts = list(subexpressions(loop.iter))
        attributes = {id(node.attr) for node in parts if isinstance(node, cst.Attribute)}
        read = {node.value for node in parts if isinstance(node, cst.Name) and id(node) not in attributes} - BUILTIN_NAMES
        if not read or any(name_words(name) & LOADER_WORDS for name in read):
            return False
        outer = self._parent(loop)
        while not isinstance(outer, (cst.Module, cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            if isinstance(outer, cst.For) and _draws_batches(outer):
                pieces = _plain_names(outer.target)
                assignments = [node for node in subexpressions(outer.body) if isinstance(node, cst.Assign)]
                changed = True
                while changed:
                    changed = False
                    for node in assignments:
                        if {n.value for n in subexpressions(node.value) if isinstance(n, cst.Name)} & pieces:
                            for target in node.targets:
                                new = _plain_names(target.target) - pieces
                                if new:
                                    pieces |= new
                                    changed = True
                return read <= pieces
            outer = self._parent(outer)
        return False

    def _parts_of_one_update(self, loop: Union[cst.For, cst.While], accumulated: str) -> bool:
        """A loop over the parts of one update (each domain's minibatch, micro-batches whose losses
        are backpropagated one by one): in the block that holds it, ``accumulated`` is last bound
        before it to a fresh start (``total = 0``) and an optimizer's ``.step()`` (a receiver named
        for one: ``opt``, ``optimizer``) is a statement of its own after it; the loop holds no
        ``.step()``, names no optimizer and calls no function of the module (which may step one);
        and after it the sum is handed to no call but a builtin, nor put in a container or
        returned. What it sums lives for that one update."""
        if any(_a_step(node) for node in subexpressions(loop.body)):
            return False
        block = self._parent(loop)
        statements = list(getattr(block, "body", ()))
        index = next((i for i, statement in enumerate(statements) if statement is loop), None)
        if index is None:
            return False
        binding = [statement for statement in statements[:index] if accumulated in _bound_names(statement)]
        if not binding or not _starts_afresh(binding[-1], accumulated):
            return False
        steps = [
            small.value for statement in statements[index + 1:] if isinstance(statement, cst.SimpleStatementLine)
            for small in statement.body if isinstance(small, cst.Expr) and _a_step(small.value) and _optimizer_step(small.value)
        ]
        if not steps:
            return False
        optimizers = {dotted_name(step.func.value) for step in steps if isinstance(step, cst.Call) and isinstance(step.func, cst.Attribute)}
        defined = {node.name.value for node in subexpressions(self.context.module) if isinstance(node, cst.FunctionDef)}
        for node in subexpressions(loop.body):
            if isinstance(node, (cst.Name, cst.Attribute)) and dotted_name(node) in optimizers:
                return False
            if isinstance(node, cst.Call) and (_called_names(node) & defined):
                return False
        return not any(self._sum_kept(statement, accumulated) for statement in statements[index + 1:])

    def _sum_kept(self, statement: cst.CSTNode, accumulated: str) -> bool:
        """Whether ``statement`` hands the sum itself to a call other than a builtin, puts it in a
        container or returns it."""
        for node in subexpressions(statement):
            if isinstance(node, cst.Call) and not (isinstance(node.func, cst.Name) and node.func.value in BUILTIN_NAMES):
                if any(dotted_name(argument.value) == accumulated for argument in node.args):
                    return True
            elif isinstance(node, (cst.List, cst.Tuple, cst.Set)) and any(dotted_name(element.value) == accumulated for element in node.elements):
                return True
            elif isinstance(node, cst.Dict) and any(
                isinstance(element, cst.DictElement) and dotted_name(element.value) == accumulated for element in node.elements
            ):
                return True
            elif isinstance(node, cst.Return) and node.value is not None and dotted_name(node.value) == accumulated:
                return True
        return False

    def _in_batch_helper(self, scope_node: cst.CSTNode) -> bool:
        """A loss or criterion (what it sums is what the caller backpropagates), or a collate
        function: one named for it, or a method of a class named for it (``PadCollateFn.__call__``)."""
        return self._in_loss_function(scope_node) or self._inside_named(scope_node, _names_collation, _names_collation)

    def _grad_off(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` always runs with gradients off, by the model: inside a grad-off ``with``
        block or a function with a grad-off decorator, or in a function every call of which in the
        module runs with gradients off."""
        model = self.context.model
        code_range = self.get_metadata(PositionProvider, node, None)
        if model is None or code_range is None:
            return False
        return model.gradients_off_at(code_range.start.line, code_range.start.column)

    def _carries_history(self, value: cst.BaseExpression, loop: cst.CSTNode, analysis: ScopeAnalysis, at: cst.CSTNode) -> bool:
        """A name ``.backward()`` is called on inside the loop (or a part of that loss unpacked beside
        it: :func:`~gpulint.semantic.history.loss_parts`), or the output of a module, a criterion
        or a ``torch.nn.functional`` function computed with gradients on, still bound here, or
        arithmetic of such values bound to a name (:meth:`_history_holding`); or arithmetic or a
        reduction of one (``torch.mean(loss) / n``, ``criterion(out, y).sum()``)."""

        def holding_here() -> FrozenSet[str]:
            statement = _small_statement(self, at)
            step = analysis.step_of(statement) if statement is not None else None
            return frozenset() if step is None else self._history_holding(loop, analysis).get(step, frozenset())

        return self._reads_history(value, holding_here, analysis)

    def _reads_history(
        self, value: cst.BaseExpression, holding: Callable[[], FrozenSet[str]], analysis: ScopeAnalysis
    ) -> bool:
        """Whether ``value`` carries history where the names that do are ``holding()``: such a
        name, a call that produces history, or arithmetic or a reduction of one."""
        reduced = self._reduced(value) if isinstance(value, cst.Call) else None
        if reduced is not None:
            return self._reads_history(reduced, holding, analysis)
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, ARITHMETIC):
            return self._reads_history(value.left, holding, analysis) or self._reads_history(value.right, holding, analysis)
        if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
            return self._reads_history(value.expression, holding, analysis)
        if isinstance(value, cst.Call):
            return self._graph_producing(value, analysis)
        return isinstance(value, cst.Name) and value.value in holding()

    def _history_holding(self, loop: cst.CSTNode, analysis: ScopeAnalysis) -> Dict[Step, FrozenSet[str]]:
        """For each step of the scope, the names that may hold a value with history there, reading
        ``loop``'s backward passes (:meth:`_binds_history`), once for each loop. A name bound to
        arithmetic carries history where an operand does where the binding reads it
        (``total_loss = 0.5 * mse_loss / scale - torch.mean(log_det)`` after ``mse_loss =
        self.make_loss(pred, y)``): read again with what the last reading found, until nothing
        changes, at most :data:`MAX_HISTORY_DEPTH` times. A reading asked for while it is being
        made sees what was found so far."""
        key = (id(loop), id(self._accumulating_loop))
        known = self._history_read.get(key)
        if known is not None:
            return known
        backward_in_loop = self._backpropagated_in(loop)
        solution: Dict[Step, FrozenSet[str]] = {}
        self._history_read[key] = solution
        for _ in range(MAX_HISTORY_DEPTH):
            found_before = solution

            def holds(name: str, value: cst.BaseExpression, found_before: Dict[Step, FrozenSet[str]] = found_before) -> bool:
                return self._binds_history(name, value, backward_in_loop, analysis, loop, found_before)

            solution = analysis.holding_where(holds)
            self._history_read[key] = solution
            if solution == found_before:
                break
        return solution

    def _inside(self, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
        """Whether ``node`` is part of ``loop``."""
        current: Optional[cst.CSTNode] = node
        while current is not None and current is not loop:
            current = self.get_metadata(ParentNodeProvider, current, None)
        return current is loop

    def _backpropagated_in(self, loop: cst.CSTNode) -> Set[str]:
        """The names ``.backward()`` is called on inside ``loop``, with the loss parts unpacked beside
        one (:func:`~gpulint.semantic.history.loss_parts`), read once for each loop."""
        known = self._backpropagated_names.get(id(loop))
        if known is not None:
            return known
        backward_in_loop = _backward_names(loop)
        model = self.context.model
        if model is not None:
            parts = model.derived(AutogradHistory).loss_parts
            for node in subexpressions(loop):
                position = self.get_metadata(PositionProvider, node, None) if isinstance(node, cst.Assign) else None
                if position is not None:
                    found = parts.get((position.start.line, position.start.column), set())
                    if found and _names_of(node) & backward_in_loop:
                        backward_in_loop = backward_in_loop | found
        self._backpropagated_names[id(loop)] = backward_in_loop
        return backward_in_loop

    def _reduced(self, call: cst.Call) -> Optional[cst.BaseExpression]:
        """:func:`~gpulint.semantic.history.reduced_value` on libcst's tree."""
        func = call.func
        if any(q == f"{TORCH_PACKAGE}.{name}" for q in self._names(func) for name in REDUCTIONS):
            first = call.args[0] if call.args else None
            return first.value if first is not None and first.keyword is None and not first.star else None
        if isinstance(func, cst.Attribute) and func.attr.value in REDUCTIONS:
            return func.value
        return None

    def _binds_history(
        self, name: str, value: cst.BaseExpression, backward_in_loop: Set[str], analysis: ScopeAnalysis,
        loop: cst.CSTNode, found_before: Dict[Step, FrozenSet[str]],
    ) -> bool:
        """Whether binding ``name`` to ``value`` gives it autograd history: a loss backpropagated in
        the loop, a call that produces history, or arithmetic, in the loop, of values that carry it
        where the binding reads them, by the names ``found_before`` holds there
        (:meth:`_history_holding`). Arithmetic bound before the loop is one value, the same in every
        iteration (a stale loss of an earlier training loop reaching a validation loop through a
        branch that binds nothing new is no history of that iteration)."""
        if analysis.tensors.releases(value) or _detached(value) or self._grad_off(value):
            return False
        if name in backward_in_loop:
            return True
        if isinstance(value, (cst.BinaryOperation, cst.UnaryOperation)):
            statement = _small_statement(self, value)
            step = analysis.step_of(statement) if statement is not None else None
            return (
                step is not None and self._inside(value, loop)
                and self._reads_history(value, lambda: found_before.get(step, frozenset()), analysis)
            )
        if not isinstance(value, cst.Call):
            return False
        helper_call = self._loss_helper_call(value)
        if helper_call is not None and self.context.model is not None:
            history = self.context.model.derived(AutogradHistory)
            return history.helper_binds_history(helper_call, name) and self._given_history(value, analysis, 0)
        return self._graph_producing(value, analysis)

    def _loss_helper_call(self, call: cst.Call) -> Optional[ast.Call]:
        """The model's node of ``call`` where it calls a loss helper of the module
        (:attr:`~gpulint.semantic.history.AutogradHistory.loss_helpers`), else None."""
        model, func, whole = self.context.model, self.span(call.func), self.span(call)
        if model is None or func not in model.derived(AutogradHistory).loss_helper_calls or whole is None:
            return None
        return model.call_at(whole)

    def _graph_producing(self, call: cst.Call, analysis: ScopeAnalysis, depth: int = 0) -> bool:
        """A call whose result may carry autograd history: a module's (or model's) forward pass, a
        helper that returns one computed with gradients on, a loss helper of the module given an
        argument that may carry history, or a criterion or functional call not given only detached
        values. A torch loss module (built in the scope, or at the top of the module:
        :meth:`~gpulint.semantic.history.AutogradHistory.calls_torch_loss`) or a torch function
        holds no parameters, so its result carries history only when an argument may
        (:meth:`_given_history`)."""
        if _detached(call) or analysis.tensors.releases(call):
            return False
        func = call.func
        if analysis.calls_helper_output(call) and self._helper_may_keep_gradients(call):
            return True
        if isinstance(func, cst.Attribute) and func.attr.value == "forward" and analysis.tensors.is_module(func.value):
            return not self._calls_frozen_model(call) or self._given_shown_history(call, analysis)
        if self._loss_helper_call(call) is not None:
            return self._given_history(call, analysis, depth)
        names = self._names(func)
        model, found = self.context.model, self._model_call(call)
        parameter_free = dotted_name(func) in analysis.torch_criteria or (
            model is not None and found is not None and model.derived(AutogradHistory).calls_torch_loss(found)
        ) or any(
            q.startswith(FUNCTIONAL_NAMESPACE) or (is_torch_tensor_function(q) and q.endswith("_loss")) for q in names
        )
        if parameter_free or dotted_name(func) in analysis.criteria:
            return not self._given_only_detached(call) and (not parameter_free or self._given_history(call, analysis, depth))
        return analysis.tensors.is_module(func) and (
            not self._calls_frozen_model(call) or self._given_shown_history(call, analysis)
        )

    def _given_shown_history(self, call: cst.Call, analysis: ScopeAnalysis) -> bool:
        """Whether an argument of ``call`` is shown to carry autograd history (:meth:`_carries_history`
        over the whole scope: a trainable model's output, a loss, what is computed from one). A
        frozen model is mostly run on data (samples scored by a metric), so an input of unknown
        origin (``sampler(next(labels))``) is read as data."""
        if id(call) in self._reading_inputs:
            return False
        self._reading_inputs.add(id(call))
        try:
            return any(self._carries_history(argument.value, analysis.node, analysis, call) for argument in call.args)
        finally:
            self._reading_inputs.discard(id(call))

    def _calls_frozen_model(self, call: cst.Call) -> bool:
        """:meth:`~gpulint.semantic.history.AutogradHistory.calls_frozen_model` on the model's reading
        of the same call."""
        model, found = self.context.model, self._model_call(call)
        return found is not None and model is not None and model.derived(AutogradHistory).calls_frozen_model(found)

    def _model_call(self, call: cst.Call) -> Optional[ast.Call]:
        """The semantic model's node of the same call, if it has one."""
        model, span = self.context.model, self.span(call)
        return model.call_at(span) if model is not None and span is not None else None

    def _given_history(self, call: cst.Call, analysis: ScopeAnalysis, depth: int) -> bool:
        """Whether an argument of ``call`` may carry autograd history (:meth:`_may_carry`)."""
        return any(self._may_carry(argument.value, call, analysis, depth) for argument in call.args)

    def _may_carry(self, value: cst.BaseExpression, at: cst.CSTNode, analysis: ScopeAnalysis, depth: int) -> bool:
        """Whether ``value``, read where ``at`` is, may carry autograd history. It carries none when
        shown so: a constant; a detached value; a name whose every binding that reaches here is made
        under a grad-off block, detached, or of such values (an output computed under
        ``torch.no_grad()``, ``gt = batch["gt"].to(device)``); a name the loop that draws batches
        binds (a batch holds data); a call of a function of the module whose every result is
        computed with gradients off (:meth:`_calls_grad_free_function`). Of the bindings that reach
        here, only those made inside the data loop whose accumulation is read count: a value bound
        before it (an earlier training loop's output, reaching a validation loop through a branch
        that binds nothing new, or through an ``else`` that builds an exception and never raises
        it) is the same in every iteration. A name no binding here gives a value (a parameter), an
        attribute of ``self``, and a call of an unknown function may carry it."""
        if depth > MAX_HISTORY_DEPTH:
            return True
        if analysis.tensors.releases(value) or _detached(value):
            return False
        if isinstance(value, cst.BinaryOperation):
            return self._may_carry(value.left, at, analysis, depth) or self._may_carry(value.right, at, analysis, depth)
        if isinstance(value, cst.UnaryOperation):
            return self._may_carry(value.expression, at, analysis, depth)
        if isinstance(value, (cst.Subscript, cst.Attribute)):
            return self._may_carry(value.value, at, analysis, depth)
        if isinstance(value, cst.Call):
            if self._graph_producing(value, analysis, depth + 1):
                return True
            if self._calls_grad_free_function(value):
                return False
            operands = self._operands(value, analysis)
            return operands is None or any(self._may_carry(operand, at, analysis, depth + 1) for operand in operands)
        if isinstance(value, (cst.List, cst.Tuple)):
            return any(self._may_carry(element.value, at, analysis, depth) for element in value.elements)
        if not isinstance(value, cst.Name):
            return True
        return self._name_may_carry(value.value, at, analysis, depth)

    def _operands(self, call: cst.Call, analysis: ScopeAnalysis) -> Optional[List[cst.BaseExpression]]:
        """What the result of a tensor method or a torch function is computed from (the receiver of
        ``out.view(-1, n)``, both tensors of ``a.matmul(b)``, the arguments of ``torch.cat``); none
        for a method whose result carries no history (``.argmax()``); None for another call."""
        func = call.func
        arguments = [argument.value for argument in call.args]
        if any(is_torch_tensor_function(q) for q in self._names(func)):
            return arguments
        if isinstance(func, cst.Attribute) and not analysis.tensors.is_module(func):
            method = func.attr.value
            if method in HISTORY_FREE_METHODS:
                return []
            if method in LAYOUT_METHODS | DEVICE_KEEPING_TENSOR_METHODS | ELEMENTWISE_METHODS:
                return [func.value]
            if method in BINARY_TENSOR_METHODS:
                return [func.value, *arguments]
        return None

    def _name_may_carry(self, name: str, at: cst.CSTNode, analysis: ScopeAnalysis, depth: int) -> bool:
        if name == "self" or name in self._backward_names_in(analysis.node):
            return True
        statement = _small_statement(self, at)
        step = analysis.step_of(statement) if statement is not None else None
        if step is None:
            return True
        valued = analysis.holding_before(step, lambda bound, _value: bound == name)
        if name not in valued:
            return name not in self._batch_names(at)
        carrying = analysis.holding_before(
            step, lambda bound, bound_value: bound == name and not self._grad_off(bound_value)
            and (self._accumulating_loop is None or self._inside(bound_value, self._accumulating_loop))
            and self._may_carry(bound_value, bound_value, analysis, depth + 1),
        )
        return name in carrying

    def _backward_names_in(self, scope: cst.CSTNode) -> Set[str]:
        """The names ``.backward()`` is called on in ``scope``, read once for each scope."""
        if id(scope) not in self._scope_backward_names:
            self._scope_backward_names[id(scope)] = _backward_names(scope)
        return self._scope_backward_names[id(scope)]

    def _batch_names(self, node: cst.CSTNode) -> Set[str]:
        """The names bound by the targets of the loops around ``node`` that draw batches."""
        names: Set[str] = set()
        current = self._parent(node)
        while not isinstance(current, (cst.Module, cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            if isinstance(current, cst.For) and _draws_batches(current):
                names |= _plain_names(current.target)
            current = self._parent(current)
        return names

    def _calls_grad_free_function(self, call: cst.Call) -> bool:
        """Whether ``call`` calls a function of the module whose every result carries no history
        (:attr:`~gpulint.semantic.history.AutogradHistory.grad_free`: a feature extractor that
        switches gradients off in its own body)."""
        model, found = self.context.model, self._model_call(call)
        if model is None or found is None:
            return False
        return model.callee(found) in model.derived(AutogradHistory).grad_free

    def _given_only_detached(self, call: cst.Call) -> bool:
        """A criterion or functional call given only detached values (by the model's reading of the
        same call: :func:`~gpulint.semantic.detached.only_detached`)."""
        found = self._model_call(call)
        return found is not None and only_detached(found)

    def _helper_may_keep_gradients(self, call: cst.Call) -> bool:
        """Whether the function ``call`` calls may run with gradients on (its output then carries history)."""
        model = self.context.model
        return model is not None and self.span(call.func) in model.derived(AutogradHistory).helper_calls_with_history

    @staticmethod
    def _outlives_iteration(accumulated: str, loop: cst.CSTNode) -> bool:
        """An attribute, or a name the loop body never binds afresh (``acc = []`` inside the loop
        starts a new accumulator each iteration; ``acc = acc + x`` does not)."""
        return "." in accumulated or accumulated not in _bound_afresh_in(loop)

    def _backpropagated(self, accumulated: str, analysis: ScopeAnalysis) -> bool:
        """Gradient accumulation: the accumulator, or a value computed from it, reaches a backward
        pass (``.backward()``, ``accelerator.backward(x)``, ``torch.autograd.grad(x, ...)``) or an
        update helper (:func:`_handed_to_an_update`) — or it is returned from a function whose result
        the module backpropagates."""
        derived = _computed_from(accumulated, analysis.node)
        inputs = [*_backward_inputs(analysis.node, self._names), *_handed_to_an_update(analysis.node)]
        if any(_names_of(expression) & derived for expression in inputs):
            return True
        if isinstance(analysis.node, cst.FunctionDef) and _returns_any(analysis.node, derived):
            return self._result_backpropagated(analysis.node)
        return False

    def _result_backpropagated(self, function: cst.FunctionDef) -> bool:
        """Whether a backward pass in the module may start from the function's result (by the model)."""
        model = self.context.model
        code_range = self.get_metadata(PositionProvider, function, None)
        if model is None or code_range is None:
            name = function.name.value
            return any(name in _names_of(expression) | _called_names(expression)
                       for expression in _backward_inputs(self.context.module, self._names))
        start = (code_range.start.line, code_range.start.column)
        return any(model.span(found.node)[:2] == start for found in model.derived(backpropagated_functions))


def _accumulated_values(survey: Survey) -> Iterator[Tuple[ast.AST, ast.expr]]:
    """(statement or call, value) for the values the rule's visitors may check: those added or
    appended inside a loop."""
    for augmented in survey.nodes(ast.AugAssign):
        if isinstance(augmented.op, ast.Add) and survey.in_loop(augmented):
            yield augmented, augmented.value
    for assign in survey.nodes(ast.Assign):
        if len(assign.targets) != 1 or not survey.in_loop(assign):
            continue
        target, value = assign.targets[0], assign.value
        if isinstance(target, ast.Subscript) and not _constant_ast_key(target):
            yield assign, value
        elif isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add) and ast_dotted_name(target):
            accumulator = ast_dotted_name(target)
            yield from ((assign, other) for own, other in ((value.left, value.right), (value.right, value.left))
                        if _scaled_ast(own, accumulator))
    for call in survey.method_calls(*APPENDING_METHODS):
        if survey.in_loop(call):
            yield from ((call, value) for value in argument_values(call))


def _scaled_ast(own: ast.expr, accumulator: Optional[str]) -> bool:
    """:func:`_scaled` on Python's own tree."""
    if isinstance(own, ast.BinOp) and isinstance(own.op, (ast.Mult, ast.Div)):
        return _scaled_ast(own.left, accumulator) or (isinstance(own.op, ast.Mult) and _scaled_ast(own.right, accumulator))
    return accumulator is not None and ast_dotted_name(own) == accumulator


def _scaled(own: cst.BaseExpression, accumulator: str) -> bool:
    """Whether ``own`` is the accumulator, or the accumulator multiplied or divided
    (``avg * n / (n + 1)`` of a running mean ``avg = loss / (n + 1) + avg * n / (n + 1)``): what is
    added to it then piles up in it all the same."""
    if isinstance(own, cst.BinaryOperation) and isinstance(own.operator, (cst.Multiply, cst.Divide)):
        return _scaled(own.left, accumulator) or (isinstance(own.operator, cst.Multiply) and _scaled(own.right, accumulator))
    return dotted_name(own) == accumulator


def _names_collation(name: str) -> bool:
    """A function or class named for assembling a batch (``collate_padded``, ``PadCollateFn``)."""
    return bool(HELPER_FUNCTION.fullmatch(name))


def _is_forward(scope_node: cst.CSTNode) -> bool:
    """A model's forward pass (``forward``, ``forward_features``...): the outputs it collects are
    what the caller backpropagates through, not history kept by mistake."""
    return isinstance(scope_node, cst.FunctionDef) and (
        scope_node.name.value == "forward" or scope_node.name.value.startswith("forward_")
    )


def _constant_ast_key(target: ast.Subscript) -> bool:
    """:func:`_constant_key` on Python's own tree."""
    key = target.slice
    return isinstance(key, ast.JoinedStr) or (
        isinstance(key, ast.Constant) and isinstance(key.value, (str, bytes, int, float, complex)) and not isinstance(key.value, bool)
    )


def _constant_key(target: cst.Subscript) -> bool:
    """``metrics["loss"] = x`` overwrites one entry each iteration: nothing accumulates."""
    return len(target.slice) == 1 and isinstance(target.slice[0].slice, cst.Index) and isinstance(
        target.slice[0].slice.value, (cst.BaseString, cst.BaseNumber)
    )


def _names_of(node: cst.CSTNode) -> Set[str]:
    return {name for name in (dotted_name(n) for n in subexpressions(node)) if name}


def _called_names(node: cst.CSTNode) -> Set[str]:
    return {
        n.func.value if isinstance(n.func, cst.Name) else n.func.attr.value
        for n in subexpressions(node)
        if isinstance(n, cst.Call) and isinstance(n.func, (cst.Name, cst.Attribute))
    }


def _computed_from(name: str, scope_node: cst.CSTNode) -> Set[str]:
    """``name`` and every name bound (in the scope) to a value computed from it, or holding it in a
    container (``d[k] = x``, ``results.append(x)``), transitively, also in nested functions: there a
    name the nested function binds itself (a parameter, an assignment without ``global`` or
    ``nonlocal``) is its own, so a loss module's ``loss = class_loss + loc_loss`` computes nothing
    from the script's ``class_loss``, while a closure's ``mean = torch.stack(pending).mean()`` does
    from the scope's ``pending``."""
    derived = {name}
    own = _nested_locals(scope_node)
    nodes = [n for n in subexpressions(scope_node) if isinstance(n, (cst.Assign, cst.AugAssign, cst.Call))]
    changed = True
    while changed:
        changed = False
        for node in nodes:
            shadowed = own.get(id(node), set())
            if isinstance(node, cst.Call):
                if not (isinstance(node.func, cst.Attribute) and node.func.attr.value in STORING_METHODS):
                    continue
                receiver = dotted_name(node.func.value)
                if receiver is None or not any((_names_of(arg.value) - shadowed) & derived for arg in node.args):
                    continue
                if receiver not in derived:
                    derived.add(receiver)
                    changed = True
                continue
            if not (_names_of(node.value) - shadowed) & derived:
                continue
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            for target in targets:
                for bound in _target_names(target):
                    if bound not in derived:
                        derived.add(bound)
                        changed = True
    return derived


def _target_names(target: cst.BaseExpression) -> Set[str]:
    """What an assignment target binds: a name or attribute whole (``self.best`` of ``self.best =
    x``, not ``self``), the container of a subscript (``d`` of ``d[k] = x``), each element of an
    unpacking."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return {name for element in target.elements for name in _target_names(element.value)}
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    if isinstance(target, cst.Subscript):
        return _target_names(target.value)
    dotted = dotted_name(target)
    return {dotted} if dotted else set()


def _nested_locals(scope_node: cst.CSTNode) -> Dict[int, Set[str]]:
    """For each node inside a function nested in the scope (by ``id``), the names the innermost
    such function binds itself: its parameters and the names it assigns or loops over, less those
    it declares ``global`` or ``nonlocal``."""
    found: Dict[int, Set[str]] = {}

    def local_names(function: Union[cst.FunctionDef, cst.Lambda]) -> Set[str]:
        names = {param.name.value for param in _parameters(function.params)}
        declared: Set[str] = set()
        for node in subexpressions(function.body, nested=False):
            if isinstance(node, (cst.Global, cst.Nonlocal)):
                declared.update(item.name.value for item in node.names)
            elif isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
                names.update(bound for target in targets for bound in _plain_names(target))
            elif isinstance(node, (cst.For, cst.CompFor)):
                names.update(_plain_names(node.target))
        return names - declared

    def visit(node: cst.CSTNode, shadowed: Set[str]) -> None:
        if node is not scope_node and isinstance(node, (cst.FunctionDef, cst.Lambda)):
            shadowed = shadowed | local_names(node)
        if shadowed:
            found[id(node)] = shadowed
        for child in node.children:
            visit(child, shadowed)

    visit(scope_node, set())
    return found


def _parameters(params: cst.Parameters) -> List[cst.Param]:
    star = [params.star_arg] if isinstance(params.star_arg, cst.Param) else []
    kwargs = [params.star_kwarg] if params.star_kwarg is not None else []
    return [*params.posonly_params, *params.params, *star, *params.kwonly_params, *kwargs]


def _backward_inputs(scope_node: cst.CSTNode, qualified_names) -> List[cst.CSTNode]:
    """The expressions a backward pass starts from: receivers of ``.backward()`` and arguments of
    any call whose name mentions backward (``accelerator.backward``, ``manual_backward``), of
    ``torch.autograd.grad`` and ``torch.autograd.backward``."""
    found: List[cst.CSTNode] = []
    for node in subexpressions(scope_node):
        if not isinstance(node, cst.Call):
            continue
        name = dotted_name(node.func) or ""
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "backward":
            found.append(node.func.value)
        if "backward" in name.split(".")[-1] or qualified_names(node.func) & AUTOGRAD_ENTRY_POINTS:
            found.extend(arg.value for arg in node.args)
    return found


def _returns_any(function: cst.FunctionDef, names: Set[str]) -> bool:
    """Whether the function returns or yields a value that mentions one of ``names``."""
    return any(
        isinstance(node, (cst.Return, cst.Yield)) and node.value is not None and _names_of(node.value) & names
        for node in subexpressions(function.body)
    )


def _parenthesized(value: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) or value.lpar:
        return value
    return value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _detached(value: cst.BaseExpression) -> bool:
    return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in (
        "detach", "item", "tolist", "cpu", "numpy",
    )


def _small_statement(owner: Rule, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    current: Optional[cst.CSTNode] = node
    while current is not None and not isinstance(current, cst.BaseSmallStatement):
        current = owner.get_metadata(ParentNodeProvider, current, None)
    return current


def _backward_names(loop: cst.CSTNode) -> Set[str]:
    return {
        node.func.value.value for node in subexpressions(loop)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "backward"
        and isinstance(node.func.value, cst.Name)
    }


LOADER_WORDS = frozenset({"loader", "loaders", "dataloader", "dataloaders", "dl", "iterator", "dataset", "datasets", "ds"})
"""Words of a name that holds a loader or a dataset, whose loop draws batches of its own."""


def _plain_names(target: cst.BaseExpression) -> Set[str]:
    """The names a target binds itself (``a`` and ``b`` of ``a, b``; not ``self`` of ``self.x``)."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {name for element in target.elements for name in _plain_names(element.value)}
    if isinstance(target, cst.StarredElement):
        return _plain_names(target.value)
    return set()


def _draws_batches(loop: Union[cst.For, cst.While]) -> bool:
    """A ``for`` loop over something named for batches or a loader (through ``enumerate``, ``tqdm``,
    ``zip``...; in ``range(...)`` only what ``len(...)`` counts: ``range(len(dataset))`` draws
    samples, ``range(n_batches)`` over chunks of one input does not), or a loop whose body draws
    with ``next(...)``."""
    if isinstance(loop, cst.For):
        named: List[cst.CSTNode] = [loop.iter]
        if isinstance(loop.iter, cst.Call) and isinstance(loop.iter.func, cst.Name) and loop.iter.func.value == "range":
            named = [node for node in subexpressions(loop.iter) if _is_len_call(node)]
        nodes = [node for part in named for node in subexpressions(part)]
        names = [n.value for n in nodes if isinstance(n, cst.Name)]
        names += [n.attr.value for n in nodes if isinstance(n, cst.Attribute)]
        if any(name_words(name) & BATCH_WORDS for name in names):
            return True
    return any(
        isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "next"
        for node in subexpressions(loop.body)
    )


def _a_step(node: cst.CSTNode) -> bool:
    """A ``.step()`` call (of an optimizer, a scheduler or a scaler)."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "step"


def _bound_names(statement: cst.CSTNode) -> Set[str]:
    """The names a statement assigns (``x = ...``, ``x += ...``, ``x: T = ...``), at any depth."""
    names: Set[str] = set()
    for node in subexpressions(statement):
        if isinstance(node, cst.Assign):
            names.update(name for target in node.targets for name in _plain_names(target.target))
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            names.update(_plain_names(node.target))
    return names


def _starts_afresh(statement: cst.CSTNode, name: str) -> bool:
    """``name = 0`` (or ``0.0``, ``[]``) as a statement: a total started from nothing."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    return any(
        isinstance(small, cst.Assign) and len(small.targets) == 1 and dotted_name(small.targets[0].target) == name
        and isinstance(small.value, (cst.Integer, cst.Float, cst.List)) and not getattr(small.value, "elements", None)
        for small in statement.body
    )


def _handed_to_an_update(scope_node: cst.CSTNode) -> List[cst.BaseExpression]:
    """The other arguments of a call named for an update (``optimize``, ``update``, ``step``) that is
    handed an optimizer, named for one (``self.optimize(self.dis_opt, d_loss, self.dis)``,
    ``update_step(optimizer, loss)``): such a helper, of this module or another, runs the update, and
    backpropagates the loss it is given. A call that only saves or logs (``save_checkpoint(model,
    optimizer, total)``) is no update."""
    found: List[cst.BaseExpression] = []
    for node in subexpressions(scope_node):
        if not isinstance(node, cst.Call) or not UPDATE_CALL.search((dotted_name(node.func) or "").split(".")[-1]):
            continue
        given = [argument.value for argument in node.args]
        if any(name_words(dotted_name(value) or "") & OPTIMIZER_WORDS for value in given):
            found.extend(value for value in given if not name_words(dotted_name(value) or "") & OPTIMIZER_WORDS)
    return found


def _optimizer_step(node: cst.CSTNode) -> bool:
    """``optimizer.step()``, ``opt.step()``: a step whose receiver is named for an optimizer."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and bool(
        name_words(dotted_name(node.func.value) or "") & OPTIMIZER_WORDS
    )


def _is_len_call(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "len"


def _bound_afresh_in(loop: cst.CSTNode) -> Set[str]:
    """Names the loop body binds to values that do not read them (``x = []``, ``total, count = 0, 0``;
    not ``x = x + y``)."""
    names: Set[str] = set()
    for node in subexpressions(getattr(loop, "body", loop)):
        if isinstance(node, cst.Assign):
            read = {n.value for n in subexpressions(node.value) if isinstance(n, cst.Name)}
            names.update(name for t in node.targets for name in _plain_names(t.target) if name not in read)
    return names
