"""One scope's analysis, built once per file and shared by every rule that asks for it."""

from __future__ import annotations

from typing import Dict, FrozenSet, List, Optional, Tuple, Union

import libcst as cst
from libcst import MetadataDependent
from libcst.metadata import ParentNodeProvider, QualifiedNameProvider, Scope, ScopeProvider

from gpulint.analysis import cfg, dataflow
from gpulint.analysis.cfg import ControlFlowGraph, Step
from gpulint.analysis.escapes import escaping_names
from gpulint.analysis.tensors import ModuleEvidence, TensorLikeness
from gpulint.rule import FileContext

METADATA_DEPENDENCIES = (*cfg.METADATA_DEPENDENCIES, ParentNodeProvider, QualifiedNameProvider, ScopeProvider)

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
    """Names declared ``global`` or ``nonlocal`` directly in this scope."""
    found = set()

    class Declarations(cst.CSTVisitor):
        def visit_FunctionDef(self, inner: cst.FunctionDef) -> bool:
            return inner is node

        def visit_ClassDef(self, inner: cst.ClassDef) -> bool:
            return False

        def visit_Global(self, statement: cst.Global) -> None:
            found.update(item.name.value for item in statement.names)

        def visit_Nonlocal(self, statement: cst.Nonlocal) -> None:
            found.update(item.name.value for item in statement.names)

    node.visit(Declarations())
    return frozenset(found)


class ScopeAnalysis:
    """Control flow, liveness, binding, escapes and tensor-likeness for one module or function body."""

    def __init__(self, owner: MetadataDependent, node: ScopeNode, modules: FrozenSet[str]) -> None:
        self.owner = owner
        self.node = node
        self.is_module = isinstance(node, cst.Module)
        self.parameters = _parameter_names(node)
        body = node if isinstance(node, cst.Module) else node.body
        self.graph = ControlFlowGraph(owner, body, self.parameters)
        self.scope: Scope = owner.get_metadata(ScopeProvider, body if self.is_module else node.body)
        self.escaping = escaping_names(self.scope, _declared(node))
        self.live_after = dataflow.live_after(self.graph)
        self.definitely_bound = dataflow.definitely_bound(self.graph)
        self.maybe_bound = dataflow.maybe_bound(self.graph)
        self.tensors = TensorLikeness(self._qualified_names, modules, self._backward_names())
        self._learn_tensor_names()
        self.holding = self._holding_tensors()

    def _qualified_names(self, node: cst.CSTNode) -> set:
        return {q.name for q in self.owner.get_metadata(QualifiedNameProvider, node, set())}

    def _small_statements(self) -> List[cst.CSTNode]:
        return [step.node for step in self.graph.steps if isinstance(step.node, cst.BaseSmallStatement)]

    def _backward_names(self) -> List[str]:
        names = []
        for statement in self._small_statements():
            if m_backward(statement):
                names.append(statement.value.func.value.value)
        return names

    def _bindings(self, statement: cst.CSTNode) -> List[Tuple[str, Optional[cst.BaseExpression]]]:
        """(name, value) for each name a small statement binds; value None when not a plain binding."""
        if isinstance(statement, cst.Assign):
            found = []
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
        """For each step, the names that may hold a tensor-like value when it runs (forward, may)."""
        holding: Dict[Step, FrozenSet[str]] = {}
        gens: Dict[Step, FrozenSet[str]] = {}
        for step in self.graph.steps:
            bound = dict(self._bindings(step.node)) if isinstance(step.node, cst.BaseSmallStatement) else {}
            gens[step] = frozenset(
                name for name, value in bound.items() if value is not None and self.tensors.binds_tensor(name, value)
            )

        def transfer(step: Step, before: FrozenSet[str]) -> FrozenSet[str]:
            return (before - step.binds - step.deletes) | gens.get(step, frozenset())

        return dataflow.solve_forward_may(self.graph, transfer)

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
        live = set()
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


def m_backward(statement: cst.CSTNode) -> bool:
    """``name.backward(...)`` as a statement."""
    return (
        isinstance(statement, cst.Expr)
        and isinstance(statement.value, cst.Call)
        and isinstance(statement.value.func, cst.Attribute)
        and statement.value.func.attr.value == "backward"
        and isinstance(statement.value.func.value, cst.Name)
    )


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


def analysis_for(owner: MetadataDependent, context: FileContext, node: cst.CSTNode) -> Optional[ScopeAnalysis]:
    """The shared analysis of the scope ``node`` is in (built on first request)."""
    scope_node = enclosing_scope_node(owner, node)
    if scope_node is None:
        return None
    cache = context.shared.setdefault("scope-analyses", {})
    if scope_node not in cache:
        if "modules" not in context.shared:
            evidence = ModuleEvidence(lambda n: {q.name for q in owner.get_metadata(QualifiedNameProvider, n, set())})
            context.module.visit(evidence)
            context.shared["modules"] = frozenset(evidence.modules)
        cache[scope_node] = ScopeAnalysis(owner, scope_node, context.shared["modules"])
    return cache[scope_node]
