"""Data that a dataset loads and a pinning data loader serves: it holds no device tensors.

``self.datas = torch.load(datas_dir)`` in a map-style dataset (a class that defines
``__getitem__``), where the module builds that class and serves datasets through
``DataLoader(..., pin_memory=True)``: pinning copies each batch into page-locked host memory and
raises on a CUDA tensor (only dense CPU tensors can be pinned), so the program runs only where the
loaded data is on the CPU. Where the load puts it is moot: the file holds CPU tensors, or the run
fails whatever ``map_location`` says.
"""

from __future__ import annotations

import ast
from typing import Optional

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.torch_api import DATA_LOADER

ITEM_METHOD = "__getitem__"
"""What a map-style dataset defines: the loader indexes it."""


def served_by_a_pinning_loader(model: SemanticModel, call: ast.Call) -> bool:
    """Whether ``call`` is bound to an attribute of the instance in a method of a map-style dataset
    class the module builds, in a module that serves datasets through a pinning ``DataLoader``."""
    statement = model.parent(call)
    if not (isinstance(statement, ast.Assign) and statement.value is call and len(statement.targets) == 1):
        return False
    target = statement.targets[0]
    method = model.innermost_function(statement)
    if method is None or method.owner is None or method.node is not _holding_function(model, statement):
        return False
    if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == method.receiver):
        return False
    dataset = method.owner.node
    if ITEM_METHOD not in method.owner.methods:
        return False
    built = any(model.defined_class(node.func) is dataset for node in model.nodes(ast.Call))
    return built and any(_pins(model, node) for node in model.nodes(ast.Call))


def _holding_function(model: SemanticModel, statement: ast.stmt) -> Optional[ast.AST]:
    """The ``def`` whose body (directly, not through a nested ``def`` or class) holds ``statement``."""
    return next((node for node in model.ancestors(statement) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))), None)


def _pins(model: SemanticModel, call: ast.Call) -> bool:
    """``DataLoader(..., pin_memory=True)``."""
    return model.resolved_names(call.func) == {DATA_LOADER} and any(
        keyword.arg == "pin_memory" and isinstance(keyword.value, ast.Constant) and keyword.value.value is True
        for keyword in call.keywords
    )
