"""Backward passes of a module: the expressions they start from, and the functions whose results
reach one (``train_step(batch).backward()``, ``accelerator.backward(self.compute_loss(x))``).

A function counts when a backward pass's input calls it or names it: resolved by binding through
the model's call graph, and, where the call may reach a function the model does not resolve to
(``trainer.loss(x)``, an override, a ``def`` under an ``if``), every function with that name.
"""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, List, Set

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
    """The functions of the module whose result a backward pass may start from: each function a
    backward pass's input calls or names, by binding, and, since a call may reach a function the
    model does not resolve to (an override of a method, one of two ``def``s of a name under an
    ``if``), every function of the module with the name called or named there."""
    by_name: Dict[str, List[Function]] = {}
    for function in model.all_functions:
        by_name.setdefault(function.name, []).append(function)
    found: Set[Function] = set()
    for expression in backward_inputs(model):
        for node in ast.walk(expression):
            if isinstance(node, ast.Call):
                callee = model.callee(node)
                if callee is not None:
                    found.add(callee)
                if isinstance(node.func, ast.Attribute):
                    found.update(by_name.get(node.func.attr, ()))
            elif isinstance(node, ast.Name):
                found.update(by_name.get(node.id, ()))
    return frozenset(found)
