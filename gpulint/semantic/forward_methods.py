"""The methods of a model class that run as part of its forward pass, by definition.

``forward`` of a class of the module that is a model, and every method such a method calls on
``self`` (``self.forward_image(x)``, found by binding, also inherited from another class of the
module), through one another. What they compute is the forward pass their caller runs, which the
caller may backpropagate whatever mode the method switches its layers to (a network that runs its
batch norm in training mode by ``self.train(True)`` ... ``self.train(False)`` around it).
"""

from __future__ import annotations

import ast
from typing import FrozenSet, List, Set

from gpulint.semantic.model import Function, SemanticModel
from gpulint.semantic.survey import own_nodes


def forward_methods(model: SemanticModel) -> FrozenSet[Function]:
    """The module's methods that run as part of a model's forward pass (see the module docstring)."""
    found: Set[Function] = {
        function for function in model.all_functions
        if function.name == "forward" and function.owner is not None and function.owner.node in model.module_classes
    }
    frontier: List[Function] = list(found)
    while frontier:
        function = frontier.pop()
        for node in own_nodes(function.node.body):
            if isinstance(node, ast.Call):
                callee = model.callee(node)
                if callee is not None and callee.owner is not None and callee not in found:
                    found.add(callee)
                    frontier.append(callee)
    return frozenset(found)
