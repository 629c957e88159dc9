"""GPU003: ``torch.cuda.empty_cache()`` called while dead tensors are still bound to names."""

from __future__ import annotations

import functools
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider

from gpulint.edits import statements
from gpulint.edits.statements import MODULE_LEVEL_DELETION, NO_STATEMENT_BOUNDARY, NOT_DELETABLE
from gpulint.analysis import scope
from gpulint.analysis.scope import GRAPH_KEEPING_ARGUMENTS, ScopeAnalysis
from gpulint.analysis.tensors import subexpressions
from gpulint.analysis.cfg import Step
from gpulint.engine.diagnostics import Applicability, FixOutcome, NoFix
from gpulint.engine.rule import FixAvailability, Rule
from gpulint.semantic.class_scores import class_scores, reduced_rows_of
from gpulint.semantic.cpu_device import keeps_everything_on_the_cpu
from gpulint.semantic.torch_api import AUTOGRAD_ENTRY_POINTS, EMPTY_CACHE


def _target_names(target: cst.BaseExpression) -> Set[str]:
    """The names an assignment target binds (through tuples, lists and starred elements)."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return set().union(*(_target_names(element.value) for element in target.elements))
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return set()


def _stored_names(node: cst.CSTNode) -> Set[str]:
    """Every name a statement or block binds anywhere in it (assignments, loops, ``with ... as``,
    ``match`` patterns)."""
    found: Set[str] = set()
    for child in subexpressions(node):
        if isinstance(child, cst.AssignTarget):
            found |= _target_names(child.target)
        elif isinstance(child, cst.AnnAssign):
            found |= _target_names(child.target)
        else:
            found |= _bound_otherwise(child)
    return found


def _bound_otherwise(node: cst.CSTNode) -> Set[str]:
    """The names one node binds other than by a plain assignment: ``name += x``, a loop target,
    ``(name := x)``, ``as name``, a ``match`` pattern's capture."""
    if isinstance(node, (cst.AugAssign, cst.For, cst.NamedExpr)):
        return _target_names(node.target)
    if isinstance(node, cst.AsName):
        return _target_names(node.name)
    if isinstance(node, (cst.MatchAs, cst.MatchStar)) and node.name is not None:
        return {node.name.value}
    if isinstance(node, cst.MatchMapping) and node.rest is not None:
        return {node.rest.value}
    return set()


class _Reads(cst.CSTVisitor):
    """The names an expression reads: not an attribute's name, nor a keyword argument's."""

    def __init__(self) -> None:
        self.names: Set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False


def _names_read(value: cst.BaseExpression) -> Set[str]:
    """The names ``value`` reads from the scope: not those a comprehension or lambda in it binds."""
    reads = _Reads()
    value.visit(reads)
    own: Set[str] = set()
    for child in subexpressions(value):
        if isinstance(child, cst.CompFor):
            own |= _target_names(child.target)
        elif isinstance(child, cst.Param):
            own.add(child.name.value)
    return reads.names - own


def _assigned_value(statement: cst.CSTNode, name: str) -> Optional[cst.BaseExpression]:
    """The value ``statement`` assigns to ``name`` plainly (``name = value``, also unpacked from a
    tuple, or annotated): the last such small statement of a line; None for anything else."""
    smalls = statement.body if isinstance(statement, cst.SimpleStatementLine) else [statement]
    for small in reversed(list(smalls)):
        if isinstance(small, cst.Assign) and any(name in _target_names(target.target) for target in small.targets):
            return small.value
        if isinstance(small, cst.AnnAssign) and small.value is not None and name in _target_names(small.target):
            return small.value
        if name in _stored_names(small):
            return None
    return None


def _plain_assignments_within(statement: cst.CSTNode, name: str) -> Optional[List[cst.BaseExpression]]:
    """The values a statement assigns to ``name`` by plain assignments anywhere in it (a branch, a
    ``with`` or ``try`` block, a nested loop); None where it also binds the name another way
    (``name += x``, a loop target, ``with ... as name``, ``(name := x)``, a ``match`` pattern
    capturing it), which may carry the value the name had."""
    values: List[cst.BaseExpression] = []
    for child in subexpressions(statement):
        if isinstance(child, cst.Assign):
            if any(name in _target_names(target.target) for target in child.targets):
                values.append(child.value)
        elif isinstance(child, cst.AnnAssign):
            if child.value is not None and name in _target_names(child.target):
                values.append(child.value)
        elif name in _bound_otherwise(child):
            return None
    return values


def _binds_on_every_path(statement: cst.CSTNode, name: str) -> bool:
    """Whether every way through ``statement`` that goes on past it binds ``name`` by a plain
    assignment: an ``if`` whose branches (each ``elif`` and an ``else``) all do, or a ``with``
    block that does (:func:`_block_binds`)."""
    if isinstance(statement, cst.If):
        if isinstance(statement.orelse, cst.If):
            rest = _binds_on_every_path(statement.orelse, name)
        else:
            rest = statement.orelse is not None and _block_binds(statement.orelse.body, name)
        return rest and _block_binds(statement.body, name)
    return isinstance(statement, cst.With) and _block_binds(statement.body, name)


def _block_binds(block: cst.BaseSuite, name: str) -> bool:
    """Whether a block, run to its end, binds ``name``: a statement at its top level assigns it
    plainly (``name = value``, also unpacked from a tuple), or binds it on every way through."""
    statements: Sequence[cst.CSTNode] = block.body if isinstance(block, cst.IndentedBlock) else [block]
    for statement in statements:
        smalls = statement.body if isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else []
        if any(
            isinstance(small, cst.Assign) and any(name in _target_names(target.target) for target in small.targets)
            or isinstance(small, cst.AnnAssign) and small.value is not None and name in _target_names(small.target)
            for small in smalls
        ) or _binds_on_every_path(statement, name):
            return True
    return False


_BINDING_NODES = (
    cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For, cst.NamedExpr, cst.AsName, cst.MatchAs, cst.MatchStar,
    cst.MatchMapping,
)
"""Nodes that bind names in their scope."""


def _bound_by(node: cst.CSTNode) -> Set[str]:
    """The names one binding node binds."""
    if isinstance(node, cst.Assign):
        return set().union(*(_target_names(target.target) for target in node.targets))
    if isinstance(node, cst.AnnAssign):
        return _target_names(node.target)
    return _bound_otherwise(node)


def _code(node: cst.CSTNode) -> str:
    """The source text of ``node`` alone, as a key to compare conditions by."""
    return cst.Module([]).code_for_node(node)


def _chain(node: cst.BaseExpression) -> Optional[List[str]]:
    """The parts of a name or of an attribute chain on one (``self.opts.cpu_cache``), else None."""
    parts: List[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if not isinstance(node, cst.Name):
        return None
    parts.append(node.value)
    return parts[::-1]


def _may_change(target: cst.BaseExpression, flag: List[str]) -> bool:
    """Whether storing to or deleting ``target`` may change the value of ``flag``: the flag itself,
    an object it is read from (``self.opts`` or ``self`` for ``self.opts.cpu_cache``), or an
    attribute of the flag's name on any object, which may be an alias (``opts.cpu_cache``)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return any(_may_change(element.value, flag) for element in target.elements)
    if isinstance(target, cst.StarredElement):
        return _may_change(target.value, flag)
    chain = _chain(target)
    if chain is None:
        return False
    return chain == flag[: len(chain)] or (len(flag) > 1 and len(chain) > 1 and chain[-1] == flag[-1])


def _stores(node: cst.CSTNode) -> List[cst.BaseExpression]:
    """What one node stores to or deletes (outside loop targets and ``:=``): an assignment's
    targets, ``x += ...``, ``del x``, ``as x``, a ``match`` pattern's capture."""
    if isinstance(node, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.Del)):
        return [node.target]
    if isinstance(node, cst.AsName):
        return [node.name]
    if isinstance(node, (cst.MatchAs, cst.MatchStar)) and node.name is not None:
        return [node.name]
    if isinstance(node, cst.MatchMapping) and node.rest is not None:
        return [node.rest]
    return []


def _opens(node: cst.CSTNode, flag: List[str]) -> bool:
    """Whether ``node`` reaches into the flag's value (``pending.append(x)``, ``flags[0] = x``), which
    a container or an object may change in place without any assignment to the flag."""
    return isinstance(node, (cst.Attribute, cst.Subscript)) and _chain(node.value) == flag


def _sets_attributes_by_name(node: cst.CSTNode) -> bool:
    """Whether ``node`` calls ``setattr``, which may change any attribute."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "setattr"


def _declares(node: cst.CSTNode, name: str) -> bool:
    """Whether ``node`` is a ``global`` or ``nonlocal`` statement for ``name``, which lets another
    function change it."""
    return isinstance(node, (cst.Global, cst.Nonlocal)) and any(item.name.value == name for item in node.names)


def _returns(statement: cst.CSTNode) -> bool:
    """A ``return`` statement (with nothing else on its line)."""
    return isinstance(statement, cst.SimpleStatementLine) and all(isinstance(small, cst.Return) for small in statement.body)


def _run_by_every_pass(block: cst.BaseSuite) -> List[cst.CSTNode]:
    """The statements of a loop's body that every pass going on past them runs: those at its top
    level and, in turn, in ``with`` blocks there."""
    found: List[cst.CSTNode] = []
    for statement in block.body if isinstance(block, cst.IndentedBlock) else [block]:
        found.append(statement)
        if isinstance(statement, cst.With):
            found.extend(_run_by_every_pass(statement.body))
    return found


def _frees_a_graph(rule: Rule, statement: cst.CSTNode) -> bool:
    """A statement that is one call starting a backward pass that frees its graph as it runs:
    ``x.backward()`` on any expression (``scaler.scale(loss).backward()``), a function or method
    whose name ends in ``backward`` (``accelerator.backward(loss)``), or ``torch.autograd.backward``;
    none given an argument that keeps the graph or extends it (``retain_graph``, ``create_graph``)."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return False
    small = statement.body[0]
    if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
        return False
    call, func = small.value, small.value.func
    named = (func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else "")
    starts = named.endswith("backward") or bool(rule.qualified_names(func) & AUTOGRAD_ENTRY_POINTS)
    return starts and not any(arg.keyword is not None and arg.keyword.value in GRAPH_KEEPING_ARGUMENTS for arg in call.args)


def _numbers_only(value: Optional[cst.BaseExpression]) -> bool:
    """A number, or a container literal or comprehension of numbers (``0.0``, ``[0, 0]``,
    ``{key: 0.0 for key in keys}``): a start that holds no tensor."""
    if isinstance(value, (cst.Integer, cst.Float)):
        return True
    if isinstance(value, cst.UnaryOperation):
        return _numbers_only(value.expression)
    if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
        return all(_numbers_only(element.value) for element in value.elements if isinstance(element, cst.Element))
    if isinstance(value, cst.Dict):
        return all(isinstance(element, cst.DictElement) and _numbers_only(element.value) for element in value.elements)
    if isinstance(value, cst.DictComp):
        return _numbers_only(value.value)
    if isinstance(value, (cst.ListComp, cst.SetComp)):
        return _numbers_only(value.elt)
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

    def visit_Module(self, node: cst.Module) -> None:
        self._fresh_values: Dict[int, bool] = {}
        """Per value node (by ``id``), whether the loop's pass makes it afresh (:meth:`_fresh`)."""
        self._spent_values: Dict[int, bool] = {}
        """Per value node (by ``id``), whether it is computed from spent outputs only
        (:meth:`_computed_from_spent_values`)."""

    def visit_Call(self, node: cst.Call) -> None:
        names = self.qualified_names(node.func)
        if not names or not names <= EMPTY_CACHE:
            return
        statement = self.get_metadata(ParentNodeProvider, node)
        if not (isinstance(statement, cst.Expr) and statement.value is node) or self._keeps_everything_on_the_cpu:
            return
        analysis = self.context.analyses.of(self, node)
        step = analysis.step_of(statement) if analysis else None
        if analysis is None or step is None or self._ends_the_script(statement):
            return
        dead = self._dead_tensor_names(analysis, step, self._ends_its_function(statement))
        if dead:
            self.report(node, self.message.format(names=_quoted(dead)), self._fix(analysis, step, statement, dead))

    def _ends_the_script(self, statement: cst.Expr) -> bool:
        """Whether the call is the last statement a script runs: at its top level (in ``if``
        branches and ``with`` blocks there, ``if __name__ == "__main__":`` too), with nothing after
        it in any block around it. The process exits next and the driver takes back all its
        memory, so a ``del`` first frees nothing anyone could use. Not in a notebook, whose kernel
        keeps every name and the cache after its last cell."""
        if self.context.path.endswith(".ipynb"):
            return False
        return isinstance(self._run_ended_by(statement, lambda following: False), cst.Module)

    def _dead_tensor_names(self, analysis: ScopeAnalysis, step: Step, ends_the_function: bool) -> List[str]:
        """Names holding device memory worth releasing (forward outputs and values computed from
        them, losses, checkpoints loaded to the device, modules built on it, weights — not token
        ids, masks or inputs, nor one pass's outputs of a loop run without a graph
        (:meth:`_one_pass_without_graph`), nor, where the call ends its function
        (:meth:`_ends_its_function`), one pass's outputs of a training loop whose graph a backward
        pass freed (:meth:`_one_pass_backpropagated`); nor, wherever the call is, such outputs that the
        module reduces to one class per row (:attr:`_class_scores`: a classifier's scores, a few
        numbers per example), or the classes and top scores picked from them) that nothing reads
        after ``step``, and that ``del`` would
        free: not parameters, not stored on an object or in a container, not held by a container
        or an object built with it that stays alive (``kwargs = dict(input_ids=ids)``,
        ``trainer = SFTTrainer(model=model)``, ``optimizer = AdamW(model.parameters())``: such a dead
        object, no tensor itself, is listed with what it holds, and deleted with it). None where
        every such name is a loss whose backward pass has freed its graph, which holds one number
        (:meth:`~ScopeAnalysis.backpropagated_before`); with other names, it is deleted too."""
        substantial, replaced = set(analysis.device_memory_names()), analysis.replaced_weights()
        scores = self._class_scores
        spent_scores = analysis.holding_before(
            step, lambda name, value: name in scores and self._one_pass_backpropagated(analysis, value)
        ) if scores else frozenset()
        holding_memory = analysis.holding_before(
            step, lambda name, value: analysis.tensors.holds_device_memory(value, substantial, replaced)
            and not self._one_pass_without_graph(analysis, name, value)
            and not ((ends_the_function or name in scores) and self._one_pass_backpropagated(analysis, value))
            and self._reduced_rows_of(value) not in spent_scores
        )
        live = analysis.live_before(step)
        excluded = live | analysis.escaping | set(analysis.parameters) | analysis.stored_elsewhere()
        dead = {name for name in analysis.holding[step] | holding_memory if name not in excluded}
        held_by = analysis.held_by(step)
        dead_holders = {holder for holders in held_by.values() for holder in holders} & analysis.built_objects - excluded
        while True:
            still_held = {name for name in dead if held_by.get(name, frozenset()) - dead - dead_holders}
            if not still_held:
                break
            dead -= still_held
        found = {
            name for name in dead & holding_memory
            if not self._bound_only_where_not_run(analysis, step, name) and not self._bound_only_in_its_try(analysis, step, name)
        }
        if found <= analysis.backpropagated_before(step):
            return []
        holding_found = {holder for name in found for holder in held_by.get(name, frozenset())}
        return analysis.in_binding_order(found | holding_found)

    @functools.cached_property
    def _keeps_everything_on_the_cpu(self) -> bool:
        """Whether the module puts whatever it places on the CPU (:func:`keeps_everything_on_the_cpu`:
        ``device = "cpu"`` and every move naming it), where the cache holds nothing of its own."""
        model = self.context.model
        return model is not None and model.derived(keeps_everything_on_the_cpu)

    @functools.cached_property
    def _class_scores(self) -> FrozenSet[str]:
        """The names the module reduces to one class per row (:func:`class_scores`), read on the
        semantic model, which holds every function of the module."""
        model = self.context.model
        return model.derived(class_scores) if model is not None else frozenset()

    def _reduced_rows_of(self, value: cst.BaseExpression) -> Optional[str]:
        """The name whose rows ``value`` reduces to one class each (``torch.max(outputs, 1)``,
        ``outputs.data.max(1)[1]``: :func:`reduced_rows_of`); None for anything else."""
        while isinstance(value, cst.Subscript):
            value = value.value
        model, span = self.context.model, self.span(value) if isinstance(value, cst.Call) else None
        call = model.call_at(span) if model is not None and span is not None else None
        return reduced_rows_of(model, call) if model is not None and call is not None else None

    def _ends_its_function(self, statement: cst.Expr) -> bool:
        """Whether the call is the last thing its function does: nothing but ``return`` statements
        after it in any block around it (``if`` branches and ``with`` blocks) up to the function's
        body. The function's names die as it returns, so what they hold goes back to the cache a
        moment later with or without a ``del``."""
        return isinstance(self._run_ended_by(statement, _returns), cst.FunctionDef)

    def _run_ended_by(self, statement: cst.Expr, may_follow: Callable[[cst.CSTNode], bool]) -> Optional[cst.CSTNode]:
        """The module or function whose run ``statement`` ends, walking out through ``if`` branches
        and ``with`` blocks with nothing after it in any block but statements ``may_follow``
        passes; None where something else follows it, or a loop, ``try`` or class is around it."""
        node: cst.CSTNode = statement
        while True:
            parent = self.get_metadata(ParentNodeProvider, node, None)
            if isinstance(parent, cst.Else):
                parent = self.get_metadata(ParentNodeProvider, parent, None)
                if not isinstance(parent, cst.If):
                    return None
            elif isinstance(parent, (cst.SimpleStatementLine, cst.IndentedBlock, cst.Module)):
                body = list(parent.body)
                following = body[next(index for index, item in enumerate(body) if item is node) + 1:]
                if not all(may_follow(item) for item in following):
                    return None
                owner = parent if isinstance(parent, cst.Module) else self.get_metadata(ParentNodeProvider, parent, None)
                if isinstance(owner, (cst.Module, cst.FunctionDef)) and not isinstance(parent, cst.SimpleStatementLine):
                    return owner
            elif not isinstance(parent, (cst.If, cst.With)):
                return None
            node = parent

    def _one_pass_backpropagated(self, analysis: ScopeAnalysis, value: cst.BaseExpression) -> bool:
        """Whether ``name = value`` binds one pass's outputs of a training loop whose graph a
        backward pass freed: in a loop of the scope, a value computed from others that loads,
        allocates or builds nothing, made afresh in the pass (:meth:`_fresh`), before a statement
        that every pass going on runs (:func:`_run_by_every_pass`) and that starts a backward pass
        freeing its graph (:func:`_frees_a_graph`: ``loss.backward()``,
        ``scaler.scale(loss).backward()``, ``accelerator.backward(loss)``), or computed without a
        forward pass from such outputs only, after it too (:meth:`_computed_from_spent_values`:
        ``predicted = softmax(logits).argmax(1)``). What stays bound is a batch's outputs, whose
        saved activations that pass freed — logits, embeddings, a loss. ``name += value``
        (``value`` is then ``name + added``) binds such a value when the name is a running total of
        them (:meth:`_running_total_of_spent_values`)."""
        augmented = self._augmented_by(value)
        if augmented is not None:
            return self._running_total_of_spent_values(analysis, augmented)
        statement = self.get_metadata(ParentNodeProvider, value, None)
        if not isinstance(statement, (cst.Assign, cst.AnnAssign)) or analysis.tensors.acquires_memory(value):
            return False
        loop = self._pass_of(analysis, statement)
        start = self._start(statement)
        if loop is None or start is None or not self._fresh(analysis, statement, loop, value):
            return False
        later = [self._start(item) for item in _run_by_every_pass(loop.body) if _frees_a_graph(self, item)]
        if any(backward is not None and backward > start for backward in later):
            return True
        return self._computed_from_spent_values(analysis, statement, loop, value)

    def _computed_from_spent_values(
        self, analysis: ScopeAnalysis, statement: cst.CSTNode, loop: Union[cst.For, cst.While], value: cst.BaseExpression,
    ) -> bool:
        """Whether ``value`` runs no forward pass (a module's call or a helper's output; a layer
        without weights aside) and reads, of the names the loop binds, at least one and only names
        bound earlier in the same pass to one pass's backpropagated outputs
        (:meth:`_one_pass_backpropagated`). Its graph then holds only its own few operations on
        outputs whose saved activations are freed, and it holds no more memory than they do."""
        if analysis.tensors.acquires_memory(value) or any(
            isinstance(node, cst.Call)
            and (analysis.tensors.is_module(node.func) and not analysis.tensors.runs_a_weightless_layer(node)
                 or analysis.tensors.helper_output(node))
            for node in subexpressions(value)
        ):
            return False
        if id(value) in self._spent_values:
            return self._spent_values[id(value)]
        self._spent_values[id(value)] = False
        reads = _names_read(value) & _stored_names(loop.body)
        spent = bool(reads)
        for read in reads:
            bindings = self._bound_earlier_in_the_pass(statement, loop, read)
            if bindings is None or not all(
                not isinstance(binding, (cst.For, cst.While)) and self._one_pass_backpropagated(analysis, binding)
                for binding in bindings
            ):
                spent = False
                break
        self._spent_values[id(value)] = spent
        return spent

    def _augmented_by(self, value: cst.BaseExpression) -> Optional[cst.AugAssign]:
        """The ``name += added`` statement whose binding ``value`` stands for (``name + added``, as
        :class:`ScopeAnalysis` reads it), else None."""
        if not (isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add)):
            return None
        statement = self.get_metadata(ParentNodeProvider, value.right, None)
        return statement if isinstance(statement, cst.AugAssign) and statement.value is value.right else None

    def _running_total_of_spent_values(self, analysis: ScopeAnalysis, augmented: cst.AugAssign) -> bool:
        """Whether the name ``augmented`` adds to is a running total of one pass's backpropagated
        values (``center_total += center_loss`` before ``(center_loss + ce_loss).backward()``):
        every binding of it in the scope either adds, in a loop, a value computed without a forward
        pass from such values only (:meth:`_computed_from_spent_values`), or starts it from
        numbers (``total = 0.0``, ``totals = {key: 0.0 for key in keys}``). It sums one number a
        pass, each graph behind them freed."""
        if not isinstance(augmented.target, cst.Name):
            return False
        name = augmented.target.value
        bindings = self._bindings_of(analysis, name)
        for binding in bindings:
            if isinstance(binding, cst.AugAssign):
                loop = self._pass_of(analysis, binding)
                if not (isinstance(binding.operator, cst.AddAssign) and loop is not None
                        and self._computed_from_spent_values(analysis, binding, loop, binding.value)):
                    return False
            elif not (isinstance(binding, (cst.Assign, cst.AnnAssign)) and _numbers_only(binding.value)):
                return False
        return True

    def _bound_only_where_not_run(self, analysis: ScopeAnalysis, step: Step, name: str) -> bool:
        """Whether every binding of ``name`` in the scope lies in one branch of an ``if`` on a steady
        flag (:meth:`_steady`) and the call in the other branch of an ``if`` on the same flag
        (``if self.cpu_cache: ... empty_cache()`` after ``if self.cpu_cache: ... else: feats_ =
        ...``): no path that runs the call has bound the name."""
        if step.node is None:
            return False
        guards = self._branches_around(analysis, step.node)
        bindings = self._bindings_of(analysis, name)
        return bool(guards) and bool(bindings) and all(
            any(
                (condition, not in_body) in guards
                and self._steady(analysis, condition, (statement, guards[condition, not in_body]))
                for (condition, in_body), statement in self._branches_around(analysis, binding).items()
            )
            for binding in bindings
        )

    @staticmethod
    def _bindings_of(analysis: ScopeAnalysis, name: str) -> List[cst.CSTNode]:
        """The nodes of the scope that bind ``name`` (not in its nested scopes)."""
        return [
            node for node in subexpressions(analysis.node, nested=False)
            if node is not analysis.node and isinstance(node, _BINDING_NODES) and name in _bound_by(node)
        ]

    def _bound_only_in_its_try(self, analysis: ScopeAnalysis, step: Step, name: str) -> bool:
        """Whether the call is in the ``finally`` block of a ``try`` statement and every binding of
        ``name`` in the scope lies in that statement's other parts (``try: output = model(x) ...
        finally: torch.cuda.empty_cache()``): the ``finally`` block also runs where the body stopped
        early, returning or raising before it bound the name, so the name may be unbound there and no
        ``del`` of it can be written."""
        if step.node is None:
            return False
        child, parent = step.node, self.get_metadata(ParentNodeProvider, step.node, None)
        while parent is not None and parent is not analysis.node and not (isinstance(parent, cst.Try) and child is parent.finalbody):
            child, parent = parent, self.get_metadata(ParentNodeProvider, parent, None)
        if not isinstance(parent, cst.Try) or parent.finalbody is None:
            return False
        guarded, finally_block = parent, parent.finalbody
        bindings = self._bindings_of(analysis, name)
        return bool(bindings) and all(self._inside(binding, guarded, finally_block, analysis.node) for binding in bindings)

    def _inside(self, node: cst.CSTNode, statement: cst.Try, excluded: cst.CSTNode, scope: cst.CSTNode) -> bool:
        """Whether ``node`` lies in ``statement`` but not in its part ``excluded``."""
        child, parent = node, self.get_metadata(ParentNodeProvider, node, None)
        while parent is not None and parent is not scope:
            if child is excluded:
                return False
            if parent is statement:
                return True
            child, parent = parent, self.get_metadata(ParentNodeProvider, parent, None)
        return False

    def _branches_around(self, analysis: ScopeAnalysis, node: cst.CSTNode) -> Dict[Tuple[str, bool], cst.If]:
        """The ``if`` statements of the scope around ``node``, by their condition's code and whether
        ``node`` is in the body (else in the ``else`` or ``elif`` part)."""
        found: Dict[Tuple[str, bool], cst.If] = {}
        child, parent = node, self.get_metadata(ParentNodeProvider, node, None)
        while parent is not None and parent is not analysis.node:
            if isinstance(parent, cst.If) and child is not parent.test:
                found.setdefault((_code(parent.test), child is parent.body), parent)
            child, parent = parent, self.get_metadata(ParentNodeProvider, parent, None)
        return found

    def _steady(self, analysis: ScopeAnalysis, condition: str, branches: Tuple[cst.If, cst.If]) -> bool:
        """Whether the condition is a flag that keeps its value from the first of ``branches`` on: a
        name or an attribute chain on one (``self.cpu_cache``) that the scope stores to (itself or
        an object it is read from) only before both statements and outside any loop; that no loop
        target, ``:=``, ``setattr``, ``global`` or ``nonlocal`` may change; and whose value the
        code never reaches into (``pending.append(x)``), as a container changed in place."""
        flag = condition.split(".")
        starts = [self._start(branch) for branch in branches]
        if not all(part.isidentifier() for part in flag) or None in starts:
            return False
        first = min(start for start in starts if start is not None)
        if any(_declares(node, flag[0]) for node in subexpressions(self.context.module)):
            return False
        for node in subexpressions(analysis.node):
            if _opens(node, flag) or (len(flag) > 1 and _sets_attributes_by_name(node)):
                return False
            if isinstance(node, (cst.For, cst.NamedExpr)) and _may_change(node.target, flag):
                return False
            if any(_may_change(target, flag) for target in _stores(node)):
                start = self._start(node)
                if start is None or start >= first or self._pass_of(analysis, node) is not None:
                    return False
        return True

    def _start(self, node: cst.CSTNode) -> Optional[Tuple[int, int]]:
        """Where ``node`` starts, as (line, column), where known."""
        position = self.get_metadata(PositionProvider, node, None)
        return None if position is None else (position.start.line, position.start.column)

    def _one_pass_without_graph(self, analysis: ScopeAnalysis, name: str, value: cst.BaseExpression) -> bool:
        """Whether ``name = value`` binds one pass's outputs of a loop run without a graph: in a
        loop of the scope, with gradients off there, a value computed from others (a forward
        output, arithmetic on one) that loads, allocates or builds nothing
        (:meth:`~gpulint.analysis.tensors.TensorLikeness.acquires_memory`), made afresh in the pass
        (:meth:`_fresh`). Each pass replaces the last, so what stays bound is one pass's outputs,
        with no graph behind them — a batch's logits or restored image, small next to what the
        loop ran through."""
        statement = self.get_metadata(ParentNodeProvider, value, None)
        model = self.context.model
        if model is None or not isinstance(statement, (cst.Assign, cst.AnnAssign, cst.NamedExpr)):
            return False
        if analysis.tensors.acquires_memory(value):
            return False
        loop = self._pass_of(analysis, statement)
        position = self.get_metadata(PositionProvider, statement, None)
        if loop is None or position is None or not model.gradients_off_at(position.start.line, position.start.column):
            return False
        return self._fresh(analysis, statement, loop, value)

    def _fresh(
        self, analysis: ScopeAnalysis, statement: cst.CSTNode, loop: Union[cst.For, cst.While], value: cst.BaseExpression,
    ) -> bool:
        """Whether ``value`` carries nothing from one pass of ``loop`` to the next: every name it
        reads that the loop also assigns is bound anew earlier in the same pass, on every path, by
        the loop's target or by assignments whose values are fresh in turn (``output, aux =
        output`` after ``output = model(x)``; not ``outputs = torch.cat([outputs, output])``, nor
        ``total = running`` after ``running = total + output``, nor a read after ``output +=
        total`` or after a branch that may add ``total`` in, which carry every pass forward). A
        module's forward pass (``model(data)``) makes its output afresh whatever it is given.
        Decided once per value."""
        if id(value) not in self._fresh_values:
            self._fresh_values[id(value)] = False
            carried = set() if isinstance(value, cst.Call) and analysis.tensors.is_module(value.func) else _stored_names(loop.body)
            fresh = True
            for read in _names_read(value) & carried:
                bindings = self._bound_earlier_in_the_pass(statement, loop, read)
                if bindings is None or not all(
                    isinstance(earlier, (cst.For, cst.While))
                    or self._fresh(analysis, self.get_metadata(ParentNodeProvider, earlier, statement), loop, earlier)
                    for earlier in bindings
                ):
                    fresh = False
                    break
            self._fresh_values[id(value)] = fresh
        return self._fresh_values[id(value)]

    def _pass_of(self, analysis: ScopeAnalysis, node: cst.CSTNode) -> Optional[Union[cst.For, cst.While]]:
        """The innermost ``for`` or ``while`` loop of the scope whose body holds ``node``."""
        child, parent = node, self.get_metadata(ParentNodeProvider, node, None)
        while parent is not None and parent is not analysis.node:
            if isinstance(parent, (cst.For, cst.While)) and child is parent.body:
                return parent
            child, parent = parent, self.get_metadata(ParentNodeProvider, parent, None)
        return None

    def _bound_earlier_in_the_pass(
        self, node: cst.CSTNode, loop: Union[cst.For, cst.While], name: str,
    ) -> Optional[List[Union[cst.BaseExpression, cst.For, cst.While]]]:
        """What may bind ``name`` last before ``node`` in one pass of ``loop``: the value of the
        nearest plain assignment earlier in a block that holds ``node`` (up to the loop's body),
        or of the plain assignments in the nearest statement that binds it on every way through
        (:func:`_binds_on_every_path`: ``if``/``else`` branches that each assign it), with the
        values of plain assignments in statements between (a branch, a block that may or may not
        run), else the loop itself where its target binds the name; None where the name may come
        from before the pass, or a statement between binds it another way (``name += x``)."""
        found: List[Union[cst.BaseExpression, cst.For, cst.While]] = []
        child, parent = node, self.get_metadata(ParentNodeProvider, node, None)
        while parent is not None and child is not loop.body:
            body = getattr(parent, "body", None)
            if isinstance(body, Sequence) and any(item is child for item in body):
                earlier = body[: next(index for index, item in enumerate(body) if item is child)]
                for item in reversed(earlier):
                    assigned = _assigned_value(item, name)
                    if assigned is not None:
                        return found + [assigned]
                    if name in _stored_names(item):
                        between = _plain_assignments_within(item, name)
                        if between is None:
                            return None
                        found += between
                        if _binds_on_every_path(item, name):
                            return found
            child, parent = parent, self.get_metadata(ParentNodeProvider, parent, None)
        if isinstance(loop, cst.For) and name in _target_names(loop.target):
            return found + [loop]
        return None

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
