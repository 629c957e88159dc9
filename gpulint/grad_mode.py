"""Where gradients are off: ``torch.no_grad()``, ``torch.inference_mode()`` and
``torch.set_grad_enabled(False)``, as context managers or decorators."""

from __future__ import annotations

from typing import Callable, Set

import libcst as cst

QualifiedNames = Callable[[cst.CSTNode], Set[str]]

GRAD_OFF = frozenset({
    "torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.inference_mode",
    "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode",
})
SET_GRAD_ENABLED = frozenset({"torch.set_grad_enabled", "torch.autograd.set_grad_enabled", "torch.autograd.grad_mode.set_grad_enabled"})


def turns_grad_off(expression: cst.BaseExpression, qualified_names: QualifiedNames) -> bool:
    """``torch.no_grad()``, ``torch.no_grad`` (as a decorator), ``torch.inference_mode()``,
    ``torch.set_grad_enabled(False)``, under any import form. ``set_grad_enabled(flag)`` with a
    flag only known at run time (``phase == "train"``) counts too: the code manages grad mode."""
    call = expression if isinstance(expression, cst.Call) else None
    names = qualified_names(call.func if call else expression)
    if names and names <= GRAD_OFF:
        return call is None or not call.args or not (
            isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "False"
        )
    if call is not None and names and names <= SET_GRAD_ENABLED and call.args:
        value = call.args[0].value
        return not (isinstance(value, cst.Name) and value.value == "True")
    return False


def guarded_with(node: cst.With, qualified_names: QualifiedNames) -> bool:
    return any(turns_grad_off(item.item, qualified_names) for item in node.items)


def guarded_function(node: cst.FunctionDef, qualified_names: QualifiedNames) -> bool:
    return any(turns_grad_off(decorator.decorator, qualified_names) for decorator in node.decorators)
