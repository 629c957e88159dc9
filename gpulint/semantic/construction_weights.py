"""Loads of the weights a network is built with.

Code that builds a network and loads a file into it as it does so builds it with the weights it
ships with: a published pretrained network (an ImageNet backbone, a converted detector or pose
stage), saved from the CPU. A checkpoint of the user's own training is loaded after the network is
built, by the code that trains or runs it. Two shapes are taken for this:

- a class's ``__init__`` that hands what it loads to ``load_state_dict`` there
  (``self.load_state_dict(torch.load(weights_path))``, ``net.load_state_dict(...)`` of a backbone
  the constructor builds, ``self.model.load_state_dict(transfer(self.model, torch.load(path)))``);
- a function that builds a network, returns it, and loads weights into it only when a parameter
  asks for them (``if checkpoint is not None:``, ``if pretrained:``): an optional initialisation.

The value a load gives is followed through the names of the function it is bound to, and the
local names it is merged into (``model_dict.update(pretrained)``). It is no such case when any of
it is kept: stored in an attribute, an item of something else or a global, returned or yielded
(``self.start_epoch = checkpoint["epoch"]`` shows a training resume), nor when it restores an
optimizer (a receiver or key that spells ``optim``): a resume, not an initialisation.
"""

from __future__ import annotations

import ast
from typing import Iterable, Optional, Set

from gpulint.semantic.model import Function, SemanticModel
from gpulint.semantic.survey import ast_dotted_name, own_nodes

CONSTRUCTOR = "__init__"
LOADS_INTO = "load_state_dict"
OPTIMIZER_WORD = "optim"
"""What a receiver or key that restores an optimizer spells (``optimizer``, ``"optim_state"``)."""


def loaded_while_built(model: SemanticModel, call: ast.Call) -> bool:
    """Whether ``call`` loads the weights a constructor, or a function that builds and returns a
    network, builds it with."""
    function = model.innermost_function(call)
    if function is None:
        return False
    nodes = list(own_nodes(function.node.body))
    if not any(node is call for node in nodes):
        return False  # in a lambda of its own scope
    assigned = _assigned_names(nodes)
    if function.name == CONSTRUCTOR and function.receiver is not None:
        built = assigned | {function.receiver}
    elif _asked_for_by_a_parameter(model, function, call):
        built = assigned & _returned_names(nodes)
    else:
        return False
    carriers = _carriers(nodes, call, assigned)
    receivers = [
        (node.func.value, node) for node in nodes
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == LOADS_INTO
        and any(_carries(argument, call, carriers) for argument in _arguments(node))
    ]
    if not receivers or _kept(function, nodes, call, carriers):
        return False
    return all(_root(receiver) in built and not _restores_optimizer(receiver, node) for receiver, node in receivers)


def _asked_for_by_a_parameter(model: SemanticModel, function: Function, call: ast.Call) -> bool:
    """Whether the load is in an ``if`` of the function whose test reads one of its parameters by
    name (``if pretrained:``, ``if checkpoint is not None:``)."""
    parameters = set(function.scope.parameters)
    parent = model.parent(call)
    while parent is not None and parent is not function.node:
        if isinstance(parent, ast.If) and any(
            isinstance(part, ast.Name) and part.id in parameters for part in ast.walk(parent.test)
        ):
            return True
        parent = model.parent(parent)
    return False


def _returned_names(nodes: Iterable[ast.AST]) -> Set[str]:
    """The names a ``return`` of the function reads (``sam`` of ``return sam``,
    ``backbone`` of ``return BackboneWithFPN(backbone, ...)``)."""
    return {
        part.id for node in nodes if isinstance(node, ast.Return) and node.value is not None
        for part in ast.walk(node.value) if isinstance(part, ast.Name)
    }


def _arguments(call: ast.Call) -> Iterable[ast.expr]:
    yield from call.args
    yield from (keyword.value for keyword in call.keywords)


def _carries(expression: ast.AST, call: ast.Call, carriers: Set[str]) -> bool:
    """Whether ``expression`` holds the load or reads a name bound to what it gave."""
    return any(
        part is call or (isinstance(part, ast.Name) and isinstance(part.ctx, ast.Load) and part.id in carriers)
        for part in ast.walk(expression)
    )


def _carriers(nodes: Iterable[ast.AST], call: ast.Call, assigned: Set[str]) -> Set[str]:
    """The names of the constructor bound to what the load gave, or to something computed from it,
    and those of its own (``assigned``) that a method call merges it into
    (``model_dict.update(pretrained)``): a fixed point."""
    nodes = list(nodes)
    carriers: Set[str] = set()
    changed = True
    while changed:
        changed = False
        for node in nodes:
            targets: Iterable[ast.AST] = ()
            if isinstance(node, ast.Assign) and _carries(node.value, call, carriers):
                targets = node.targets
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None and _carries(node.value, call, carriers):
                targets = [node.target]
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and _carries(node.iter, call, carriers):
                targets = [node.target]
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                targets = [item.optional_vars for item in node.items if item.optional_vars is not None and _carries(item.context_expr, call, carriers)]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and node.func.value.id in assigned and node.func.attr != LOADS_INTO:
                if any(_carries(argument, call, carriers) for argument in _arguments(node)):
                    targets = [node.func.value]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name) and name.id not in carriers:
                        carriers.add(name.id)
                        changed = True
    return carriers


def _assigned_names(nodes: Iterable[ast.AST]) -> Set[str]:
    """The names the constructor binds itself (parameters only when it also rebinds them)."""
    return {node.id for node in nodes if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}


def _kept(function: Function, nodes: Iterable[ast.AST], call: ast.Call, carriers: Set[str]) -> bool:
    """Whether anything of the load outlives the constructor: stored in an attribute, an item of a
    value that is not a carrier, or a name the constructor declares global or nonlocal; returned
    or yielded."""
    if carriers & (function.scope.globals | function.scope.nonlocals):
        return True
    for node in nodes:
        if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)) and node.value is not None and _carries(node.value, call, carriers):
            return True
        value = getattr(node, "value", None)
        if not isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) or value is None or not _carries(value, call, carriers):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            for part in ast.walk(target):
                if isinstance(part, ast.Attribute) and isinstance(part.ctx, ast.Store):
                    return True
                if isinstance(part, ast.Subscript) and isinstance(part.ctx, ast.Store) and _root(part.value) not in carriers:
                    return True
    return False


def _root(node: ast.expr) -> Optional[str]:
    """``self`` of ``self.model.backbone``, ``net`` of ``net``; None for anything else."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _restores_optimizer(receiver: ast.expr, call: ast.Call) -> bool:
    """Whether a ``load_state_dict`` call on ``receiver`` restores an optimizer: the receiver or a
    key it reads spells ``optim``."""
    dotted = ast_dotted_name(receiver)
    if dotted is not None and OPTIMIZER_WORD in dotted.lower():
        return True
    return any(
        isinstance(part, ast.Constant) and isinstance(part.value, str) and OPTIMIZER_WORD in part.value.lower()
        for argument in _arguments(call) for part in ast.walk(argument)
    )
