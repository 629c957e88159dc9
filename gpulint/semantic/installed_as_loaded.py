"""Loaded tensors installed, as they came back, into a module's parameters.

``state = torch.load(path)["state_dict"]`` then ``model.embed.weight.data = state[key]``: setting
a tensor's ``.data`` swaps its storage for the loaded tensor's, device included, and
``model.scale = nn.Parameter(state["scale"])`` makes a parameter of the loaded tensor itself. The
parameter ends up wherever the load put the tensor. Where the rest of the model is on an
accelerator, the program relies on the load putting it there too: with ``map_location="cpu"``
that one parameter would move to the CPU and the next forward pass would mix devices.

Decided where the installed value is the load, or the load followed by subscripts and methods that
keep a tensor on its device (``torch.load(path)["embed"].half()``), or such a chain of a name bound
once, by a plain assignment, to one of these; and it is assigned to the ``.data`` of a module's
tensor, or wrapped in ``torch.nn.Parameter`` and assigned to an attribute. A module's tensor is an
attribute (``layer.weight``, ``self.alpha``) named ``weight`` or ``bias``, or named as the module
names a parameter or buffer it makes (``self.alpha = nn.Parameter(...)``,
``self.register_buffer("alpha", ...)``): a dataset's ``self.data = torch.load(path)`` is none.

So, likewise, does what the code attaches to an object it has put on a device:
``model.to(device)``, then ``model.cost = torch.load(path)["model"]`` leaves the attached cost
model wherever the load puts it, which the program relies on being the device it was saved from.
"""

from __future__ import annotations

import ast
from typing import FrozenSet, Iterator

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.survey import position
from gpulint.semantic.torch_api import (
    DEVICE_KEEPING_TENSOR_METHODS, DEVICE_MOVES, PARAMETER, TENSOR_REGISTRATIONS, TENSOR_STORAGE, WEIGHT_ATTRIBUTES,
)

PLACING_MOVES = DEVICE_MOVES - {"cpu"}
"""Moves that may put an object on an accelerator."""


def installed_as_loaded(model: SemanticModel, call: ast.Call) -> bool:
    """Whether a tensor that ``call`` loads becomes, as it came back, a parameter's storage."""
    return any(_installed(model, top) for top in _chain_tops(model, call))


def attached_where_placed(model: SemanticModel, call: ast.Call) -> bool:
    """Whether what ``call`` loads is attached, as it came back, to an object the code has put on a
    device (:func:`_attached_to_a_placed_object`)."""
    for top in _chain_tops(model, call):
        statement = model.parent(top)
        if isinstance(statement, ast.Assign) and statement.value is top and any(
            _attached_to_a_placed_object(model, statement, target) for target in statement.targets
        ):
            return True
    return False


def _chain_tops(model: SemanticModel, call: ast.Call) -> Iterator[ast.expr]:
    """The outermost device-keeping chain around the load, and around every read of a name bound
    once to that chain."""
    top = _chain_top(model, call)
    yield top
    bound = model.assigned_name(top)
    if bound is not None and model.bound_once(*bound):
        for use in model.uses(bound[1].binding):
            if isinstance(use.ctx, ast.Load):
                yield _chain_top(model, use)


def _chain_top(model: SemanticModel, node: ast.expr) -> ast.expr:
    """``node`` followed outwards through subscripts of it and device-keeping method calls on it."""
    while True:
        parent = model.parent(node)
        if isinstance(parent, ast.Subscript) and parent.value is node:
            node = parent
            continue
        method_call = model.parent(parent) if isinstance(parent, ast.Attribute) and parent.value is node else None
        if not (
            isinstance(parent, ast.Attribute) and parent.attr in DEVICE_KEEPING_TENSOR_METHODS
            and isinstance(method_call, ast.Call) and method_call.func is parent
        ):
            return node
        node = method_call


def _installed(model: SemanticModel, value: ast.expr) -> bool:
    """Whether ``value`` is assigned to the ``.data`` of a module's tensor, or made a parameter that
    is assigned to an attribute."""
    parent = model.parent(value)
    if isinstance(parent, ast.Assign) and parent.value is value:
        return any(_stores_into_a_module_tensor(model, target) for target in parent.targets)
    if (
        isinstance(parent, ast.Call) and parent.args and parent.args[0] is value
        and PARAMETER in model.resolved_names(parent.func)
    ):
        statement = model.parent(parent)
        return isinstance(statement, ast.Assign) and statement.value is parent and any(
            isinstance(target, ast.Attribute) for target in statement.targets
        )
    return False


def _stores_into_a_module_tensor(model: SemanticModel, target: ast.expr) -> bool:
    """``<object>.<name>.data`` where ``<name>`` is the name of a module's tensor."""
    return (
        isinstance(target, ast.Attribute) and target.attr == TENSOR_STORAGE
        and isinstance(target.value, ast.Attribute) and target.value.attr in model.derived(module_tensor_names)
    )


def module_tensor_names(model: SemanticModel) -> FrozenSet[str]:
    """``weight``, ``bias``, and the names the module gives the parameters and buffers it makes."""
    names = set(WEIGHT_ATTRIBUTES)
    for call in model.nodes(ast.Call):
        if isinstance(call.func, ast.Attribute) and call.func.attr in TENSOR_REGISTRATIONS and call.args:
            first = call.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                names.add(first.value)
        elif PARAMETER in model.resolved_names(call.func):
            statement = model.parent(call)
            if isinstance(statement, ast.Assign) and statement.value is call:
                names.update(target.attr for target in statement.targets if isinstance(target, ast.Attribute))
    return frozenset(names)


def _attached_to_a_placed_object(model: SemanticModel, statement: ast.Assign, target: ast.expr) -> bool:
    """``model.cost = <load>`` where the scope has moved ``model`` (that binding) to a device
    (``model.to(device)``, ``model.cuda()``) before the assignment: the code put the object on its
    device and attaches what the load gives, where the load put it (a later move of the object
    may come after the attached part has run)."""
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
        return False
    scope = model.scope_at(target)
    binding = scope.resolve(target.value.id)
    return any(
        isinstance(call.func, ast.Attribute) and call.func.attr in PLACING_MOVES
        and isinstance(call.func.value, ast.Name) and model.scope_at(call) is scope
        and scope.resolve(call.func.value.id) == binding and position(call) < position(statement)
        for call in model.nodes(ast.Call)
    )
