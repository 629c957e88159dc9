"""Calls of library models' own inference methods, which switch gradients off themselves.

``model = SentenceTransformer("all-MiniLM-L6-v2", device="cuda")`` and then ``model.encode(batch)``
in a loop: ``encode`` runs the forward pass under ``torch.no_grad()`` inside the library
(:data:`~gpulint.semantic.torch_api.GRAD_FREE_LIBRARY_METHODS`), so the call builds no graph,
though it is spelt like an encoder-decoder's ``model.encode(src)``. Decided for a method call on a
plain name every assignment of which, in the scope that reads it, builds the model with that
library's class (``SentenceTransformer(...)``, perhaps moved or switched: ``.to(device).eval()``).
"""

from __future__ import annotations

import ast

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.survey import module_of
from gpulint.semantic.torch_api import GRAD_FREE_LIBRARY_METHODS


def runs_its_own_inference(model: SemanticModel, call: ast.Call) -> bool:
    """Whether ``call`` is a library model's method that runs without gradients by itself."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)):
        return False
    binding = model.scope_at(func.value).resolve(func.value.id)
    if model.bound_otherwise(binding):
        return False
    values = model.plain_assignments(binding)
    if not values:
        return False
    return all(_builds_with_a_grad_free(model, value, func.attr) for value in values)


def _builds_with_a_grad_free(model: SemanticModel, value: ast.expr, method: str) -> bool:
    built = module_of(value)
    if not isinstance(built, ast.Call):
        return False
    return any(method in GRAD_FREE_LIBRARY_METHODS.get(name, frozenset()) for name in model.resolved_names(built.func))
