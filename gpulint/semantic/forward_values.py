"""Where a function's forward-pass values may go: kept past the function, or handed to code that
may take gradients through them.

``train(epoch)`` of a graph-network script: a forward pass, a backward pass and an optimizer step,
then ``model.eval()`` and a validation forward pass over held-out data whose outputs only become
printed numbers. No backward pass can reach what the validation pass computes when nothing from
its statement on can keep a value past the function (:func:`keeps_nothing_from`). A fix that turns
gradients off in a function is safe only where no value of its forward passes goes to an object
that may need their graph (:func:`hands_on`: a Grad-CAM explainer, a logger, a metric).
"""

from __future__ import annotations

import ast
from typing import Collection, List, Set

from gpulint.semantic.confined import CONTAINER_MUTATORS, DEFINITIONS, STORING_FUNCTIONS
from gpulint.semantic.model import Function, SemanticModel
from gpulint.semantic.one_example import LIBRARIES, PYTHON_BUILTINS, keeps_activations
from gpulint.semantic.scopes import Binding
from gpulint.semantic.survey import own_nodes
from gpulint.semantic.torch_api import (
    DEVICE_KEEPING_TENSOR_METHODS, HISTORY_FREE_METHODS, LAYOUT_METHODS, TENSOR_TO_PYTHON_METHODS, VALUE_BUILTINS,
)

MODE_METHODS = frozenset({"eval", "train"})
"""A module's mode switches: they return the module and keep nothing."""
COLLECTING_BUILTINS = frozenset({"sum", "min", "max", "abs", "sorted", "list", "tuple", "zip", "enumerate", "range", "map"})
"""Builtins whose result is a new value made of what they are given: they keep nothing themselves."""
PYTHON_VALUE_BUILTINS = VALUE_BUILTINS | {"format"}
"""Builtins whose result is a Python value whatever they are given."""
TENSOR_METHODS = LAYOUT_METHODS | DEVICE_KEEPING_TENSOR_METHODS | HISTORY_FREE_METHODS
"""Tensor methods that give a new value and keep nothing (``x.to(device)``, ``out.argmax(1)``)."""
FRESH_VALUES = (ast.Constant, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp, ast.BinOp)
"""Values an assignment gives a name afresh: a constant, a display, arithmetic."""
TRAINING_WORDS = frozenset({"backward", "step", "train", "fit", "update", "optim", "optimize", "grad", "grads"})
"""Words of an imported function's name that say it may train with what it is given."""


def keeps_nothing_from(model: SemanticModel, function: Function, statements: List[ast.stmt], forward: Collection[ast.Call]) -> bool:
    """Whether ``statements``, the rest of a function's body, can keep no value past the function.

    The module's models keep no activations (no hook, no forward pass storing: see
    :func:`~gpulint.semantic.one_example.keeps_activations`); the function declares nothing
    ``global`` or ``nonlocal`` and defines nothing (a closure may outlive it); and the statements
    store no attribute or item, add with ``+=`` only onto names the function binds afresh (not a
    caller's list), neither yield nor await, raise only constants, return nothing or Python values
    (``loss.item()``), and call only the forward passes ``forward``, mode switches, torch's and
    numpy's functions, builtins that give Python values, functions imported from other modules
    (a metrics helper), and methods of constants, of calls' results and of values the function
    made itself, or tensor methods that give a new value (:data:`TENSOR_METHODS`), that are no
    container's mutator and change nothing in place."""
    if keeps_activations(model) or any(
        isinstance(node, (ast.Global, ast.Nonlocal, *DEFINITIONS)) for statement in function.node.body for node in ast.walk(statement)
    ):
        return False
    allowed = {id(call) for call in forward}
    for node in own_nodes(statements):
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
            return False
        if isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
            return False
        if isinstance(node, ast.Raise) and node.exc is not None and not _constant_exception(node.exc):
            return False
        if isinstance(node, ast.Return) and node.value is not None and not python_value(node.value):
            return False
        if isinstance(node, ast.AugAssign) and not (isinstance(node.target, ast.Name) and _fresh_local(model, function, node.target)):
            return False
        if isinstance(node, ast.Call) and id(node) not in allowed and not _keeps_nothing(model, function, node):
            return False
    return True


def hands_on(model: SemanticModel, function: Function, forward: Collection[ast.Call]) -> bool:
    """Whether the function hands a value computed from its forward passes ``forward`` (the call,
    or a name bound from one, in turn) to something that may keep it or take gradients through it:
    a callable object such as a Grad-CAM, a logger, a metric's ``update``; any call but those
    :func:`keeps_nothing_from` accepts."""
    allowed = {id(call) for call in forward}
    derived = _names_computed_from(function, allowed)

    def computed(node: ast.expr) -> bool:
        if python_value(node) or isinstance(node, ast.JoinedStr) or (
            isinstance(node, ast.Call) and model.is_builtin(node.func, PYTHON_VALUE_BUILTINS)
        ):
            return False  # a Python value holds no tensor
        return any(
            id(part) in allowed or (isinstance(part, ast.Name) and part.id in derived) for part in ast.walk(node)
        )

    return any(
        isinstance(node, ast.Call) and id(node) not in allowed
        and any(computed(argument) for argument in [*node.args, *(k.value for k in node.keywords)])
        and not _keeps_nothing(model, function, node)
        for node in own_nodes(function.node.body)
    )


def _names_computed_from(function: Function, forward: Set[int]) -> Set[str]:
    """The names the function binds, directly or through others, to a value computed from one of
    the calls ``forward`` (by ``id``)."""
    names: Set[str] = set()
    assignments = [node for node in own_nodes(function.node.body) if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr))]
    changed = True
    while changed:
        changed = False
        for node in assignments:
            value = node.iter if isinstance(node, ast.For) else node.value
            if value is None or not any(
                id(part) in forward or (isinstance(part, ast.Name) and part.id in names) for part in ast.walk(value)
            ):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                new = {part.id for part in ast.walk(target) if isinstance(part, ast.Name)} - names
                if new:
                    names |= new
                    changed = True
    return names


def python_value(node: ast.expr) -> bool:
    """A constant, a Python value of a tensor (``.item()``, ``.tolist()``), or a tuple of them."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Tuple):
        return all(python_value(element) for element in node.elts)
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TENSOR_TO_PYTHON_METHODS and not node.args


def _words(name: str) -> Set[str]:
    return {word for part in name.lower().split(".") for word in part.split("_") if word}


def _constant_exception(exception: ast.expr) -> bool:
    """``raise StopTraining`` or ``raise ValueError("diverged")``: nothing of the function's values."""
    if isinstance(exception, ast.Call):
        return all(isinstance(argument, ast.Constant) for argument in [*exception.args, *(k.value for k in exception.keywords)])
    return isinstance(exception, (ast.Name, ast.Attribute))


def _keeps_nothing(model: SemanticModel, function: Function, call: ast.Call) -> bool:
    func = call.func
    names = model.resolved_names(func)
    if names & STORING_FUNCTIONS or model.class_built(call) is not None:
        return False
    if names and all(name.startswith(LIBRARIES) for name in names):
        return True
    if names and all(name.rpartition(".")[2][:1].islower() and not _words(name) & TRAINING_WORDS for name in names):
        return True  # another module's function (not a class, nor named for training: a metrics helper)
    if isinstance(func, ast.Name):
        return model.is_builtin(func, PYTHON_BUILTINS | COLLECTING_BUILTINS)
    if not isinstance(func, ast.Attribute) or func.attr in CONTAINER_MUTATORS or func.attr.endswith("_"):
        return False
    if (func.attr in MODE_METHODS and not call.args) or func.attr in TENSOR_METHODS:
        return True
    root: ast.expr = func.value
    while isinstance(root, (ast.Attribute, ast.Subscript)):
        root = root.value
    if isinstance(root, (ast.Constant, ast.Call, ast.JoinedStr)):
        return True
    return isinstance(root, ast.Name) and _fresh_local(model, function, root)


def _fresh(model: SemanticModel, value: ast.expr) -> bool:
    """A value of its own: a constant, a display, arithmetic, or the result (or an item of the
    result) of torch's or numpy's functions, of builtins that build values and of tensor methods
    (``output.max(1)[1]``); not another object's item, attribute or ``setdefault``."""
    while isinstance(value, (ast.Subscript, ast.Attribute)):
        value = value.value
        if isinstance(value, ast.Call):
            break
    if isinstance(value, ast.Call):
        names = model.resolved_names(value.func)
        if names:
            return all(name.startswith(LIBRARIES) for name in names)
        if isinstance(value.func, ast.Name):
            return model.is_builtin(value.func, PYTHON_VALUE_BUILTINS | COLLECTING_BUILTINS | {"dict", "set"})
        return isinstance(value.func, ast.Attribute) and value.func.attr in TENSOR_METHODS
    return isinstance(value, FRESH_VALUES)


def _unaliased(model: SemanticModel, binding: Binding) -> bool:
    """Whether no read of the name hands its object on: as an assignment's value, a call's
    argument, a container's element or a value stored in an item or attribute."""
    for use in model.uses(binding):
        if not isinstance(use.ctx, ast.Load):
            continue
        parent = model.parent(use)
        if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.keyword, ast.Starred)):
            return False
        if isinstance(parent, ast.Call) and use is not parent.func:
            return False
    return True


def _fresh_local(model: SemanticModel, function: Function, name: ast.Name) -> bool:
    """Whether ``name`` is a local of the function (not a parameter) every binding of which gives it
    a value of its own (:func:`_fresh`: not another name's object, nor an instance of a class of the
    module) or adds to it with ``+=``."""
    binding = model.scope_at(name).resolve(name.id)
    if binding.scope is not function.scope or name.id in function.scope.parameters or model.bound_otherwise(binding):
        return False
    for use in model.uses(binding):
        if isinstance(use.ctx, ast.Load):
            continue
        statement = model.parent(use)
        if isinstance(statement, ast.AugAssign) and statement.target is use:
            continue
        if not (isinstance(statement, ast.Assign) and statement.targets == [use] and _fresh(model, statement.value)):
            return False
    return _unaliased(model, binding)
