"""Backward passes of a module: the expressions they start from, and the functions whose results
reach one (``train_step(batch).backward()``, ``accelerator.backward(self.compute_loss(x))``).

A function counts when a backward pass's input, or a value its scope assigns to a name the input
is computed from, calls it or names it, and so on through the return values of the functions
found: resolved by binding through the model's call graph, and, where the call may reach a
function the model does not resolve to (``trainer.loss(x)``, an override, a ``def`` under an
``if``), every function with that name.
"""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Iterator, List, Set, Tuple, Union

from gpulint.semantic.model import Function, SemanticModel
from gpulint.semantic.survey import argument_values, ast_dotted_name
from gpulint.semantic.torch_api import AUTOGRAD_ENTRY_POINTS


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
    the name called or named there counts too."""
    by_name: Dict[str, List[Function]] = {}
    for function in model.all_functions:
        by_name.setdefault(function.name, []).append(function)
    returns: Dict[Function, List[ast.expr]] = {}
    for statement in model.nodes(ast.Return):
        owner = model.innermost_function(statement)
        if owner is not None and statement.value is not None:
            returns.setdefault(owner, []).append(statement.value)
    assigned = _assigned_values(model)
    found: Set[Function] = set()
    seen: Set[Tuple[ast.AST, str]] = set()
    expressions = backward_inputs(model)
    while expressions:
        reached: Set[Function] = set()
        for node in _computed_from(model, assigned, expressions, seen):
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


Assigned = Dict[Tuple[ast.AST, str], List[ast.expr]]
"""(scope, name) -> the values the scope assigns to the name."""


def _assigned_values(model: SemanticModel) -> Assigned:
    assigned: Assigned = {}
    statements: List[Union[ast.Assign, ast.AugAssign, ast.AnnAssign]] = [
        *model.nodes(ast.Assign), *model.nodes(ast.AugAssign), *model.nodes(ast.AnnAssign),
    ]
    for node in statements:
        if node.value is None:
            continue
        scope = model.scope_of(node)
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            for name in [target] if isinstance(target, ast.Name) else ast.walk(target):
                if isinstance(name, ast.Name):
                    assigned.setdefault((scope, name.id), []).append(node.value)
    return assigned


def _computed_from(
    model: SemanticModel, assigned: Assigned, expressions: List[ast.expr], seen: Set[Tuple[ast.AST, str]],
) -> Iterator[ast.AST]:
    """The nodes of the expressions and of every value their scope assigns to a name they are
    computed from, transitively (``loss = criterion(pred, y)``, ``pred = self.predict(x)``: both
    values), flow-insensitively; ``seen`` holds the (scope, name) pairs already followed."""
    pending = [(model.scope_of(expression), expression) for expression in expressions]
    while pending:
        scope, expression = pending.pop()
        for node in ast.walk(expression):
            yield node
            if isinstance(node, ast.Name) and (scope, node.id) not in seen:
                seen.add((scope, node.id))
                pending.extend((scope, value) for value in assigned.get((scope, node.id), ()))
