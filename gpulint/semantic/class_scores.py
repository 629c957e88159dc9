"""Names a module reduces to one class per row: a classifier's scores.

``_, preds = torch.max(outputs, 1)``, ``pred = outputs.data.max(1, keepdim=True)[1]``,
``outputs.argmax(dim=1)``: a reduction of :data:`~gpulint.semantic.torch_api.ROW_REDUCING_METHODS`
or :data:`~gpulint.semantic.torch_api.ROW_REDUCING_FUNCTIONS` over dimension 1 picks one class per
example, so what it is given is a batch of class scores, a short row per example. Read anywhere in
the module (an evaluation function often reduces what the training function leaves under the same
name), by the name the reduction reads, through ``.data`` and normalisations that keep a row per example
(``torch.max(F.softmax(outputs, dim=1), 1)``).
"""

from __future__ import annotations

import ast
from typing import FrozenSet, List, Optional

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.torch_api import (
    ROW_PRESERVING_FUNCTIONS, ROW_PRESERVING_METHODS, ROW_REDUCING_FUNCTIONS, ROW_REDUCING_METHODS,
)


def class_scores(model: SemanticModel) -> FrozenSet[str]:
    """The names the module reduces to one class per row (see the module's docstring)."""
    return frozenset(name for call in model.nodes(ast.Call) for name in [reduced_rows_of(model, call)] if name is not None)


def reduced_rows_of(model: SemanticModel, call: ast.Call) -> Optional[str]:
    """The name whose rows ``call`` reduces to one class each, over dimension 1; None for any other call."""
    func = call.func
    arguments: List[ast.expr] = list(call.args)
    if model.resolved_names(func) & ROW_REDUCING_FUNCTIONS:
        if not arguments:
            return None
        scores, arguments = arguments[0], arguments[1:]
    elif isinstance(func, ast.Attribute) and func.attr in ROW_REDUCING_METHODS:
        scores = func.value
    else:
        return None
    dims = arguments[:1] or [keyword.value for keyword in call.keywords if keyword.arg == "dim"]
    if not (len(dims) == 1 and isinstance(dims[0], ast.Constant) and dims[0].value == 1 and not isinstance(dims[0].value, bool)):
        return None
    return _scores_normalised_in(model, scores)


def _scores_normalised_in(model: SemanticModel, value: ast.expr) -> Optional[str]:
    """The name of the scores ``value`` is, through ``.data`` and normalisations that keep one row
    per example (``F.softmax(outputs, dim=1)``, ``outputs.sigmoid()``, ``outputs.detach()``)."""
    while True:
        if isinstance(value, ast.Attribute) and value.attr == "data":
            value = value.value
        elif isinstance(value, ast.Call) and model.resolved_names(value.func) & ROW_PRESERVING_FUNCTIONS:
            if not value.args:
                return None
            value = value.args[0]
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in ROW_PRESERVING_METHODS:
            value = value.func.value
        else:
            return value.id if isinstance(value, ast.Name) else None
