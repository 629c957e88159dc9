"""Data that a dataset loads and a pinning data loader serves: it holds no device tensors.

``self.datas = torch.load(datas_dir)`` in a map-style dataset (a class that defines
``__getitem__``), or ``mel = torch.load(path)`` in its ``__getitem__`` when the item it returns is
made from ``mel``, where the module builds that class and serves datasets through
``DataLoader(..., pin_memory=True)``: pinning copies each batch into page-locked host memory and
raises on a CUDA tensor (only dense CPU tensors can be pinned), so the program runs only where the
loaded data is on the CPU. Where the load puts it is moot: the file holds CPU tensors, or the run
fails whatever ``map_location`` says.
"""

from __future__ import annotations

import ast
from typing import Optional, Set

from gpulint.semantic.model import FunctionNode, SemanticModel
from gpulint.semantic.survey import own_nodes
from gpulint.semantic.torch_api import DATA_LOADER

ITEM_METHOD = "__getitem__"
"""What a map-style dataset defines: the loader indexes it."""


def served_by_a_pinning_loader(model: SemanticModel, call: ast.Call) -> bool:
    """Whether ``call`` is bound to an attribute of the instance in a method of a map-style dataset
    class the module builds, or to a name in its ``__getitem__`` from which the item it returns is
    made, in a module that serves datasets through a pinning ``DataLoader``."""
    statement = model.parent(call)
    if not (isinstance(statement, ast.Assign) and statement.value is call and len(statement.targets) == 1):
        return False
    target = statement.targets[0]
    method = model.innermost_function(statement)
    if method is None or method.owner is None or method.node is not _holding_function(model, statement):
        return False
    kept = isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == method.receiver
    if not kept and not (method.name == ITEM_METHOD and isinstance(target, ast.Name) and _returned_from(method.node, target.id)):
        return False
    dataset = method.owner.node
    if ITEM_METHOD not in method.owner.methods:
        return False
    built = any(model.defined_class(node.func) is dataset for node in model.nodes(ast.Call))
    return built and any(_pins(model, node) for node in model.nodes(ast.Call))


def _returned_from(function: FunctionNode, name: str) -> bool:
    """Whether a ``return`` of ``function`` (its own, not a nested ``def``'s) gives back a value made
    from ``name``: the name itself, or a name assigned from an expression that reads one such
    (``mel = torch.FloatTensor(mel[start:end])``, then ``return mel, speaker``)."""
    own = list(own_nodes(function.body))
    made = {name}
    changed = True
    while changed:
        changed = False
        for node in own:
            if isinstance(node, ast.Assign) and _reads_any(node.value, made):
                for bound in (t.id for target in node.targets for t in ast.walk(target) if isinstance(t, ast.Name)):
                    if bound not in made:
                        made.add(bound)
                        changed = True
    return any(isinstance(node, ast.Return) and node.value is not None and _reads_any(node.value, made) for node in own)


def _reads_any(expression: ast.expr, names: Set[str]) -> bool:
    return any(isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names for node in ast.walk(expression))


def _holding_function(model: SemanticModel, statement: ast.stmt) -> Optional[ast.AST]:
    """The ``def`` whose body (directly, not through a nested ``def`` or class) holds ``statement``."""
    return next((node for node in model.ancestors(statement) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))), None)


def _pins(model: SemanticModel, call: ast.Call) -> bool:
    """``DataLoader(..., pin_memory=True)``."""
    return model.resolved_names(call.func) == {DATA_LOADER} and any(
        keyword.arg == "pin_memory" and isinstance(keyword.value, ast.Constant) and keyword.value.value is True
        for keyword in call.keywords
    )
