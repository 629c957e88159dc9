"""Loads that restore a whole optimizer the program goes on stepping.

``optimizer = checkpoint["optimizer"]`` after ``checkpoint = torch.load(path)``, where the other
branch builds ``optimizer = torch.optim.SGD(...)`` (or the code calls ``optimizer.step()``): the
pickled optimizer's state (momentum buffers, Adam's moments) must stay on the device of the
parameters it updates. ``map_location="cpu"`` would leave that state on the CPU while the code
moves the model back to the GPU, and the next step fails.
"""

from __future__ import annotations

import ast
from typing import Iterator, List

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.scopes import Binding
from gpulint.semantic.torch_api import OPTIMIZER_NAMESPACE, OPTIMIZER_STEPS


def restores_live_optimizer(model: SemanticModel, call: ast.Call) -> bool:
    """Whether the value ``call`` loads, or an item or attribute of it, is bound to a name that the
    module also binds to a ``torch.optim`` optimizer, or steps."""
    return any(_is_optimizer(model, binding) for binding in _bound_from(model, call))


def _bound_from(model: SemanticModel, call: ast.Call) -> Iterator[Binding]:
    """The bindings ``call``'s value is assigned to, and those its items or attributes are."""
    loaded = _assigned_names(model, call)
    yield from loaded
    for binding in loaded:
        for use in model.uses(binding):
            if not isinstance(use.ctx, ast.Load):
                continue
            part = model.parent(use)
            if isinstance(part, (ast.Subscript, ast.Attribute)) and part.value is use:
                yield from _assigned_names(model, part)


def _assigned_names(model: SemanticModel, value: ast.expr) -> List[Binding]:
    """The names ``value`` is assigned to: ``x = value``, or its place in ``a, x = y, value``."""
    statement = model.parent(value)
    targets: List[ast.expr] = []
    if isinstance(statement, ast.Tuple):
        position = next(index for index, element in enumerate(statement.elts) if element is value)
        assign = model.parent(statement)
        if isinstance(assign, ast.Assign) and assign.value is statement:
            targets = [
                target.elts[position] for target in assign.targets
                if isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == len(statement.elts)
            ]
    elif isinstance(statement, ast.Assign) and statement.value is value:
        targets = statement.targets
    return [model.scope_at(target).resolve(target.id) for target in targets if isinstance(target, ast.Name)]


def _is_optimizer(model: SemanticModel, binding: Binding) -> bool:
    for use in model.uses(binding):
        parent = model.parent(use)
        if isinstance(use.ctx, ast.Store) and isinstance(parent, ast.Assign) and isinstance(parent.value, ast.Call):
            if any(name.startswith(OPTIMIZER_NAMESPACE) for name in model.resolved_names(parent.value.func)):
                return True
        if isinstance(use.ctx, ast.Load) and isinstance(parent, ast.Attribute) and parent.attr in OPTIMIZER_STEPS:
            if isinstance(model.parent(parent), ast.Call):
                return True
    return False
