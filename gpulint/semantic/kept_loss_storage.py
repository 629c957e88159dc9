"""Loss calls whose value keeps the storage of the elementwise losses behind it, by call.

``F.mse_loss(x, y)`` reduces through a view of the elementwise losses, so its 0-dim value holds as
many bytes as its input, even after a backward pass has freed the graph
(:data:`~gpulint.semantic.torch_api.STORAGE_KEEPING_LOSS_FUNCTIONS`). A call is one such where it
calls one of those functions by name, a module of a class that calls one
(:data:`~gpulint.semantic.torch_api.STORAGE_KEEPING_LOSS_MODULES`) built where it is called
(``nn.MSELoss()(x, y)``), or a name or ``self.<attr>`` (a :class:`~gpulint.semantic.model.Place`)
that an assignment of the module binds to such a module (``self.criterion =
nn.MSELoss().cuda()``). Any other loss, a project's criterion or one passed in as a parameter, is
taken to give a number of its own, as every other torch loss does.
"""

from __future__ import annotations

import ast
from typing import FrozenSet, Set, Tuple

from gpulint.semantic.model import Place, SemanticModel
from gpulint.semantic.torch_api import (
    MODULE_RETURNING_METHODS, STORAGE_KEEPING_LOSS_FUNCTIONS, STORAGE_KEEPING_LOSS_MODULES, nn_class_name,
)

Span = Tuple[int, int, int, int]
SPELLINGS = frozenset(
    {qualified.rpartition(".")[2] for qualified in STORAGE_KEEPING_LOSS_FUNCTIONS} | STORAGE_KEEPING_LOSS_MODULES
)
"""Words one of which the source spells wherever it calls such a loss (most modules call none)."""


def storage_keeping_loss_calls(model: SemanticModel) -> FrozenSet[Span]:
    """Where the module calls a loss whose value keeps the storage of the elementwise losses behind
    it (see the module docstring): the span of each such call's ``func``, as
    :meth:`~gpulint.semantic.model.SemanticModel.span` gives it."""
    if not any(word in model.source for word in SPELLINGS):
        return frozenset()
    places: Set[Place] = set()
    for statement in model.nodes(ast.Assign):
        if _builds_keeping_module(model, statement.value):
            places.update(place for place in map(model.place, statement.targets) if place is not None)
    found = set()
    for call in model.calls():
        place = model.place(call.func)
        if (
            model.resolved_names(call.func) & STORAGE_KEEPING_LOSS_FUNCTIONS
            or _builds_keeping_module(model, call.func)
            or (place is not None and place in places)
        ):
            found.add(model.span(call.func))
    return frozenset(found)


def _builds_keeping_module(model: SemanticModel, value: ast.expr) -> bool:
    """``nn.MSELoss()``, also moved or switched on the way (``nn.MSELoss().to(device)``)."""
    while (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
        and value.func.attr in MODULE_RETURNING_METHODS
    ):
        value = value.func.value
    return isinstance(value, ast.Call) and any(
        nn_class_name(qualified) in STORAGE_KEEPING_LOSS_MODULES for qualified in model.resolved_names(value.func)
    )
