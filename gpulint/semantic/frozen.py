"""Frozen models by binding: modules whose parameters the code switches off for gradients and
never switches back on, anywhere in the module.

Freezing is spelt ``model.requires_grad_(False)`` (also at the end of a chain that returns the
module: ``G = copy.deepcopy(net).eval().requires_grad_(False).to(device)`` freezes ``G``), or
``for p in model.parameters(): p.requires_grad = False`` (``p.requires_grad_(False)``, or a loop
over ``named_parameters()``) with the switch directly in the loop's body and no ``continue`` or
``break`` in it (which skip some parameters by name). A model any of whose parts
(or owners) the code switches back on (``requires_grad_()``, ``requires_grad_(True)``, a loop over
``parameters()`` or ``named_parameters()`` switching any on) or replaces by what a call returns (a
new head) is not frozen. A parameter is frozen where every call of its function in the module passes a frozen model (a
fixed point over the call graph), as :mod:`gpulint.semantic.evaluation` does for evaluation mode.

A frozen model builds no autograd graph of its own: calling it with gradients on costs nothing
unless its inputs carry history, and then the graph is what training needs.
"""

from __future__ import annotations

import ast
from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

from gpulint.semantic.model import Function, Place, SemanticModel
from gpulint.semantic.survey import is_false_constant, module_of
from gpulint.semantic.torch_api import MODULE_RETURNING_METHODS


def frozen_models(model: SemanticModel) -> FrozenSet[Place]:
    """The places of the module's frozen models (see the module docstring)."""
    if "requires_grad" not in model.source:
        return frozenset()
    frozen: Set[Place] = set()
    unfrozen: Set[Place] = set()
    for place, switched_on in _switches(model):
        (unfrozen if switched_on else frozen).add(place)
    if not frozen:
        return frozenset()
    replaced = _replaced_parts(model)
    frozen = {
        place for place in frozen
        if not any(_related(place, other) for other in unfrozen)
        and not any(part.binding == place.binding and part.path.startswith(place.path + ".") for part in replaced)
    }
    return frozenset(frozen | _frozen_parameters(model, frozen))


def _switches(model: SemanticModel) -> Iterator[Tuple[Place, bool]]:
    """(place, switched on) for every place the code switches its parameters' gradients for."""
    for call in model.method_calls("requires_grad_"):
        switched_on = _switched_on(call)
        receiver = _module_of(call.func.value) if isinstance(call.func, ast.Attribute) else None
        place = model.place(receiver) if receiver is not None else None
        if place is not None:
            yield place, switched_on
        if not switched_on:
            for target in _bound_to(model, call):
                yield target, False
    for loop in model.nodes(ast.For):
        found = _parameter_loop(model, loop)
        if found is not None:
            yield found


def _replaced_parts(model: SemanticModel) -> Set[Place]:
    """Attributes the code sets to what a call returns (``model.fc = nn.Linear(512, 2)``): a part of
    a frozen model replaced that way has parameters that need gradients."""
    found = set()
    for assign in model.nodes(ast.Assign):
        if isinstance(assign.value, ast.Call):
            for target in assign.targets:
                place = model.place(target) if isinstance(target, ast.Attribute) else None
                if place is not None:
                    found.add(place)
    return found


def _switched_on(call: ast.Call) -> bool:
    """``requires_grad_()`` and ``requires_grad_(True)`` switch on; ``requires_grad_(False)`` off."""
    argument = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "requires_grad"), None)
    return argument is None or not is_false_constant(argument)


def _bound_to(model: SemanticModel, call: ast.Call) -> List[Place]:
    """The places an assignment binds to ``call`` or to a module-returning chain over it."""
    node: ast.AST = call
    parent = model.parent(node)
    while isinstance(parent, ast.Attribute) and parent.attr in MODULE_RETURNING_METHODS:
        grand = model.parent(parent)
        if not (isinstance(grand, ast.Call) and grand.func is parent):
            return []
        node, parent = grand, model.parent(grand)
    if not (isinstance(parent, ast.Assign) and parent.value is node):
        return []
    places = [model.place(target) for target in parent.targets]
    return [place for place in places if place is not None]


def _module_of(node: ast.expr) -> Optional[ast.expr]:
    """``model`` in ``model.eval().to(device)``; None where the chain starts from anything else."""
    root = module_of(node)
    return root if isinstance(root, (ast.Name, ast.Attribute)) else None


def _parameter_loop(model: SemanticModel, loop: ast.For) -> Optional[Tuple[Place, bool]]:
    """A loop over a model's parameters that switches their gradients: (``model``'s place, False)
    for ``for p in model.parameters(): p.requires_grad = False`` (or ``for k, v in
    model.named_parameters(): v.requires_grad = False``) directly in the loop's body, and (place,
    True) for a loop over ``parameters()`` or ``named_parameters()`` that switches any of them on,
    under an ``if`` too."""
    iterated = loop.iter
    if not (
        isinstance(iterated, ast.Call) and not iterated.args and isinstance(iterated.func, ast.Attribute)
        and iterated.func.attr in ("parameters", "named_parameters")
    ):
        return None
    place = model.place(iterated.func.value)
    target = loop.target
    if iterated.func.attr == "named_parameters" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
        target = target.elts[1]
    if place is None or not isinstance(target, ast.Name):
        return None
    name = target.id
    nested = [node for statement in loop.body for node in ast.walk(statement) if isinstance(node, ast.stmt)]
    if any(_switch_of(statement, name) for statement in nested):
        return place, True
    if any(_switch_of(statement, name) is False for statement in loop.body) and not any(
        isinstance(node, (ast.Continue, ast.Break)) for node in nested
    ):
        return place, False
    return None


def _switch_of(statement: ast.stmt, name: str) -> Optional[bool]:
    """Whether ``statement`` switches ``name``'s gradient on (True) or off (False); None if it does not."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        if isinstance(target, ast.Attribute) and target.attr == "requires_grad" and isinstance(target.value, ast.Name) and target.value.id == name:
            return not is_false_constant(statement.value)
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        if isinstance(call.func, ast.Attribute) and call.func.attr == "requires_grad_" and isinstance(call.func.value, ast.Name) and call.func.value.id == name:
            return _switched_on(call)
    return None


def _related(place: Place, other: Place) -> bool:
    """One place is the other or a part of it (``text_encoder`` and ``text_encoder.embeddings``)."""
    if place.binding != other.binding:
        return False
    shorter, longer = sorted((place.path, other.path), key=len)
    return longer == shorter or longer.startswith(shorter + ".")


def _frozen_parameters(model: SemanticModel, frozen: Set[Place]) -> Set[Place]:
    """The places of parameters that every call of their function passes a frozen model."""
    decided: Dict[Tuple[Function, int], Place] = {}
    changed = bool(frozen) and bool(model.call_sites)
    while changed:
        changed = False
        known = frozen | set(decided.values())
        for function in model.all_functions:
            for index, name in enumerate(function.positional):
                if (function, index) in decided or not function.calls:
                    continue
                if all(_passes(model, site.node, index, known) for site in function.calls):
                    binding = function.scope.resolve(name)
                    decided[(function, index)] = Place(binding)
                    changed = True
    return set(decided.values())


def _passes(model: SemanticModel, call: ast.Call, index: int, known: Set[Place]) -> bool:
    arguments = call.args[:next((i for i, a in enumerate(call.args) if isinstance(a, ast.Starred)), len(call.args))]
    if index >= len(arguments):
        return False
    receiver = _module_of(arguments[index])
    place = model.place(receiver) if receiver is not None else None
    return place is not None and place in known
