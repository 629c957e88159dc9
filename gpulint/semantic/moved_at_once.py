"""Loaded modules that a single-GPU program moves to the GPU at once, whatever device they were
saved from.

``waveglow = torch.load(path)["model"]`` followed, in the same block, by ``waveglow.cuda().eval()``
(or ``waveglow = waveglow.cuda()``) ends with the module on the GPU wherever its tensors were
loaded, and the ``.cuda()`` needs a GPU anyway: in a program with one GPU, ``map_location`` changes
nothing but the route (a checkpoint saved from another GPU index would not load, which rank-0 saves
avoid). Not in code that runs on several GPUs (it spells ``local_rank``, ``torch.distributed``,
``set_device``, ``DistributedDataParallel``...): there every process would load onto the GPU the
file was saved from, not its own. The statements in between may only rebind the name from a call
on it (``waveglow = waveglow.remove_weightnorm(waveglow)``) or not mention it at all; any other use,
a compound statement, a jump or a ``yield``/``await`` (the move may not run, or runs in a branch),
or the end of the block first, and nothing is decided. A discarded ``x.cuda()`` moves nothing unless
``x`` is a module, so that form counts only when the chain also calls a method only modules have
(``.eval()``). A load moved in the expression that makes it (``resnet = torch.load(path).cuda()``)
is moved at once too, whatever it is: what the code keeps is the copy on the GPU. Not a part of it
(``torch.load(path)["model"].cuda()`` has put the whole checkpoint on the GPU first), nor a move to
a GPU the code names (``.cuda(1)``: the load goes to the saved GPU first).
"""

from __future__ import annotations

import ast
from typing import List, Optional

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.torch_api import MODULE_ONLY_METHODS, MULTI_DEVICE_WORDS

SIMPLE_STATEMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Import, ast.ImportFrom, ast.Assert, ast.Pass)


def moved_to_gpu_at_once(model: SemanticModel, call: ast.Call) -> bool:
    """Whether what ``call`` loads (or a subscript of it) is bound to a name that the statements
    after it, in the same block, move to the GPU before any other use (see the module docstring)."""
    value: ast.expr = call
    parent = model.parent(value)
    while isinstance(parent, ast.Subscript) and parent.value is value:
        value, parent = parent, model.parent(parent)
    if value is call and isinstance(parent, ast.Attribute) and parent.value is value and parent.attr == "cuda":
        moved = model.parent(parent)
        return isinstance(moved, ast.Call) and moved.func is parent and not moved.args and not moved.keywords and (
            not model.spells(MULTI_DEVICE_WORDS)
        )
    if not (isinstance(parent, ast.Assign) and parent.value is value and len(parent.targets) == 1):
        return False
    target = parent.targets[0]
    if not isinstance(target, ast.Name):
        return False
    block = model.block_of(parent)
    if block is None or model.spells(MULTI_DEVICE_WORDS):
        return False
    for statement in block[block.index(parent) + 1:]:
        if not isinstance(statement, SIMPLE_STATEMENTS) or any(
            isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)) for node in ast.walk(statement)
        ):
            return False
        if not any(isinstance(node, ast.Name) and node.id == target.id for node in ast.walk(statement)):
            continue
        if _moves(statement, target.id):
            return True
        if not _rebinds_from_itself(statement, target.id):
            return False
    return False


def _chain(node: ast.expr) -> Optional[List[str]]:
    """The methods a call chain on a name calls, first to last (``m.cuda().eval()``: cuda, eval),
    with the name; None for anything else."""
    methods: List[str] = []
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        methods.append(node.func.attr)
        node = node.func.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(methods)]


def _moves(statement: ast.stmt, name: str) -> bool:
    """``name = name.cuda()...``, or ``name.cuda()...`` with a module-only method in the chain."""
    chain = _chain(statement.value) if isinstance(statement, (ast.Assign, ast.Expr)) else None
    if chain is None or chain[0] != name or chain[1:2] != ["cuda"]:
        return False
    if isinstance(statement, ast.Assign):
        return all(isinstance(target, ast.Name) and target.id == name for target in statement.targets)
    return any(method in MODULE_ONLY_METHODS for method in chain[2:])


def _rebinds_from_itself(statement: ast.stmt, name: str) -> bool:
    """``name = name.method(...)``: the name keeps what a call on the loaded object returns."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
        return False
    target = statement.targets[0]
    chain = _chain(statement.value)
    return isinstance(target, ast.Name) and target.id == name and chain is not None and chain[0] == name and len(chain) > 1
