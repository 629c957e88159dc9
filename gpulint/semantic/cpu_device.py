"""Modules that put whatever they place on the CPU.

A script written for a GPU but set to run on the CPU (``device = "cpu"``, every ``.to(device)`` and
``device=`` naming it) keeps its models and tensors in host memory: ``torch.cuda.empty_cache()``
there has nothing of the module's to release.

Decided for the whole module, where:

- it names a place at least once, and every place it names is the CPU: the device of each call of
  ``.to(...)`` (its first argument or ``device=``; a dtype moves nothing), and each ``device=`` or
  ``map_location=`` keyword, is ``"cpu"``, ``torch.device("cpu")``, or a name every assignment of
  which is one of those (``DEVICE = "cpu"``; not a parameter, not bound any other way);
- it calls no other move (:data:`~gpulint.semantic.torch_api.ACCELERATOR_MOVE_METHODS`:
  ``.cuda()``), loads nothing without a ``map_location`` (``torch.load(path)`` puts each tensor
  back on the device it was saved from), wraps no model in ``DataParallel``, sets no default
  device, makes no ``torch.device`` but the CPU's, and calls nothing of ``torch.cuda`` but what
  allocates nothing for it (:data:`~gpulint.semantic.torch_api.ALLOCATION_FREE_CUDA_FUNCTIONS`:
  ``empty_cache``, ``is_available``, the memory statistics);
- it imports no library that places models by itself
  (:data:`~gpulint.semantic.torch_api.PLACING_LIBRARIES`: Lightning, Accelerate, DeepSpeed).

What a function imported from another module does with the CPU tensors it is given is not seen.
"""

from __future__ import annotations

import ast
from typing import FrozenSet, Optional

from gpulint.semantic.cpu_models import map_location_of
from gpulint.semantic.model import SemanticModel
from gpulint.semantic.torch_api import (
    ACCELERATOR_MOVE_METHODS, ALLOCATION_FREE_CUDA_FUNCTIONS, CUDA_NAMESPACE, DEFAULT_DEVICE_SETTERS, DEVICE_CONTEXT,
    MAP_LOCATION_SLOT, MODULE_WRAPPERS, PLACING_LIBRARIES, TORCH_DTYPES,
)

PLACE_KEYWORDS = frozenset({"device", "map_location"})
"""Keywords that name where a call puts what it makes or loads."""
MOVE = "to"


def keeps_everything_on_the_cpu(model: SemanticModel) -> bool:
    """Whether the module puts whatever it places on the CPU (see the module's docstring)."""
    names_a_place = False
    for node in ast.walk(model.tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and _imports_a_placing_library(node):
            return False
        if isinstance(node, ast.keyword) and node.arg in PLACE_KEYWORDS:
            if not _names_the_cpu(model, node.value):
                return False
            names_a_place = True
        if not isinstance(node, ast.Call):
            continue
        place = _place_moved_to(model, node)
        if place is not None:
            if not _names_the_cpu(model, place):
                return False
            names_a_place = True
        if _may_place_elsewhere(model, node):
            return False
    return names_a_place


def _imports_a_placing_library(node: ast.AST) -> bool:
    modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [getattr(node, "module", None) or ""]
    return any(module.split(".")[0] in PLACING_LIBRARIES for module in modules)


def _place_moved_to(model: SemanticModel, call: ast.Call) -> Optional[ast.expr]:
    """The place ``x.to(place)`` names by its first argument (``device=`` is read as a keyword);
    None for another call, or a move that names only a dtype."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == MOVE and call.args):
        return None
    first = call.args[0]
    return None if model.resolved_names(first) & TORCH_DTYPES else first


def _may_place_elsewhere(model: SemanticModel, call: ast.Call) -> bool:
    """A call that may put something on an accelerator by itself: ``.cuda()`` and the like, a
    load not mapped to the CPU, a ``DataParallel`` wrapper, a default-device setter, a
    ``torch.device`` other than the CPU's (a device context among them), or a function of
    ``torch.cuda`` that may allocate there."""
    if isinstance(call.func, ast.Attribute) and call.func.attr in ACCELERATOR_MOVE_METHODS:
        return True
    names = model.resolved_names(call.func)
    loader = sorted(names & MAP_LOCATION_SLOT.keys())
    if loader:
        location = map_location_of(call, MAP_LOCATION_SLOT[loader[0]])
        return location is None or not _names_the_cpu(model, location)
    if DEVICE_CONTEXT in names:
        return not model.names_the_cpu(call)
    return bool(names & DEFAULT_DEVICE_SETTERS) or any(
        name.split(".")[-1] in MODULE_WRAPPERS
        or (name.startswith(CUDA_NAMESPACE) and name not in ALLOCATION_FREE_CUDA_FUNCTIONS)
        for name in names
    )


def _names_the_cpu(model: SemanticModel, place: ast.expr, seen: FrozenSet[str] = frozenset()) -> bool:
    """Whether ``place`` spells the CPU, or is a name every assignment of which does."""
    if model.names_the_cpu(place):
        return True
    if not isinstance(place, ast.Name) or place.id in seen:
        return False
    binding = model.scope_at(place).resolve(place.id)
    if binding.name in binding.scope.parameters or model.bound_otherwise(binding):
        return False
    values = model.plain_assignments(binding)
    if not values:
        return False
    return all(_names_the_cpu(model, value, seen | {place.id}) for value in values)
