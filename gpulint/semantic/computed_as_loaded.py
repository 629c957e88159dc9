"""Tensors taken out of a load that the program computes with, unmoved, beside values it puts on the GPU.

``checkpoint = torch.load(path)``, ``centers = checkpoint["state_dict"]["classifier.W"].clone()``,
then ``torch.matmul(vectors.cuda(), centers)``: the weight enters the product as the file's tensor
came back, on the device it was saved from, beside a tensor the program moved to the GPU. With
``map_location="cpu"`` the product would mix devices and fail, so the load is the program's own
placement of that tensor.

Decided in the scope the load is bound in (a plain assignment to one name), outside code that runs on
several GPUs: the names taken from the load are its name and each name the scope binds, only by
plain assignments (a ``del`` aside), to a value read from one of them as loaded — a subscript, an
attribute, a method that keeps the device (``.clone()``, ``.t()``, ``.view(n, -1)``), or a torch
function given it first (``F.normalize(centers, dim=0)``). The load counts where a read of one of
them is, as it is, an operand of arithmetic (``centers @ vectors``, ``centers - vectors``), an
argument of a torch function (``torch.matmul``, ``torch.cosine_similarity``) or of a tensor method
that computes with two tensors called on another (``vectors.matmul(centers)``), or the tensor such
a method is called on,
beside another operand moved to the GPU: ``x.cuda()``, ``x.to("cuda")``, or a name the statements
just before bind so (:mod:`gpulint.semantic.run_as_loaded`). Module calls are
:mod:`~gpulint.semantic.run_as_loaded`'s to decide.
"""

from __future__ import annotations

import ast
from typing import List

from gpulint.semantic.model import Binding, SemanticModel
from gpulint.semantic.run_as_loaded import moved_to_the_gpu, placed_input
from gpulint.semantic.torch_api import BINARY_TENSOR_METHODS, MULTI_DEVICE_WORDS, PLACEMENT_KEEPING_METHODS, is_torch_tensor_function


def computed_beside_gpu_values_as_loaded(model: SemanticModel, call: ast.Call) -> bool:
    """Whether a tensor taken from what ``call`` loads is computed with, as loaded, beside a value
    the program moved to the GPU."""
    bound = model.assigned_name(call)
    if bound is None or bound[1].binding.scope.is_class or model.spells(MULTI_DEVICE_WORDS):
        return False
    taken = _names_taken_from(model, bound[1].binding)
    return any(
        _beside_a_gpu_value(model, use)
        for binding in taken for use in model.uses(binding) if isinstance(use.ctx, ast.Load)
    )


def _names_taken_from(model: SemanticModel, loaded: Binding) -> List[Binding]:
    """The load's binding and each binding of its scope given, only by plain assignments, a value
    read as loaded from one already found (:func:`_widest_as_loaded`)."""
    found: List[Binding] = [loaded]
    for binding in found:
        for use in model.uses(binding):
            if not isinstance(use.ctx, ast.Load):
                continue
            target = model.assigned_name(_widest_as_loaded(model, use))
            if target is None or target[1].binding in found or target[1].binding.scope is not loaded.scope:
                continue
            values = model.plain_assignments(target[1].binding, deletions=True)
            if values is not None and all(_read_as_loaded(model, value, [*found, target[1].binding]) for value in values):
                found.append(target[1].binding)
    return found


def _widest_as_loaded(model: SemanticModel, node: ast.expr) -> ast.expr:
    """The widest expression around ``node`` that reads it as loaded: through subscripts and
    attributes of it, methods that keep the device called on it, torch's tensor functions given it
    first."""
    while True:
        parent = model.parent(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            call = model.parent(parent)
            if isinstance(call, ast.Call) and call.func is parent:
                if parent.attr not in PLACEMENT_KEEPING_METHODS:
                    return node
                parent = call
        elif isinstance(parent, ast.Subscript):
            if parent.value is not node:
                return node
        elif not (isinstance(parent, ast.Call) and parent.args and parent.args[0] is node and _is_torch_function(model, parent.func)):
            return node
        node = parent


def _read_as_loaded(model: SemanticModel, value: ast.expr, taken: List[Binding]) -> bool:
    """Whether ``value`` reads one of the ``taken`` names as loaded, as a whole (:func:`_widest_as_loaded`)."""
    for node in ast.walk(value):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and _widest_as_loaded(model, node) is value:
            place = model.place(node)
            return place is not None and place.path == "" and place.binding in taken
    return False


def _beside_a_gpu_value(model: SemanticModel, read: ast.Name) -> bool:
    """Whether ``read``, as loaded, meets a value moved to the GPU in one computation: the other
    operand of arithmetic, another argument of a torch function, the tensor a method that computes
    with two tensors (:data:`~gpulint.semantic.torch_api.BINARY_TENSOR_METHODS`) is called on with
    it, or an argument of such a method called on it."""
    operand = _widest_as_loaded(model, read)
    parent = model.parent(operand)
    others: List[ast.expr] = []
    if isinstance(parent, ast.BinOp):
        others = [parent.right if parent.left is operand else parent.left]
    elif isinstance(parent, ast.Call) and operand in parent.args:
        if _is_torch_function(model, parent.func):
            others = [argument for argument in parent.args if argument is not operand]
        elif isinstance(parent.func, ast.Attribute) and parent.func.attr in BINARY_TENSOR_METHODS:
            others = [parent.func.value]
    elif isinstance(parent, ast.Attribute) and parent.value is operand and parent.attr in BINARY_TENSOR_METHODS:
        call = model.parent(parent)
        if isinstance(call, ast.Call) and call.func is parent:
            others = list(call.args)
    return any(placed_input(model, other, moved_to_the_gpu) for other in others)


def _is_torch_function(model: SemanticModel, func: ast.expr) -> bool:
    """A tensor function of torch (``torch.matmul``, ``F.normalize``; not a module class)."""
    return any(is_torch_tensor_function(name) for name in model.resolved_names(func))
