"""Backward passes of a module: the expressions they start from, and the functions whose results
reach one (``train_step(batch).backward()``, ``accelerator.backward(self.compute_loss(x))``).

A function counts when a backward pass's input calls it or names it, resolved by binding through
the model's call graph; a method called on a receiver the model cannot resolve (``trainer.loss(x)``)
counts every method of the module's classes with that name, since it may be any of them.
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
    """The functions of the module whose result a backward pass may start from."""
    methods: Dict[str, List[Function]] = {}
    for function in model.all_functions:
        if function.owner is not None:
            methods.setdefault(function.name, []).append(function)
    found: Set[Function] = set()
    for expression in backward_inputs(model):
        for node in ast.walk(expression):
            if isinstance(node, ast.Call):
                callee = model.callee(node)
                if callee is not None:
                    found.add(callee)
                elif isinstance(node.func, ast.Attribute):
                    found.update(methods.get(node.func.attr, ()))
            elif isinstance(node, ast.Name):
                definition = model.definition(model.scope_at(node).resolve(node.id))
                if definition is not None:
                    found.add(definition)
    return frozenset(found)
