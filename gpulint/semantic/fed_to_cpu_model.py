"""Loaded tensors that the program runs a model it keeps on the CPU on.

``test_data = torch.load(path)`` and a model built and never moved, ``net = Net()``, then
``net(test_data[i].unsqueeze(0))``; or ``score(test_data, test_labels, net)``, where the module's
function ``score`` runs its model parameter on what it takes from its data parameter. A tensor on an
accelerator given to a model whose weights are on the CPU raises, so the program runs only where
the file holds CPU tensors, and ``map_location`` changes nothing (as a pinning data loader shows of
a dataset's data). Decided where:

- the load is the whole value of a plain assignment to one name, which its scope binds nowhere else;
- a read of that name, taken apart only by subscripts and methods that keep a tensor where it is
  (``[i]``, ``.unsqueeze(0)``, ``.view(-1, 784)``, ``.float()``), perhaps through a local name
  assigned once, is an input of a forward call of a model the scope holds on the CPU
  (:func:`~gpulint.semantic.cpu_models.runs_on_the_cpu`);
- or the name is handed, as it is, by position to a function of the module (called by its name)
  beside a name of a model the scope holds on the CPU
  (:func:`~gpulint.semantic.cpu_models.held_on_the_cpu`), and that function, rebinding neither
  parameter, runs the model's parameter on such a part of the data's parameter.
"""

from __future__ import annotations

import ast
from typing import List, Optional, Set

from gpulint.semantic.cpu_models import held_on_the_cpu, runs_on_the_cpu
from gpulint.semantic.model import SemanticModel
from gpulint.semantic.scopes import Binding
from gpulint.semantic.survey import own_nodes
from gpulint.semantic.torch_api import DEVICE_KEEPING_TENSOR_METHODS, FORWARD_METHODS, LAYOUT_METHODS

PLACE_KEEPING_METHODS = DEVICE_KEEPING_TENSOR_METHODS | (LAYOUT_METHODS - {"to", "cpu", "cuda", "type"})
"""Tensor methods whose result stays on the receiver's device."""


def run_by_a_cpu_model(model: SemanticModel, call: ast.Call) -> bool:
    """Whether what ``call`` loads is run by a model the program keeps on the CPU (see the module's
    docstring)."""
    assigned = model.assigned_name(call)
    if assigned is None:
        return False
    _, place = assigned
    binding = place.binding
    if place.path or model.plain_assignments(binding) != [call] or model.bound_otherwise(binding):
        return False
    scope = binding.scope.node
    for use in model.uses(binding):
        if not isinstance(use.ctx, ast.Load):
            continue
        parent = model.parent(use)
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and use in parent.args and _handed_with_a_cpu_model(model, parent, use):
            return True
    names = _parts_named(model, scope, binding)
    return any(
        runs_on_the_cpu(model, forward) and any(_part_of(model, argument, names) for argument in forward.args)
        for forward in _forward_calls(scope)
    )


def _handed_with_a_cpu_model(model: SemanticModel, call: ast.Call, data: ast.Name) -> bool:
    """``score(test_data, test_labels, net)``: a function of the module given the data and a model
    held on the CPU, which runs that model on a part of the data."""
    function = model.callee(call)
    if function is None or function.owner is not None or any(isinstance(argument, ast.Starred) for argument in call.args):
        return False
    positional = function.positional
    data_index = call.args.index(data)
    if data_index >= len(positional):
        return False
    for index, argument in enumerate(call.args[: len(positional)]):
        if index == data_index or not isinstance(argument, ast.Name) or not held_on_the_cpu(model, argument, call):
            continue
        network = Binding(function.scope, positional[index])
        data_parameter = Binding(function.scope, positional[data_index])
        if model.plain_assignments(network) != [] or model.plain_assignments(data_parameter) != []:
            continue
        names = _parts_named(model, function.node, data_parameter)
        if any(
            _runs(forward, network.name) and any(_part_of(model, argument, names) for argument in forward.args)
            for forward in _forward_calls(function.node)
        ):
            return True
    return False


def _parts_named(model: SemanticModel, scope: ast.AST, binding: Binding) -> Set[str]:
    """The name of ``binding`` and the local names of ``scope`` assigned once, and only, to a part
    of it (``feature = data[i].unsqueeze(0)``)."""
    names = {binding.name}
    for node in own_nodes(getattr(scope, "body", [])):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        target = node.targets[0]
        local = model.scope_at(target).resolve(target.id)
        if local.scope is binding.scope and local != binding and model.plain_assignments(local) == [node.value] and _part_of(model, node.value, {binding.name}):
            names.add(target.id)
    return names


def _part_of(model: SemanticModel, value: ast.expr, names: Set[str]) -> bool:
    """Whether ``value`` is one of ``names``, or a subscript of one or a method of one that keeps a
    tensor where it is, in turn."""
    current: Optional[ast.expr] = value
    while current is not None:
        if isinstance(current, ast.Name):
            return current.id in names
        if isinstance(current, ast.Subscript):
            current = current.value
        elif isinstance(current, ast.Call) and isinstance(current.func, ast.Attribute) and current.func.attr in PLACE_KEEPING_METHODS:
            current = current.func.value
        else:
            return False
    return False


def _forward_calls(scope: ast.AST) -> List[ast.Call]:
    """The calls in ``scope``'s own body of a plain name, or of its ``forward``."""
    return [
        node for node in own_nodes(getattr(scope, "body", []))
        if isinstance(node, ast.Call) and (
            isinstance(node.func, ast.Name)
            or (isinstance(node.func, ast.Attribute) and node.func.attr in FORWARD_METHODS and isinstance(node.func.value, ast.Name))
        )
    ]


def _runs(call: ast.Call, name: str) -> bool:
    func = call.func
    receiver = func.value if isinstance(func, ast.Attribute) else func
    return isinstance(receiver, ast.Name) and receiver.id == name
