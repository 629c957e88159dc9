"""One scope's analysis, built once per file and shared by every rule that asks for it."""

from __future__ import annotations

import ast
import functools
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Set, Tuple, Union

import libcst as cst
from libcst import MetadataDependent
from libcst.metadata import ParentNodeProvider, PositionProvider, Scope, ScopeProvider

from gpulint.analysis import cfg, dataflow
from gpulint.analysis.cfg import ControlFlowGraph, Step
from gpulint.analysis.escapes import escaping_names
from gpulint.analysis.names import NameResolver, QualifiedNames
from gpulint.analysis.tensors import CRITERION_SUFFIXES, ModuleEvidence, TensorLikeness, dotted_name
from gpulint.semantic.cpu_models import runs_on_the_cpu
from gpulint.semantic.evaluation import builds_a_weightless_layer
from gpulint.semantic.fabricated_inputs import given_only_cpu_fabrications
from gpulint.semantic.kept_loss_storage import storage_keeping_loss_calls
from gpulint.semantic.model import SemanticModel
from gpulint.semantic.torch_api import (
    MODULE_CONVERSIONS, PARAMETER_LISTING_METHODS, WEIGHT_ATTRIBUTES, is_loss_module, is_module_constructor,
)

METADATA_DEPENDENCIES = (
    *cfg.METADATA_DEPENDENCIES, ParentNodeProvider, PositionProvider, ScopeProvider,
)

ScopeNode = Union[cst.Module, cst.FunctionDef]


def _parameter_names(node: ScopeNode) -> Tuple[str, ...]:
    if isinstance(node, cst.Module):
        return ()
    params = node.params
    names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            names.append(star.name.value)
    return tuple(names)


def _declared(node: ScopeNode) -> FrozenSet[str]:
    """Names declared ``global`` or ``nonlocal`` in this scope, or ``nonlocal`` in a nested one."""
    found: Set[str] = set()

    class Declarations(cst.CSTVisitor):
        def __init__(self) -> None:
            super().__init__()
            self.depth = 0

        def visit_FunctionDef(self, inner: cst.FunctionDef) -> None:
            self.depth += 1

        def leave_FunctionDef(self, inner: cst.FunctionDef) -> None:
            self.depth -= 1

        def visit_Global(self, statement: cst.Global) -> None:
            if self.depth <= 1:
                found.update(item.name.value for item in statement.names)

        def visit_Nonlocal(self, statement: cst.Nonlocal) -> None:
            found.update(item.name.value for item in statement.names)

    node.visit(Declarations())
    return frozenset(found)


class ScopeAnalysis:
    """Control flow, liveness, binding, escapes and tensor-likeness for one module or function body."""

    def __init__(
        self,
        owner: MetadataDependent,
        node: ScopeNode,
        names: QualifiedNames,
        modules: FrozenSet[str],
        helper_outputs: FrozenSet[Tuple[int, int, int, int]] = frozenset(),
        storage_keeping_losses: Optional[FrozenSet[Tuple[int, int, int, int]]] = None,
        gradients_off_at: Optional[Callable[[int, int], bool]] = None,
        runs_on_the_cpu_at: Optional[Callable[[Tuple[int, int, int, int]], bool]] = None,
        weightless_layer_at: Optional[Callable[[Tuple[int, int, int, int]], bool]] = None,
    ) -> None:
        self.owner = owner
        self.node = node
        self.is_module = isinstance(node, cst.Module)
        self.parameters = _parameter_names(node)
        body = node if isinstance(node, cst.Module) else node.body
        self._qualified_names = names
        self.graph = ControlFlowGraph(owner, body, names, self.parameters)
        scope = owner.get_metadata(ScopeProvider, body)
        assert scope is not None
        self.scope: Scope = scope
        self.escaping = escaping_names(self.scope, _declared(node))
        self.live_after = dataflow.live_after(self.graph)
        self.definitely_bound = dataflow.definitely_bound(self.graph)
        self.maybe_bound = dataflow.maybe_bound(self.graph)
        self.helper_outputs = helper_outputs
        """Where calls of the module's own functions return a forward output (spans of their ``func``)."""
        self.storage_keeping_losses = storage_keeping_losses
        """Where the module calls a loss whose value keeps the elementwise losses' storage (spans of
        their ``func``: :func:`~gpulint.semantic.kept_loss_storage.storage_keeping_loss_calls`);
        None where that is unknown (no semantic model), and then no backward pass counts as freeing
        what a name holds."""
        self.gradients_off_at = gradients_off_at
        """Whether code at a place (line from 1, column from 0) always runs with gradients off (the
        semantic model's :meth:`~gpulint.semantic.model.SemanticModel.gradients_off_at`); None where
        that is unknown."""
        self.runs_on_the_cpu_at = runs_on_the_cpu_at
        """Whether the forward call at a span (lines and columns of its start and end) runs a model
        the scope still holds on the CPU; None where that is unknown."""
        self.weightless_layer_at = weightless_layer_at
        """Whether the call at a span runs a name every binding of which builds a ``torch.nn`` layer
        without weights; None where that is unknown."""
        self.tensors = TensorLikeness(
            self._qualified_names, modules, self._backward_names(), self.calls_helper_output, self.runs_on_the_cpu,
            self.runs_a_weightless_layer,
        )
        self._learn_tensor_names()
        self.holding = self._holding_tensors()

    def calls_helper_output(self, call: cst.Call) -> bool:
        """Whether ``call`` calls a function of the module that returns a forward output."""
        return self._func_span_in(call, self.helper_outputs)

    def runs_on_the_cpu(self, call: cst.Call) -> bool:
        """Whether ``call`` runs a model the scope still holds on the CPU: its outputs hold no
        device memory, nor does what is computed from them (an operation that mixed them with
        tensors on the device would raise)."""
        if self.runs_on_the_cpu_at is None:
            return False
        span = self._span(call)
        return span is not None and self.runs_on_the_cpu_at(span)

    def runs_a_weightless_layer(self, call: cst.Call) -> bool:
        """Whether ``call`` runs a name every binding of which builds a ``torch.nn`` layer without
        weights (``softmax = nn.Softmax(dim=1)``): what it returns holds only what its input holds."""
        if self.weightless_layer_at is None:
            return False
        span = self._span(call)
        return span is not None and self.weightless_layer_at(span)

    def _func_span_in(self, call: cst.Call, spans: FrozenSet[Tuple[int, int, int, int]]) -> bool:
        return bool(spans) and self._span(call.func) in spans

    def _span(self, node: cst.CSTNode) -> Optional[Tuple[int, int, int, int]]:
        """Where ``node`` starts and ends (lines from 1, columns from 0), as the semantic model
        gives spans; None where it has no position."""
        code_range = self.owner.get_metadata(PositionProvider, node, None)
        if code_range is None:
            return None
        start, end = code_range.start, code_range.end
        return start.line, start.column, end.line, end.column

    def _small_statements(self) -> List[cst.CSTNode]:
        return [step.node for step in self.graph.steps if isinstance(step.node, cst.BaseSmallStatement)]

    def _backward_names(self) -> List[str]:
        names = []
        for statement in self._small_statements():
            if m_backward(statement):
                assert isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call)
                assert isinstance(statement.value.func, cst.Attribute) and isinstance(statement.value.func.value, cst.Name)
                names.append(statement.value.func.value.value)
        return names

    def _bindings(self, statement: cst.CSTNode) -> List[Tuple[str, Optional[cst.BaseExpression]]]:
        """(name, value) for each name a small statement binds; value None when not a plain binding."""
        if isinstance(statement, cst.Assign):
            found: List[Tuple[str, Optional[cst.BaseExpression]]] = []
            for target in statement.targets:
                if isinstance(target.target, cst.Name):
                    found.append((target.target.value, statement.value))
                elif isinstance(target.target, (cst.Tuple, cst.List)):
                    for element in target.target.elements:
                        if isinstance(element.value, cst.Name):
                            found.append((element.value.value, statement.value))
            return found
        if isinstance(statement, cst.AnnAssign) and isinstance(statement.target, cst.Name) and statement.value:
            return [(statement.target.value, statement.value)]
        if isinstance(statement, cst.AugAssign) and isinstance(statement.target, cst.Name):
            return [(statement.target.value, cst.BinaryOperation(statement.target, cst.Add(), statement.value))]
        if isinstance(statement, cst.Expr) and isinstance(statement.value, cst.NamedExpr):
            named = statement.value.target
            if isinstance(named, cst.Name):
                return [(named.value, statement.value.value)]
        return []

    def _learn_tensor_names(self) -> None:
        changed = True
        while changed:
            changed = False
            for statement in self._small_statements():
                for name, value in self._bindings(statement):
                    if value is not None and self.tensors(value):
                        changed = self.tensors.learn(name) or changed

    def _holding_tensors(self) -> Dict[Step, FrozenSet[str]]:
        """For each step, the names that may hold a GPU tensor-like value when it runs (forward, may);
        a binding is judged by the names holding tensors just before it."""
        bindings = {
            step: self._bindings(step.node) for step in self.graph.steps if isinstance(step.node, cst.BaseSmallStatement)
        }

        def transfer(step: Step, before: FrozenSet[str]) -> FrozenSet[str]:
            holding = set(before)
            gens = {
                name for name, value in bindings.get(step, ())
                if value is not None and self.tensors.binds_tensor(name, value, holding)
            }
            return frozenset((before - step.binds - step.deletes) | gens)

        return dataflow.solve_forward_may(self.graph, transfer)

    @property
    def isolation(self) -> str:
        """The key under which fixes that edit this scope's bindings are applied one at a time."""
        if self.is_module:
            return "scope:<module>"
        position = self.owner.get_metadata(PositionProvider, self.node)
        return f"scope:{position.start.line}:{position.start.column}"

    def device_memory_names(self) -> FrozenSet[str]:
        """Names some binding in the scope gives a value holding device memory worth releasing
        (:meth:`TensorLikeness.holds_device_memory`), following values computed from one another."""
        bindings = [(name, value) for step in self.graph.steps if step.node is not None
                    for name, value in self._bindings(step.node) if value is not None]
        replaced = self.replaced_weights()
        found: Set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, value in bindings:
                if name not in found and self.tensors.holds_device_memory(value, found, replaced):
                    found.add(name)
                    changed = True
        return frozenset(found)

    def replaced_weights(self) -> FrozenSet[str]:
        """``layer.weight`` and ``layer.bias`` attributes the scope assigns anew, and submodules it
        replaces by a new module (``net.backbone = quantize_dynamic(net.backbone, ...)``): whatever
        held the old tensor or module is then its only holder."""
        replaced = set()
        for step in self.graph.steps:
            if isinstance(step.node, cst.Assign):
                new_module = self._builds_torch_module(step.node.value)
                for target in step.node.targets:
                    if isinstance(target.target, cst.Attribute) and (target.target.attr.value in WEIGHT_ATTRIBUTES or new_module):
                        name = dotted_name(target.target)
                        if name:
                            replaced.add(name)
        return frozenset(replaced)

    def _builds_torch_module(self, value: cst.BaseExpression) -> bool:
        """A ``torch.nn`` module built, or a module converted into a new one (a quantized copy)."""
        if not isinstance(value, cst.Call):
            return False
        names = self._qualified_names(value.func)
        return bool(names & MODULE_CONVERSIONS) or any(is_module_constructor(q) for q in names)

    def holding_before(self, step: Step, holds: Callable[[str, cst.BaseExpression], bool]) -> FrozenSet[str]:
        """Names that may hold a value for which ``holds(name, value)`` just before ``step``."""
        return self.holding_where(holds)[step]

    def holding_where(self, holds: Callable[[str, cst.BaseExpression], bool]) -> Dict[Step, FrozenSet[str]]:
        """For every step, the names that may hold a value for which ``holds(name, value)`` just
        before it."""
        bindings = {s: self._bindings(s.node) for s in self.graph.steps if s.node is not None}

        def transfer(current: Step, before: FrozenSet[str]) -> FrozenSet[str]:
            gens = {name for name, value in bindings.get(current, ()) if value is not None and holds(name, value)}
            return frozenset((before - current.binds - current.deletes) | gens)

        return dataflow.solve_forward_may(self.graph, transfer)

    @functools.cached_property
    def _graphs_kept(self) -> Dict[Step, FrozenSet[str]]:
        """For each step, the names that may hold, when it runs, a value bound since the last
        backward pass that freed its graph (:func:`graph_released_by`), or never passed through one,
        other than a criterion's loss computed with gradients off (:meth:`_loss_without_graph`),
        which never had one; a name some binding gives a loss that keeps the elementwise losses'
        storage (:attr:`storage_keeping_losses`) keeps it through a backward pass too."""
        spans = self.storage_keeping_losses
        keeping = {
            name for step in self.graph.steps if step.node is not None for name, value in self._bindings(step.node)
            if isinstance(value, cst.Call) and spans is not None and self._func_span_in(value, spans)
        }

        def transfer(step: Step, before: FrozenSet[str]) -> FrozenSet[str]:
            if spans is None or step.node is None:
                return frozenset((before - step.deletes) | step.binds)
            released = graph_released_by(step.node, self.tensors) - keeping
            graph_free = {name for name, value in self._bindings(step.node) if self._loss_without_graph(value)} - keeping
            return frozenset(((before - step.deletes - released) | step.binds) - graph_free)

        return dataflow.solve_forward_may(self.graph, transfer)

    def _loss_without_graph(self, value: Optional[cst.BaseExpression]) -> bool:
        """A criterion's loss computed with gradients off (``loss = criterion(output, y)`` in a
        ``torch.no_grad()`` block): a call of a name bound to a loss module or named for one
        (:attr:`criteria`, ``self.loss_function``), which gives one number, with no graph behind it."""
        if not isinstance(value, cst.Call) or self.gradients_off_at is None:
            return False
        called = dotted_name(value.func) or ""
        if called not in self.criteria and not called.split(".")[-1].lower().endswith(CRITERION_SUFFIXES):
            return False
        position = self.owner.get_metadata(PositionProvider, value, None)
        return position is not None and self.gradients_off_at(position.start.line, position.start.column)

    def backpropagated_before(self, step: Step) -> FrozenSet[str]:
        """Names that, on every path to ``step`` that binds them, were last passed through a backward
        pass freeing their graph (``loss.backward()`` after ``loss = criterion(output, y)``): each
        holds one number, whatever it held before."""
        return self.maybe_bound.get(step, frozenset()) - self._graphs_kept[step]

    @functools.cached_property
    def torch_criteria(self) -> FrozenSet[str]:
        """Names bound to torch loss modules (``criterion = nn.CrossEntropyLoss()``), which hold no
        parameters."""
        found: Set[str] = set()
        for node in (step.node for step in self.graph.steps):
            if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
                names = self._qualified_names(node.value.func)
                if any(is_loss_module(q) for q in names):
                    found.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))
        return frozenset(found)

    @functools.cached_property
    def criteria(self) -> FrozenSet[str]:
        """Names bound to loss modules or functions: torch's (:attr:`torch_criteria`) and modules
        named for one (``criterion``, ``loss_fn``)."""
        return self.torch_criteria | {m for m in self.tensors.modules if m.split(".")[-1].lower().endswith(("criterion", "loss_fn"))}

    def holding_after_statement(
        self,
        statement: cst.CSTNode,
        holds: Callable[[str, cst.BaseExpression], bool],
        gained_by: Callable[[cst.CSTNode], Iterable[str]],
    ) -> FrozenSet[str]:
        """Names that may hold a value for which ``holds(name, value)`` after ``statement`` completes:
        a binding gains a name when ``holds`` says so and loses it otherwise, as does ``del``; a
        statement also gains the names ``gained_by`` it (``d.update(x)`` makes ``d`` hold ``x``)."""
        bindings = {step: self._bindings(step.node) for step in self.graph.steps if step.node is not None}

        def transfer(step: Step, before: FrozenSet[str]) -> FrozenSet[str]:
            gens = {name for name, value in bindings.get(step, ()) if value is not None and holds(name, value)}
            if step.node is not None:
                gens |= set(gained_by(step.node))
            return frozenset((before - step.binds - step.deletes) | gens)

        table = dataflow.solve_forward_may(self.graph, transfer)
        exits = self.graph.exits_of.get(statement, [])
        return frozenset().union(*(transfer(step, table[step]) for step in exits))

    def deletable_after(self, statement: cst.CSTNode, names: FrozenSet[str]) -> bool:
        """Whether ``del names`` could follow ``statement`` without ever finding one unbound: the
        names are bound on every path to that point, including the paths that come back to it
        (a loop) after the ``del`` itself ran."""
        inside = self.graph.steps_in.get(statement, set())
        exits = self.graph.exits_of.get(statement, [])
        deletion = Step(None, deletes=set(names))
        rewired = [(step, successor) for step in exits for successor in step.successors if successor not in inside]
        if not rewired:
            return False
        for step, successor in rewired:
            step.successors[step.successors.index(successor)] = deletion
            successor.predecessors[successor.predecessors.index(step)] = deletion
            deletion.successors.append(successor)
            deletion.predecessors.append(step)
        self.graph.steps.append(deletion)
        try:
            return names <= dataflow.definitely_bound(self.graph)[deletion]
        finally:
            self.graph.steps.remove(deletion)
            for step, successor in rewired:
                step.successors[step.successors.index(deletion)] = successor
                successor.predecessors[successor.predecessors.index(deletion)] = step

    def bound_if_deleted(self, deletions: Dict[Step, FrozenSet[str]]) -> Dict[Step, FrozenSet[str]]:
        """Definitely-bound names, were ``del`` statements added after the given steps."""
        return dataflow.definitely_bound(self.graph, deletions)

    @functools.cached_property
    def built_objects(self) -> FrozenSet[str]:
        """Names every binding of which builds an object of a class (a capitalised call:
        ``trainer = SFTTrainer(model=model)``), which holds what it is built with
        (:func:`_held_by_an_object`) but is no tensor, nor a container of them."""
        values: Dict[str, List[Optional[cst.BaseExpression]]] = {}
        for node in (step.node for step in self.graph.steps if step.node is not None):
            for name, value in self._bindings(node):
                values.setdefault(name, []).append(value)
        return frozenset(name for name, bound in values.items() if all(_builds_an_object(value) for value in bound))

    def stored_elsewhere(self) -> FrozenSet[str]:
        """Names whose value is also put in a container or on an object (``cache.append(x)``,
        ``self.x = x``): deleting the name would not free it."""
        stored = set()
        for node in (step.node for step in self.graph.steps):
            if isinstance(node, cst.Assign):
                if any(isinstance(t.target, (cst.Attribute, cst.Subscript)) for t in node.targets):
                    stored |= _names_in(node.value)
            elif isinstance(node, cst.Expr) and isinstance(node.value, cst.Call):
                call = node.value
                if isinstance(call.func, cst.Attribute) and call.func.attr.value in STORING_METHODS:
                    for arg in call.args:
                        stored |= _names_in(arg.value)
        return frozenset(stored)

    def held_by(self, step: Step) -> Dict[str, FrozenSet[str]]:
        """For each name, the names that may still be bound, when ``step`` runs, to a container
        built with its value (``kwargs = dict(input_ids=ids)``, ``batch = {"x": x}``, ``pair =
        (a, b)``; not once deleted or rebound): while one of them is alive, deleting the name frees
        nothing."""

        def holds_a_container(name: str, value: cst.BaseExpression) -> bool:
            return not isinstance(value, cst.Name) and bool(_names_in(value) - {name})

        contents: Dict[str, set] = {}
        for node in (s.node for s in self.graph.steps if s.node is not None):
            for holder, value in self._bindings(node):
                if value is not None and holds_a_container(holder, value):
                    contents.setdefault(holder, set()).update(_names_in(value) - {holder})
        holders: Dict[str, set] = {}
        for holder in self.holding_before(step, holds_a_container):
            for name in contents.get(holder, ()):
                holders.setdefault(name, set()).add(holder)
        return {name: frozenset(found) for name, found in holders.items()}

    def in_binding_order(self, names) -> List[str]:
        """``names`` ordered by where the scope first binds them."""
        order: Dict[str, int] = {}
        for step in self.graph.steps:
            for name in sorted(step.binds):
                order.setdefault(name, len(order))
        return sorted(set(names), key=lambda name: (order.get(name, len(order)), name))

    def step_of(self, statement: cst.CSTNode) -> Optional[Step]:
        return self.graph.step_of.get(statement)

    def live_before(self, step: Step) -> FrozenSet[str]:
        return dataflow.live_before(step, self.live_after[step])

    def live_after_statement(self, statement: cst.CSTNode) -> FrozenSet[str]:
        """Names that may be read after ``statement`` (a statement of some block of this scope) completes."""
        inside = self.graph.steps_in.get(statement, set())
        live: Set[str] = set()
        for step in self.graph.exits_of.get(statement, []):
            for successor in step.successors:
                if successor not in inside:
                    live |= self.live_before(successor)
        return frozenset(live)

    def bound_after_statement(self, statement: cst.CSTNode, definitely: bool) -> FrozenSet[str]:
        exits = self.graph.exits_of.get(statement, [])
        if not exits:
            return frozenset()
        table = self.definitely_bound if definitely else self.maybe_bound
        values = [(table[step] | step.binds) - step.deletes for step in exits]
        return frozenset.intersection(*values) if definitely else frozenset().union(*values)


STORING_METHODS = frozenset({
    "append", "extend", "insert", "add", "update", "setdefault", "__setitem__", "put", "add_module",
    "register_module", "register_buffer", "register_parameter", "appendleft",
})


CONTAINER_CONSTRUCTORS = frozenset({"dict", "list", "tuple", "set", "frozenset", "OrderedDict", "SimpleNamespace", "deque"})


def _names_in(node: cst.CSTNode) -> set:
    """The bare names a container expression holds (``x``, ``(x, y)``, ``[x]``, ``{"k": x}``,
    ``dict(input_ids=x)``), and those an object built by a class holds (:func:`_held_by_an_object`)."""
    if isinstance(node, cst.Name):
        return {node.value}
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        return set().union(*(_names_in(e.value) for e in node.elements)) if node.elements else set()
    if isinstance(node, cst.Dict):
        return set().union(*(_names_in(e.value) for e in node.elements if isinstance(e, cst.DictElement))) if node.elements else set()
    if isinstance(node, cst.Call) and isinstance(node.func, (cst.Name, cst.Attribute)):
        constructor = node.func.value if isinstance(node.func, cst.Name) else node.func.attr.value
        if constructor in CONTAINER_CONSTRUCTORS:
            return set().union(*(_names_in(arg.value) for arg in node.args)) if node.args else set()
        if _builds_an_object(node):
            return set().union(*(_held_by_an_object(arg.value) for arg in node.args)) if node.args else set()
    return set()


def _builds_an_object(value: Optional[cst.BaseExpression]) -> bool:
    """A call of a capitalised name (``SFTTrainer(...)``, ``torch.optim.AdamW(...)``), not a container
    constructor."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, (cst.Name, cst.Attribute))):
        return False
    called = value.func.value if isinstance(value.func, cst.Name) else value.func.attr.value
    return called[:1].isupper() and called not in CONTAINER_CONSTRUCTORS


def _held_by_an_object(argument: cst.BaseExpression) -> set:
    """The names an object built by a class (a capitalised call: ``SFTTrainer(model=model)``,
    ``DataParallel(net)``, ``AdamW(model.parameters())``) holds through one argument: what the
    argument holds as a container, and a module whose parameters it is given (``model`` of
    ``model.parameters()``), which are most of that module's memory. A trainer, a wrapper or an
    optimizer keeps what it is built with."""
    if (
        isinstance(argument, cst.Call) and isinstance(argument.func, cst.Attribute)
        and argument.func.attr.value in PARAMETER_LISTING_METHODS and isinstance(argument.func.value, cst.Name)
    ):
        return {argument.func.value.value}
    return _names_in(argument)


def m_backward(statement: cst.CSTNode) -> bool:
    """``name.backward(...)`` as a statement."""
    return (
        isinstance(statement, cst.Expr)
        and isinstance(statement.value, cst.Call)
        and isinstance(statement.value.func, cst.Attribute)
        and statement.value.func.attr.value == "backward"
        and isinstance(statement.value.func.value, cst.Name)
    )


GRAPH_KEEPING_ARGUMENTS = frozenset({"gradient", "retain_graph", "create_graph"})
"""Arguments of ``backward`` that keep the graph, extend it, or let the output be more than a scalar."""


def graph_released_by(
    statement: Optional[cst.CSTNode], is_tensor: Callable[[cst.BaseExpression], bool],
) -> FrozenSet[str]:
    """The name whose autograd graph the statement frees: ``name.backward()``, also through a
    ``GradScaler``'s scaled copy (``scaler.scale(name).backward()``, whose graph holds the name's)
    or a function named for a backward pass (``accelerator.backward(name)``,
    ``torch.autograd.backward(name)``; not a method of what ``is_tensor`` says is a tensor, where
    ``output.backward(grad)`` is given a gradient), given no positional argument but the name, nor
    any keyword but ``inputs=``, which only picks the leaves (none of
    :data:`GRAPH_KEEPING_ARGUMENTS`, nor ``grad_tensors=``). Such a pass runs only on a scalar (any
    other raises), and frees the graph's saved tensors as it runs, so what the name holds afterwards
    is one number."""
    if not (isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call)):
        return frozenset()
    call = statement.value
    if any(arg.keyword is not None and arg.keyword.value in GRAPH_KEEPING_ARGUMENTS for arg in call.args):
        return frozenset()
    positional = [arg.value for arg in call.args if arg.keyword is None]
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "backward" and not positional:
        receiver = func.value
        if isinstance(receiver, cst.Name):
            return frozenset({receiver.value})
        scaled = _scaled_name(receiver)
        return frozenset({scaled}) if scaled is not None else frozenset()
    if isinstance(func, cst.Attribute) and is_tensor(func.value):
        return frozenset()
    named = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    only_leaves_named = all(arg.keyword is None or arg.keyword.value == "inputs" for arg in call.args)
    if named.endswith("backward") and only_leaves_named and len(positional) == 1 and isinstance(positional[0], cst.Name):
        return frozenset({positional[0].value})
    return frozenset()


def _scaled_name(node: cst.BaseExpression) -> Optional[str]:
    """``name`` in ``scaler.scale(name)``: a ``GradScaler`` multiplies it by the loss scale."""
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "scale"):
        return None
    if len(node.args) == 1 and node.args[0].keyword is None and isinstance(node.args[0].value, cst.Name):
        return node.args[0].value.value
    return None


def enclosing_scope_node(owner: MetadataDependent, node: cst.CSTNode) -> Optional[ScopeNode]:
    """The function (or module) whose body ``node`` is in; None inside a class body or lambda."""
    current = owner.get_metadata(ParentNodeProvider, node, None)
    while current is not None:
        if isinstance(current, (cst.FunctionDef, cst.Module)):
            return current
        if isinstance(current, (cst.ClassDef, cst.Lambda)):
            return None
        current = owner.get_metadata(ParentNodeProvider, current, None)
    return None


class ScopeAnalyses:
    """The scope analyses of one file, each built on first request and shared by every rule."""

    def __init__(self, module: cst.Module, model: Optional[SemanticModel], names: NameResolver) -> None:
        self.module = module
        self.model = model
        self.names = names
        self.modules = model.modules if model is not None else None
        """The dotted names the file treats as modules (from the semantic model; None: learn them
        from the LibCST tree, where Python's own parser rejects the file)."""
        self._built: Dict[ScopeNode, ScopeAnalysis] = {}

    def _runs_on_the_cpu_at(self, span: Tuple[int, int, int, int]) -> bool:
        """Whether the semantic model's call at ``span`` runs on the CPU: a model held there, or any
        model given only tensors the code makes up there (:func:`given_only_cpu_fabrications`: a
        shape probe, which a model on the GPU would reject)."""
        model = self.model
        call = model.call_at(span) if model is not None else None
        return model is not None and call is not None and (
            runs_on_the_cpu(model, call) or given_only_cpu_fabrications(model, call)
        )

    def _weightless_layer_at(self, span: Tuple[int, int, int, int]) -> bool:
        """Whether the semantic model's call at ``span`` runs a name every binding of which builds a
        ``torch.nn`` layer without weights (:func:`builds_a_weightless_layer`: ``softmax =
        nn.Softmax(dim=1)``, not ``head = nn.Linear(512, 512)`` in the other branch)."""
        model = self.model
        call = model.call_at(span) if model is not None else None
        if model is None or call is None or not isinstance(call.func, ast.Name):
            return False
        values = model.local_assignments(model.scope_at(call).resolve(call.func.id))
        if not values:
            return False
        return all(builds_a_weightless_layer(model, value) for value in values)

    def of(self, owner: MetadataDependent, node: cst.CSTNode) -> Optional[ScopeAnalysis]:
        """The analysis of the scope ``node`` is in; None inside a class body or lambda."""
        scope_node = enclosing_scope_node(owner, node)
        if scope_node is None:
            return None
        if scope_node not in self._built:
            names = self.names.for_owner(owner)
            if self.modules is None:
                evidence = ModuleEvidence(names)
                self.module.visit(evidence)
                self.modules = frozenset(evidence.modules)
            helper_outputs = self.model.forward_output_calls if self.model is not None else frozenset()
            keeping = self.model.derived(storage_keeping_loss_calls) if self.model is not None else None
            gradients_off_at = self.model.gradients_off_at if self.model is not None else None
            runs_on_the_cpu_at = self._runs_on_the_cpu_at if self.model is not None else None
            weightless_layer_at = self._weightless_layer_at if self.model is not None else None
            self._built[scope_node] = ScopeAnalysis(
                owner, scope_node, names, self.modules, helper_outputs, keeping, gradients_off_at, runs_on_the_cpu_at,
                weightless_layer_at,
            )
        return self._built[scope_node]
