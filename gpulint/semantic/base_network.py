"""Loads that start a part of a network from its base network's weights, beside a resume.

A detection training script in the mould of ssd.pytorch chooses, by an ``if``, between resuming
the whole network from a checkpoint of its own training and starting the network's base (its
ImageNet backbone) from pretrained weights::

    if args.resume:
        net.load_weights(args.resume)
    else:
        vgg_weights = torch.load(args.save_folder + args.basenet)
        net.vgg.load_state_dict(vgg_weights)

The program saves the whole network, which the resuming branch restores; the part's weights come
from elsewhere: a published backbone (``vgg16_reducedfc.pth``, ``darknet.pth``), converted and
shared from the CPU.

A load counts where what it gives, directly or through the plain name an assignment of the whole
call binds, is handed to ``load_state_dict`` of a part of a network (``net.vgg``, ``self.net.base``;
not ``net.module``, the whole network that ``DataParallel`` wraps), and where the other branch of an
``if`` around the load calls a loading method (a name that starts with ``load``:
``load_state_dict``, ``load_weights``) on that network itself.
"""

from __future__ import annotations

import ast
from typing import Iterator, List, Optional

from gpulint.semantic.model import Place, SemanticModel

LOADS_INTO = "load_state_dict"
WRAPPED_MODULE = "module"
"""The attribute by which ``DataParallel`` holds the whole network it wraps."""
LOADING_PREFIX = "load"


def starts_a_part_beside_a_resume(model: SemanticModel, call: ast.Call) -> bool:
    """Whether ``call`` (a ``torch.load``) starts a part of a network that the other branch of an
    ``if`` around it restores whole (see the module's docstring)."""
    for network in _networks_loaded_in_part(model, call):
        if any(_restores(model, branch, network) for branch in _other_branches(model, call)):
            return True
    return False


def _networks_loaded_in_part(model: SemanticModel, call: ast.Call) -> List[Place]:
    """The networks, by place, a part of which gets what ``call`` loads."""
    values: List[ast.expr] = [call]
    named = model.assigned_name(call)
    if named is not None:
        _, place = named
        values.extend(use for use in model.uses(place.binding) if isinstance(use.ctx, ast.Load))
    networks = []
    for value in values:
        network = _network_of_part(model, value)
        if network is not None:
            networks.append(network)
    return networks


def _network_of_part(model: SemanticModel, value: ast.expr) -> Optional[Place]:
    """``net`` where ``value`` is the one argument of ``net.part.load_state_dict(value)``."""
    loading = model.parent(value)
    if not (isinstance(loading, ast.Call) and loading.args and loading.args[0] is value):
        return None
    method = loading.func
    if not (isinstance(method, ast.Attribute) and method.attr == LOADS_INTO):
        return None
    part = method.value
    if not isinstance(part, ast.Attribute) or part.attr == WRAPPED_MODULE:
        return None
    return model.place(part.value)


def _other_branches(model: SemanticModel, call: ast.Call) -> Iterator[List[ast.stmt]]:
    """For each ``if`` around ``call`` (in its function), the branch that does not hold it."""
    child: ast.AST = call
    for node in model.ancestors(call):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return
        if isinstance(node, ast.If) and child is not node.test:
            yield node.orelse if any(child is statement for statement in node.body) else node.body
        child = node


def _restores(model: SemanticModel, branch: List[ast.stmt], network: Place) -> bool:
    """Whether a statement of ``branch`` calls a loading method on ``network`` itself."""
    for statement in branch:
        for node in ast.walk(statement):
            if (
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr.startswith(LOADING_PREFIX) and model.place(node.func.value) == network
            ):
                return True
    return False
