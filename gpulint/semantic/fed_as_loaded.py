"""Loaded tensors that a data loader hands, unmoved, to the program's computation.

``adversarial = torch.load(path)``, then ``loader = DataLoader(adversarial, batch_size=4)`` and
``for images, labels in loader: out = model(images)``: the batches reach the model as the file's
tensors came back, on the device they were saved from. Where the model is on an accelerator (here
or wherever it comes from) the loop relies on the load putting them there too: with
``map_location="cpu"`` the batches would reach a GPU model from the CPU and the program would fail.

Decided where the load is bound to one name by a plain assignment (or is the loader's dataset
itself; a ``del`` of the name aside), the name or the load is the dataset of a
``torch.utils.data.DataLoader`` (by position or keyword; directly, or as an argument of a
``TensorDataset``) bound to one name, and a ``for`` loop over that loader (or over ``enumerate``
or a ``tqdm`` progress bar of it) hands a batch name it binds, as it is, to a call that is not a
builtin's (``model(images)``, ``model(input_ids=ids)``, ``model(*batch)``; not ``print``) before
anything in the loop body moves that name (``.to``, ``.cuda``, ``.cpu``) or rebinds it.
"""

from __future__ import annotations

import ast
import builtins
from typing import Dict, Iterator, List, Optional, Set, Tuple

from gpulint.semantic.loaders import dataset_of, passes_through
from gpulint.semantic.model import SemanticModel
from gpulint.semantic.survey import own_nodes, position
from gpulint.semantic.torch_api import DATA_LOADER, DEVICE_MOVES, TENSOR_DATASET

def fed_to_computation_as_loaded(model: SemanticModel, call: ast.Call) -> bool:
    """Whether a data loader hands what ``call`` loads, unmoved, to a call in a loop over it."""
    return any(_feeds_unmoved_batches(model, loader) for loader in _loaders_of(model, call))


def _loaders_of(model: SemanticModel, call: ast.Call) -> Iterator[ast.Call]:
    """The ``DataLoader`` calls whose dataset is the load, or a name bound to it only, or a
    ``TensorDataset`` of one of these."""
    datasets: List[ast.expr] = [call]
    bound = model.assigned_name(call)
    if bound is not None and model.bound_once(*bound):
        datasets.extend(use for use in model.uses(bound[1].binding) if isinstance(use.ctx, ast.Load))
    for dataset in datasets:
        parent = _call_around(model, dataset)
        if isinstance(parent, ast.Call) and model.resolved_names(parent.func) == {TENSOR_DATASET} and any(
            (argument.value if isinstance(argument, ast.Starred) else argument) is dataset for argument in parent.args
        ):
            dataset, parent = parent, _call_around(model, parent)
        if isinstance(parent, ast.Call) and dataset_of(parent) is dataset and model.resolved_names(parent.func) == {DATA_LOADER}:
            yield parent


def _call_around(model: SemanticModel, argument: ast.expr) -> Optional[ast.AST]:
    """The call ``argument`` is given to, by position, ``*`` or keyword."""
    parent = model.parent(argument)
    return model.parent(parent) if isinstance(parent, (ast.keyword, ast.Starred)) else parent


def _feeds_unmoved_batches(model: SemanticModel, loader: ast.Call) -> bool:
    bound = model.assigned_name(loader)
    if bound is None or not model.bound_once(*bound):
        return False
    for use in model.uses(bound[1].binding):
        loop = _loop_over(model, use)
        if loop is not None and _passes_a_batch_unmoved(model, loop, _batch_names(model, loop)):
            return True
    return False


def _loop_over(model: SemanticModel, read: ast.Name) -> Optional[ast.For]:
    """The ``for`` loop over ``read``, or over ``enumerate`` or a ``tqdm`` progress bar of it."""
    iterated: ast.expr = read
    parent = model.parent(read)
    while isinstance(parent, ast.Call) and passes_through(model, parent) and parent.args[0] is iterated:
        iterated, parent = parent, model.parent(parent)
    return parent if isinstance(parent, ast.For) and parent.iter is iterated else None


def _batch_names(model: SemanticModel, loop: ast.For) -> Set[str]:
    """The names a loop binds to a batch's parts (not ``enumerate``'s count)."""
    target = loop.target
    enumerated = any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and model.is_builtin(node.func, {"enumerate"})
        for node in ast.walk(loop.iter)
    )
    if enumerated:
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
            return set()
        target = target.elts[1]
    return {node.id for node in ast.walk(target) if isinstance(node, ast.Name)}


def _passes_a_batch_unmoved(model: SemanticModel, loop: ast.For, names: Set[str]) -> bool:
    """Whether the loop body hands a batch name, by position, ``*`` or keyword, to a call that is
    not a builtin's before anything in the body moves (``.to``, ``.cuda``, ``.cpu``) or rebinds it."""
    nodes = list(own_nodes(loop.body))
    changed: Dict[str, Tuple[int, int]] = {}
    for node in nodes:
        name = None
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            name = node.id
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in DEVICE_MOVES and isinstance(node.func.value, ast.Name):
            name = node.func.value.id
        if name in names:
            changed[name] = min(changed.get(name, position(node)), position(node))
    for node in nodes:
        if not isinstance(node, ast.Call) or model.is_builtin(node.func, builtins.__dict__):
            continue
        for argument in [*node.args, *(keyword.value for keyword in node.keywords)]:
            value = argument.value if isinstance(argument, ast.Starred) else argument
            if isinstance(value, ast.Name) and value.id in names and (value.id not in changed or position(node) < changed[value.id]):
                return True
    return False
