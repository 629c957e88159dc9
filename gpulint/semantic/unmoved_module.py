"""TorchScript modules a program runs where their load puts them.

``model = torch.jit.load(path)`` and then only ``model.half()`` and ``model(image)``: nothing in the
file moves the module, so it runs on the device it was exported on. In code that may use an
accelerator, a module traced on the GPU runs there on GPU inputs; with ``map_location="cpu"`` it
would stay on the CPU and meet them there. Decided where the load is bound to a plain name (not a
class attribute, which methods read through ``self``) and every read of that binding the assignment
may reach (after it, not in another branch of an ``if`` around it) calls it, or calls a method of it
that does not move it (not ``to``, ``cuda``, ``cpu``): no read hands it to other code or stores it
elsewhere. A function's name never read counts too (its module goes where ``locals()`` takes it,
unmoved); a module-level one does not (another module may import it).
"""

from __future__ import annotations

import ast
from typing import Dict

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.torch_api import DEVICE_MOVES, JIT_LOAD, MODULE_RETURNING_METHODS
from gpulint.semantic.survey import position


def unmoved_script_module(model: SemanticModel, call: ast.Call) -> bool:
    """Whether ``call`` is a ``torch.jit.load`` whose module the file never moves."""
    if model.resolved_names(call.func) != {JIT_LOAD}:
        return False
    bound = model.assigned_name(call)
    if bound is None or bound[1].binding.scope.is_class:
        return False  # a class attribute is also read as ``self.<name>``, which may move it
    target, place = bound
    reads = [
        use for use in model.uses(place.binding)
        if isinstance(use.ctx, ast.Load) and position(use) > position(target) and not _exclusive(model, target, use)
    ]
    if not reads and not place.binding.scope.is_function:
        return False  # another module may import the name and move what it holds
    return all(_runs_in_place(model, read) for read in reads)


def _exclusive(model: SemanticModel, first: ast.AST, second: ast.AST) -> bool:
    """Whether ``first`` and ``second`` lie in different branches of one ``if`` (``if``/``elif``
    chains included), so that no run goes through both, unless a loop around that ``if`` repeats it."""
    branches = _branches(model, first)
    for node, branch in _branches(model, second).items():
        if node in branches and branches[node] != branch:
            return not any(isinstance(outer, (ast.For, ast.AsyncFor, ast.While)) for outer in model.ancestors(node))
    return False


def _branches(model: SemanticModel, node: ast.AST) -> Dict[ast.If, str]:
    """Each ``if`` around ``node``, with the branch (``body`` or ``orelse``) holding it."""
    found: Dict[ast.If, str] = {}
    child = node
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, ast.If) and child is not ancestor.test:
            found[ancestor] = "body" if any(child is part for part in ancestor.body) else "orelse"
        child = ancestor
    return found


def _runs_in_place(model: SemanticModel, read: ast.Name) -> bool:
    """``read(x)``, ``read.half()``, ``read.eval().float()``, ``read.half() if half else
    read.float()`` as a statement: called, or put through methods that return the module without
    moving it, ending in a statement of its own (not bound to another name, which may move it)."""
    node: ast.expr = read
    while True:
        parent = model.parent(node)
        if isinstance(parent, ast.Call) and parent.func is node:
            return True
        if not isinstance(parent, ast.Attribute) or parent.value is not node:
            break
        method = model.parent(parent)
        if not (isinstance(method, ast.Call) and method.func is parent) or parent.attr in DEVICE_MOVES:
            return False
        node = method
        if parent.attr not in MODULE_RETURNING_METHODS:
            return True  # a method that gives something other than the module
    if node is read:
        return False
    statement = model.parent(node)
    if isinstance(statement, ast.IfExp):
        statement = model.parent(statement)
    return isinstance(statement, ast.Expr)
