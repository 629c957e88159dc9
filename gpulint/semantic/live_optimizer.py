"""Loads that restore a whole optimizer the program goes on using.

``optimizer = checkpoint["optimizer"]`` after ``checkpoint = torch.load(path)``: the pickled
optimizer's state (momentum buffers, Adam's moments) must stay on the device of the parameters it
updates. ``map_location="cpu"`` would leave that state on the CPU while the code moves the model
back to the GPU, and the next step fails.

The value a load gives is followed through the names, items (``ckpt["state"]["optimizer"]``,
``ckpt.get("optimizer")``) and attributes it is bound to or read by, and through conditional
expressions. The load restores a live optimizer when one of those is bound (to a name, an
attribute or a place in an unpacking) under a key, attribute or target named for an optimizer
(``optim`` in it), or to a name the module also binds to a ``torch.optim`` optimizer or steps. An
item only handed on (``optimizer.load_state_dict(ckpt["optimizer"])``) is a state dict, which
``load_state_dict`` moves to the parameters' device.
"""

from __future__ import annotations

import ast
from typing import List, Optional, Set, Tuple

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.scopes import Binding
from gpulint.semantic.torch_api import OPTIMIZER_NAMESPACE, OPTIMIZER_STEPS

OPTIMIZER_WORD = "optim"
"""What a key, attribute or name that holds an optimizer spells (``optimizer``, ``optim_g``)."""
PASSING = (ast.IfExp, ast.BoolOp, ast.NamedExpr)
"""Expressions whose value may be the one inside them."""
MAX_PARTS = 200
"""How many values of one load are followed at most."""


def restores_live_optimizer(model: SemanticModel, call: ast.Call) -> bool:
    """Whether the value ``call`` loads, or a part of it, is bound as a whole optimizer."""
    pending: List[Tuple[ast.expr, bool]] = [(call, False)]
    seen: Set[int] = set()
    while pending and len(seen) < MAX_PARTS:
        value, named = pending.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        named = named or _named_for_an_optimizer(value)
        outer = _outermost(model, value)
        part = _part_of(model, outer)
        if part is not None:
            pending.append((part, named))
            continue
        for target in _targets(model, outer):
            if named or _named_for_an_optimizer(target):
                return True
            if isinstance(target, ast.Name):
                binding = model.scope_at(target).resolve(target.id)
                if _is_optimizer(model, binding):
                    return True
                pending.extend((use, named) for use in model.uses(binding) if isinstance(use.ctx, ast.Load))
    return False


def _outermost(model: SemanticModel, value: ast.expr) -> ast.expr:
    """``value``, or the conditional expression (or walrus) whose value it may be."""
    parent = model.parent(value)
    while isinstance(parent, PASSING) and not (isinstance(parent, ast.IfExp) and parent.test is value):
        value = parent
        parent = model.parent(value)
    return value


def _part_of(model: SemanticModel, value: ast.expr) -> Optional[ast.expr]:
    """The item or attribute read of ``value`` (``value["k"]``, ``value.k``, ``value.get("k")``)."""
    parent = model.parent(value)
    if isinstance(parent, ast.Subscript) and parent.value is value:
        return parent
    if isinstance(parent, ast.Attribute) and parent.value is value:
        call = model.parent(parent)
        if parent.attr == "get" and isinstance(call, ast.Call) and call.func is parent:
            return call
        return parent
    return None


def _targets(model: SemanticModel, value: ast.expr) -> List[ast.expr]:
    """What ``value`` is bound to: the targets of ``x = value``, ``x: T = value`` and ``(x := value)``,
    or its place in ``a, x = y, value`` and in ``a, x = value`` (every element: any may be it)."""
    parent = model.parent(value)
    if isinstance(parent, ast.NamedExpr) and parent.value is value:
        return [parent.target]
    if isinstance(parent, ast.AnnAssign) and parent.value is value:
        return [parent.target]
    assign = model.parent(parent) if isinstance(parent, ast.Tuple) else None
    if isinstance(parent, ast.Tuple) and isinstance(assign, ast.Assign):
        position = [index for index, element in enumerate(parent.elts) if element is value]
        return [
            target.elts[position[0]] for target in assign.targets
            if position and isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == len(parent.elts)
        ]
    if isinstance(parent, ast.Assign) and parent.value is value:
        found: List[ast.expr] = []
        for target in parent.targets:
            found.extend(target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target])
        return [element.value if isinstance(element, ast.Starred) else element for element in found]
    return []


def _named_for_an_optimizer(node: ast.AST) -> bool:
    """A key, attribute, ``.get`` key or name that spells ``optim``."""
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, ast.Constant) and isinstance(key.value, str) and OPTIMIZER_WORD in key.value.lower()
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        key = node.args[0]
        return isinstance(key, ast.Constant) and isinstance(key.value, str) and OPTIMIZER_WORD in key.value.lower()
    if isinstance(node, ast.Attribute):
        return OPTIMIZER_WORD in node.attr.lower()
    if isinstance(node, ast.Name):
        return OPTIMIZER_WORD in node.id.lower()
    return False


def _is_optimizer(model: SemanticModel, binding: Binding) -> bool:
    """A name the module also binds to a ``torch.optim`` optimizer, or steps."""
    for use in model.uses(binding):
        parent = model.parent(use)
        if isinstance(use.ctx, ast.Store) and isinstance(parent, ast.Assign) and isinstance(parent.value, ast.Call):
            if any(name.startswith(OPTIMIZER_NAMESPACE) for name in model.resolved_names(parent.value.func)):
                return True
        if isinstance(use.ctx, ast.Load) and isinstance(parent, ast.Attribute) and parent.attr in OPTIMIZER_STEPS:
            if isinstance(model.parent(parent), ast.Call):
                return True
    return False
