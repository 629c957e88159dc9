"""Models a class differentiates through without training them: the explanation or attack wrappers
(``Generator(model)`` with ``generate_LRP`` running ``self.model(x)`` and
``one_hot.backward(retain_graph=True)``).

Such a class holds a model it is handed, so its code is not in view. A model used that way often
registers hooks on its own tensors in ``forward`` to keep their gradients
(``attention_probs.register_hook(self.save_attn_gradients)``), and those raise under
``torch.no_grad()``: another method's plain forward pass of the same model may need grad mode too.

An attribute of ``self`` is one such model where a method of the class calls it (or its
``forward``) and, in the same method or a function of the module it calls, starts a backward pass
(``.backward()``, ``torch.autograd.grad``), while the module never steps an optimizer nor builds one: a class that
trains its model backpropagates as well, but what it trains has no reason to keep gradients in hooks.
"""

from __future__ import annotations

import ast
from typing import FrozenSet, Set, Tuple

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.survey import ast_dotted_name, forward_model, own_nodes

STEP = "step"
"""``optimizer.step()``: the module trains."""

ExplainedModel = Tuple[ast.ClassDef, str]
"""A class and the dotted name of its attribute holding the model (``self.model``)."""


def explained_models(model: SemanticModel) -> FrozenSet[ExplainedModel]:
    """The class attributes the module differentiates through without training (see the module docstring)."""
    if "backward" not in model.source and "grad" not in model.source:
        return frozenset()
    if model.builds_an_optimizer or any(
        isinstance(node.func, ast.Attribute) and node.func.attr == STEP for node in model.calls()
    ):
        return frozenset()
    found: Set[ExplainedModel] = set()
    for function in model.all_functions:
        if function.owner is None or function.receiver is None:
            continue
        if function not in model.training_functions:
            continue
        for call in (node for node in own_nodes(function.node.body) if isinstance(node, ast.Call)):
            name = ast_dotted_name(forward_model(call))
            if name is not None and name.split(".", 1)[0] == function.receiver and "." in name:
                found.add((function.owner.node, "self." + name.split(".", 1)[1]))
    return frozenset(found)


def differentiated_elsewhere(model: SemanticModel, call: ast.Call) -> bool:
    """Whether ``call`` runs a model that its class differentiates through (:func:`explained_models`)."""
    explained = model.derived(explained_models)
    if not explained:
        return False
    function = model.innermost_function(call)
    name = ast_dotted_name(forward_model(call))
    if function is None or function.owner is None or function.receiver is None or name is None:
        return False
    head, _, rest = name.partition(".")
    return head == function.receiver and bool(rest) and (function.owner.node, "self." + rest) in explained
