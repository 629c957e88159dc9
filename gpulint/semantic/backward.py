"""Backward passes of a module: the expressions they start from, and the functions whose results
reach one (``train_step(batch).backward()``, ``accelerator.backward(self.compute_loss(x))``).

A function counts when a backward pass's input, or a value its scope assigns (before it, or in a
loop around both) to a name the input is computed from, calls it or names it, and so on through
the return values of the functions found: resolved by binding through the model's call graph, and, where the call may reach a
function the model does not resolve to (``trainer.loss(x)``, an override, a ``def`` under an
``if``), every function with that name.
"""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple, Union

from gpulint.semantic.confined import CONTAINER_MUTATORS
from gpulint.semantic.model import Function, Place, SemanticModel
from gpulint.semantic.survey import argument_values, ast_dotted_name
from gpulint.semantic.torch_api import AUTOGRAD_ENTRY_POINTS

AssignStatement = Union[ast.Assign, ast.AugAssign, ast.AnnAssign]


def backward_inputs(model: SemanticModel) -> List[ast.expr]:
    """The receivers of ``.backward()`` and the arguments of any call whose name mentions backward
    (``accelerator.backward``, ``manual_backward``), of ``torch.autograd.grad`` and ``torch.autograd.backward``."""
    found: List[ast.expr] = []
    for call in model.calls():
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == "backward":
            found.append(func.value)
        last = (ast_dotted_name(func) or "").split(".")[-1]
        if "backward" in last or model.qualified_names(func) & AUTOGRAD_ENTRY_POINTS:
            found.extend(argument_values(call))
    return found


def backpropagated_functions(model: SemanticModel) -> FrozenSet[Function]:
    """The functions of the module whose result a backward pass may start from: each function that
    a backward pass's input calls or names, by binding, or that a value it is computed from calls
    (see :func:`_computed_from`), then, in turn, each function that such a function's return value
    calls or names. Since a call may reach a function the model does not resolve to (an override
    of a method, one of two ``def``s of a name under an ``if``), every function of the module with
    the name called or named there counts too. A value computed from an attribute
    (``torch.cat(self.log_probs)``, by :class:`~gpulint.semantic.model.Place`) also reaches the
    functions that add to what it holds (``self.log_probs.append(log_prob)`` in the method that
    samples an action: a policy gradient's forward pass, run in one method and trained in another;
    see :func:`_stores_by_place`)."""
    by_name: Dict[str, List[Function]] = {}
    for function in model.all_functions:
        by_name.setdefault(function.name, []).append(function)
    returns: Dict[Function, List[ast.expr]] = {}
    for statement in model.nodes(ast.Return):
        owner = model.innermost_function(statement)
        if owner is not None and statement.value is not None:
            returns.setdefault(owner, []).append(statement.value)
    assigned = _assigned_values(model)
    stored = _stores_by_place(model)
    bound: BoundNames = {}
    found: Set[Function] = set()
    expressions = backward_inputs(model)
    while expressions:
        reached: Set[Function] = set()
        for node in _computed_from(model, assigned, bound, expressions):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                place = model.place(node)
                reached.update(stored.get(place, ()) if place is not None else ())
            if isinstance(node, ast.Call):
                callee = model.callee(node)
                if callee is not None:
                    reached.add(callee)
                if isinstance(node.func, ast.Attribute):
                    reached.update(by_name.get(node.func.attr, ()))
            elif isinstance(node, ast.Name):
                reached.update(by_name.get(node.id, ()))
        reached -= found
        found |= reached
        expressions = [value for function in reached for value in returns.get(function, ())]
    return frozenset(found)


def _stores_by_place(model: SemanticModel) -> Dict[Place, Set[Function]]:
    """For each attribute place (``self.log_probs`` by class), the functions that add to what it
    holds: assign an item of it, add to it in place (``+=``), or call a method on it that stores its
    arguments (:data:`~gpulint.semantic.confined.CONTAINER_MUTATORS`: ``append``, ``extend``, ...).
    Binding it anew (``self.model = model``) is not such a store: what a backward pass reads
    through a model's attribute is its parameters, not what a constructor hands it."""
    stores: Dict[Place, Set[Function]] = {}
    targets: List[Tuple[ast.AST, ast.expr]] = [
        (statement, statement.target) for statement in model.nodes(ast.AugAssign)
    ]
    for statement in model.nodes(ast.Assign):
        targets.extend((statement, target.value) for target in statement.targets if isinstance(target, ast.Subscript))
    for call in model.calls():
        if isinstance(call.func, ast.Attribute) and call.func.attr in CONTAINER_MUTATORS:
            targets.append((call, call.func.value))
    for node, target in targets:
        function = model.innermost_function(node)
        place = model.place(target) if isinstance(target, ast.Attribute) else None
        if function is not None and place is not None:
            stores.setdefault(place, set()).add(function)
    return stores


Assigned = Dict[Tuple[ast.AST, str], List[AssignStatement]]
"""(scope, name) -> the statements of the scope that assign the name."""

BoundNames = Dict[int, FrozenSet[str]]
"""``id`` of a statement -> the names it binds anywhere in it (filled as statements are asked about)."""


def _assigned_values(model: SemanticModel) -> Assigned:
    assigned: Assigned = {}
    statements: List[AssignStatement] = [*model.nodes(ast.Assign), *model.nodes(ast.AugAssign), *model.nodes(ast.AnnAssign)]
    for node in statements:
        if node.value is None:
            continue
        scope = model.scope_of(node)
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            for name in _bound_names(target):
                assigned.setdefault((scope, name), []).append(node)
    return assigned


def _bound_names(target: ast.expr) -> Iterator[str]:
    """The names an assignment target binds (``a``, ``a, (b, *c)``), not those an attribute or
    subscript target reads (``self`` of ``self.loss = ...``)."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _bound_names(element)
    elif isinstance(target, ast.Starred):
        yield from _bound_names(target.value)


def _computed_from(
    model: SemanticModel, assigned: Assigned, bound: BoundNames, expressions: List[ast.expr],
) -> Iterator[ast.AST]:
    """The nodes of each expression and of every value its scope assigns, where the assignment may
    run before it (the last assignment of the name in a block around it, with nothing between that
    binds it; else any earlier in the code, or in a loop around both), to a name it is computed
    from, transitively (``loss = criterion(pred, y)``, ``pred = self.predict(x)``: both values)."""
    for anchor in expressions:
        scope = model.scope_of(anchor)
        loops = _loops_around(model, anchor)
        seen: Set[str] = set()
        pending: List[ast.expr] = [anchor]
        while pending:
            for node in ast.walk(pending.pop()):
                yield node
                if isinstance(node, ast.Name) and node.id not in seen:
                    seen.add(node.id)
                    last = _last_assignment(model, bound, node.id, anchor)
                    pending.extend(
                        statement.value for statement in assigned.get((scope, node.id), ())
                        if statement.value is not None and (
                            statement is last if last is not None else _may_run_before(model, statement, anchor, loops)
                        )
                    )


def _loops_around(model: SemanticModel, node: ast.AST) -> Set[int]:
    """The ``for`` and ``while`` loops around ``node`` in its own scope (by ``id``)."""
    loops = set()
    current = model.parent(node)
    while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        if isinstance(current, (ast.For, ast.AsyncFor, ast.While)):
            loops.add(id(current))
        current = model.parent(current)
    return loops


def _may_run_before(model: SemanticModel, statement: ast.stmt, anchor: ast.expr, loops: Set[int]) -> bool:
    if (statement.lineno, statement.col_offset) < (anchor.lineno, anchor.col_offset):
        return True
    return bool(loops) and not _loops_around(model, statement).isdisjoint(loops)


def _last_assignment(model: SemanticModel, bound: BoundNames, name: str, anchor: ast.AST) -> Optional[ast.stmt]:
    """The plain assignment of ``name`` that every run reaching ``anchor`` last went through: the
    nearest earlier statement of a block around ``anchor`` that binds ``name``, where it is an
    assignment; None where that statement binds it some other way (in a branch, a loop, a ``with``)
    or none does."""
    current: Optional[ast.AST] = anchor
    while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        parent = model.parent(current)
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if not isinstance(block, list):
                continue
            index = next((i for i, statement in enumerate(block) if statement is current), None)
            if index is None:
                continue
            for earlier in reversed(block[:index]):
                if name not in _bound_by(bound, earlier):
                    continue
                plain = isinstance(earlier, (ast.Assign, ast.AnnAssign))
                return earlier if plain else None
        current = parent
    return None


def _bound_by(bound: BoundNames, statement: ast.stmt) -> FrozenSet[str]:
    """The names ``statement`` binds or deletes anywhere in it (remembered in ``bound``)."""
    names = bound.get(id(statement))
    if names is None:
        names = frozenset(
            node.id for node in ast.walk(statement) if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)
        )
        bound[id(statement)] = names
    return names
