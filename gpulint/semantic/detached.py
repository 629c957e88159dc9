"""Values that a chain of calls and attributes cuts from the autograd graph on its way:
``pred.detach().cpu()``, ``loss.item()``, ``out.data``, a constant. Read by the semantic model's
facts about history (:mod:`gpulint.semantic.history`, :mod:`gpulint.semantic.grad_free_returns`)."""

from __future__ import annotations

import ast

from gpulint.semantic.survey import argument_values
from gpulint.semantic.torch_api import LAYOUT_METHODS

DETACHING_METHODS = frozenset({"detach", "item", "tolist", "numpy"})
"""Tensor methods whose result carries no autograd history."""


def only_detached(call: ast.Call) -> bool:
    """Whether every argument of ``call`` (one at least) is a constant or a chain that detaches
    (``.detach()``, ``.data``, ``.item()``, ``.tolist()``, ``.numpy()``) on its way."""
    arguments = argument_values(call)
    return bool(arguments) and all(detached(argument) for argument in arguments)


def detached(node: ast.expr) -> bool:
    """A constant, or a chain that detaches on its way down (``pred.detach().cpu()``) where every
    method called after the detaching step is given only detached values and none is
    ``requires_grad_`` (``target.detach().sub(pred)`` and ``x.detach().requires_grad_()`` carry
    history)."""
    while True:
        if isinstance(node, ast.Constant) or (isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant)):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in DETACHING_METHODS:
                return True
            if node.func.attr == "requires_grad_" or (
                node.func.attr not in LAYOUT_METHODS and not all(detached(argument) for argument in argument_values(node))
            ):
                return False
            node = node.func.value
        elif isinstance(node, ast.Attribute):
            if node.attr == "data":
                return True
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return False
