"""What the code shows of ``torch.utils.data.DataLoader`` objects: the dataset a loader is given,
the loop that draws its batches (directly, or through ``enumerate`` or a ``tqdm`` progress bar),
and whether those batches may carry autograd history.
"""

from __future__ import annotations

import ast
from typing import Optional

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.torch_api import DATA_LOADER, TENSOR_DATASET, TQDM


def dataset_of(loader: ast.Call) -> Optional[ast.expr]:
    """The dataset a ``DataLoader(...)`` call is given, by position or keyword."""
    if loader.args:
        return None if isinstance(loader.args[0], ast.Starred) else loader.args[0]
    return next((keyword.value for keyword in loader.keywords if keyword.arg == "dataset"), None)


def passes_through(model: SemanticModel, call: ast.Call) -> bool:
    """Whether iterating over ``call`` draws what its first argument gives: ``enumerate(loader)``
    (beside a count) or a ``tqdm`` progress bar of it."""
    return bool(call.args) and (model.is_builtin(call.func, {"enumerate"}) or bool(model.resolved_names(call.func) & TQDM))


def batches_without_history(model: SemanticModel, iterable: ast.expr) -> bool:
    """Whether iterating over ``iterable`` draws batches of a ``DataLoader`` (the call, or a name
    every binding of which is one; through :func:`passes_through` wrappers) whose dataset is no
    ``TensorDataset``: the dataset's examples are read from data, and a batch collated from them
    holds no autograd history. A ``TensorDataset`` serves slices of the tensors it is given, which
    may have some."""
    while isinstance(iterable, ast.Call) and passes_through(model, iterable):
        iterable = iterable.args[0]
    if isinstance(iterable, ast.Name):
        loaders = model.plain_assignments(model.scope_at(iterable).resolve(iterable.id))
        return bool(loaders) and all(_over_read_data(model, loader) for loader in loaders or [])
    return _over_read_data(model, iterable)


def _over_read_data(model: SemanticModel, value: ast.expr) -> bool:
    """``DataLoader(dataset, ...)`` with a dataset made by a call that is no ``TensorDataset``'s
    (directly, or through a name every binding of which is one)."""
    if not (isinstance(value, ast.Call) and model.resolved_names(value.func) == {DATA_LOADER}):
        return False
    dataset = dataset_of(value)
    made = model.plain_assignments(model.scope_at(dataset).resolve(dataset.id)) if isinstance(dataset, ast.Name) else [dataset]
    return bool(made) and all(
        isinstance(made_by, ast.Call) and TENSOR_DATASET not in model.resolved_names(made_by.func) for made_by in made or []
    )
