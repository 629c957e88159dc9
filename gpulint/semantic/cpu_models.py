"""Models a program still holds on the CPU when it runs them.

``net = Net()`` and then ``outputs = net(images)`` near the top of a tutorial, with ``net.to(device)``
only further down: the pass before the move runs on the CPU, and its graph takes host memory, not
the GPU's. Decided for a forward call of a plain name (``net(x)``, ``net.forward(x)``) bound in the
scope that makes the call (the module's code, or a function's) where:

- every assignment of the name that may run before the call builds a module with weights on the
  CPU: a call of a class or function the module defines that builds a layer with weights, or of a
  torch library's layer with weights or model (``nn.Linear``, ``torchvision.models.resnet18``,
  ``transformers.AutoModel.from_pretrained``), perhaps put through methods that keep it where it is
  (``Net().eval()``), where neither the call nor the definition it runs spells a way to an
  accelerator (``cuda``, ``device``, ``.to(``); or a load mapped to the CPU
  (``torch.load(path, map_location="cpu")``, ``map_location=torch.device("cpu")``). A module
  without weights (``nn.Upsample``) runs on its input's device wherever it was built;
- every read of the name that may run before the call (one earlier in the scope, in a loop around
  the call, or in another scope, whose order is not known) keeps the module where it is: a call of
  it, a method of ``nn.Module`` that moves nothing (``eval()``, ``load_state_dict(...)``), a part of
  it read or replaced (``net.fc = nn.Linear(512, 10)``) in a statement that spells no accelerator, or
  ``print(net)``; a move (``net.to(device)``) or a hand-over to other code comes only after the call;
- the module may put no input on the GPU by itself (:func:`~gpulint.semantic.fabricated_inputs.moves_inputs`:
  no default device set, no ``DataParallel``, no ``forward`` that moves what it is given).
"""

from __future__ import annotations

import ast
from typing import List, Optional

from gpulint.semantic.fabricated_inputs import moves_inputs
from gpulint.semantic.model import SemanticModel
from gpulint.semantic.torch_api import (
    FORWARD_METHODS, MAP_LOCATION_SLOT, MODULE_CONTAINERS, MODULE_METHODS,
    PARAMETER, SIZED_LAYERS, TORCH_LIBRARIES, nn_class_name,
)

PLACE_KEEPING_READS = MODULE_METHODS | FORWARD_METHODS | frozenset({"cpu", "float", "double"})
"""Methods of a module whose call leaves it where it is (``cpu()`` takes it off an accelerator)."""
SHOWING_BUILTINS = ("print", "repr", "str", "type")
"""Builtins a module may be handed to without moving."""
LIBRARY_MODEL_MAKERS = (".from_pretrained", ".create_model")
"""How torch libraries' functions that build a model with weights end (Hugging Face, timm)."""
MAX_DEPTH = 3
"""How many classes or functions of the module deep a model's weights are looked for."""


def runs_on_the_cpu(model: SemanticModel, call: ast.Call) -> bool:
    """Whether the forward ``call`` runs a model the scope making it still holds on the CPU (see
    the module's docstring)."""
    func = call.func
    receiver = func.value if isinstance(func, ast.Attribute) and func.attr in FORWARD_METHODS else func
    return isinstance(receiver, ast.Name) and held_on_the_cpu(model, receiver, call)


def held_on_the_cpu(model: SemanticModel, name: ast.Name, call: ast.Call) -> bool:
    """Whether ``name``, read by ``call`` (which runs it, or hands it to a function), refers to a
    module the scope making the call built on the CPU and has not moved before it (see the
    module's docstring)."""
    binding = model.scope_at(call).resolve(name.id)
    if binding.scope is not model.scope_at(call) or binding.name in binding.scope.parameters or model.bound_otherwise(binding):
        return False
    if model.derived(moves_inputs):
        return False
    earlier = [use for use in model.uses(binding) if use is not name and _may_run_before(model, use, call)]
    return any(isinstance(use.ctx, ast.Store) for use in earlier) and all(_keeps_it_on_the_cpu(model, use) for use in earlier)


def _may_run_before(model: SemanticModel, use: ast.Name, call: ast.Call) -> bool:
    """Whether ``use`` may run before ``call``: earlier in the same scope, in a loop around both, or
    in another scope."""
    if model.scope_at(use) is not model.scope_at(call):
        return True
    if (use.lineno, use.col_offset) < (call.lineno, call.col_offset):
        return True
    around_call = {id(node) for node in model.ancestors(call) if isinstance(node, (ast.For, ast.AsyncFor, ast.While))}
    return any(id(node) in around_call for node in model.ancestors(use))


def _keeps_it_on_the_cpu(model: SemanticModel, use: ast.Name) -> bool:
    """Whether one occurrence of the name binds a module on the CPU or reads it without moving it."""
    parent = model.parent(use)
    if isinstance(use.ctx, ast.Store):
        return isinstance(parent, ast.Assign) and parent.targets == [use] and _built_on_the_cpu(model, parent.value)
    if not isinstance(use.ctx, ast.Load) or model.spells_an_accelerator(_statement_of(model, use)):
        return False
    if isinstance(parent, ast.Call) and parent.func is use:
        return True
    if isinstance(parent, ast.Attribute):
        grandparent = model.parent(parent)
        if isinstance(grandparent, ast.Call) and grandparent.func is parent:
            return parent.attr in PLACE_KEEPING_READS
        return True
    return isinstance(parent, ast.Call) and use in parent.args and model.is_builtin(parent.func, SHOWING_BUILTINS)


def _built_on_the_cpu(model: SemanticModel, value: ast.expr) -> bool:
    """A module built, or loaded, on the CPU (see the module's docstring)."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in PLACE_KEEPING_READS:
        value = value.func.value
    if not isinstance(value, ast.Call):
        return False
    loader = sorted(model.resolved_names(value.func) & MAP_LOCATION_SLOT.keys())
    if loader:
        return _mapped_to_the_cpu(model, value, MAP_LOCATION_SLOT[loader[0]])
    if model.spells_an_accelerator(value):
        return False
    definition = _definition(model, value)
    if definition is not None:
        return not model.spells_an_accelerator(definition) and _holds_weights(model, definition, 0)
    return _a_library_model(model, value)


def _definition(model: SemanticModel, call: ast.Call) -> Optional[ast.AST]:
    """The class or function of the module that ``call`` builds with or runs; None for others."""
    definition: Optional[ast.AST] = model.defined_class(call.func)
    if definition is None and isinstance(call.func, ast.Name):
        function = model.called_definition(call.func)
        definition = function.node if function is not None else None
    return definition


def _a_library_model(model: SemanticModel, call: ast.Call) -> bool:
    """A call that builds a module with weights of a torch library: a ``torch.nn`` layer of
    :data:`~gpulint.semantic.torch_api.SIZED_LAYERS`, a container of one, or a library's model
    (``torchvision.models.resnet18()``, ``AutoModel.from_pretrained(...)``, ``timm.create_model(...)``).
    A module without weights (``nn.Upsample``, ``nn.CosineSimilarity``) runs on its input's device
    wherever it was built."""
    for name in model.resolved_names(call.func):
        if name.split(".")[0] not in TORCH_LIBRARIES:
            continue
        layer = nn_class_name(name)
        if layer in SIZED_LAYERS:
            return True
        if layer in MODULE_CONTAINERS:
            return any(isinstance(part, ast.Call) and part is not call and _a_library_model(model, part) for part in ast.walk(call))
        if not layer and (".models." in name or name.endswith(LIBRARY_MODEL_MAKERS)):
            return True
    return False


def _holds_weights(model: SemanticModel, definition: ast.AST, depth: int) -> bool:
    """Whether a class or function of the module builds a module with weights: it calls a torch
    library's (:func:`_a_library_model`), makes an ``nn.Parameter``, or calls a class or function
    of the module that does, up to :data:`MAX_DEPTH` definitions deep."""
    for part in ast.walk(definition):
        if not isinstance(part, ast.Call):
            continue
        if _a_library_model(model, part) or PARAMETER in model.resolved_names(part.func):
            return True
        inner = _definition(model, part) if depth < MAX_DEPTH else None
        if inner is not None and inner is not definition and _holds_weights(model, inner, depth + 1):
            return True
    return False


def _mapped_to_the_cpu(model: SemanticModel, load: ast.Call, position: int) -> bool:
    """``torch.load(path, map_location="cpu")``, by keyword or at its ``position`` (any spelling of
    the CPU: :meth:`~gpulint.semantic.model.SemanticModel.names_the_cpu`)."""
    location = map_location_of(load, position)
    return location is not None and model.names_the_cpu(location)


def map_location_of(load: ast.Call, position: int) -> Optional[ast.expr]:
    """What a load's ``map_location`` is given, by keyword or at its ``position``; None where it is
    given none (or more than one)."""
    slot: List[ast.expr] = [keyword.value for keyword in load.keywords if keyword.arg == "map_location"]
    if not slot and len(load.args) > position:
        slot = [load.args[position]]
    return slot[0] if len(slot) == 1 else None


def _statement_of(model: SemanticModel, node: ast.AST) -> ast.AST:
    """The statement ``node`` is part of."""
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, ast.stmt):
            return ancestor
    return node
