"""Functions of the module whose results carry no autograd history, however they are called.

A feature extractor that switches gradients off inside its own body — ``model.eval()``, then
``with torch.no_grad():`` around the loop that appends ``model(x)`` to ``feats``, then ``return
torch.cat(feats)`` — hands its caller values without history, though the function as a whole
does not run with gradients off (its first statements run before the ``with`` block). A reader
sees it at once; a caller collecting its results in a loop keeps no graph.

Decided for every ``def`` of the module that returns something at each ``return`` (one at least),
where each returned value is *grad-free*:

- a constant, a value computed where gradients are always off
  (:meth:`~gpulint.semantic.model.SemanticModel.gradients_off_at`: in a grad-off ``with`` block, in
  a function that always runs with them off, after ``torch.set_grad_enabled(False)``), or a chain
  that detaches on its way (``out.detach().cpu()``), or a builtin's Python value (``len(feats)``);
- a tuple or list display, arithmetic, an attribute or an item of grad-free values;
- a torch function (``torch.cat(feats)``, ``F.normalize(x)``) or a tensor method that computes from its receiver and
  arguments (``feats.mean(0)``, ``x.view(-1)``) given only grad-free values;
- a local name, not a parameter and read by no function, lambda or class the function defines,
  every binding of which in the function is a grad-free value or is made where gradients are off,
  and every value appended or written into which (``feats.append(...)``, ``feats[i] = ...``) is too.

Anything else — a parameter (the caller's value, which may carry history), an attribute of
``self``, a call of another function, a forward pass with gradients on — is not grad-free.
"""

from __future__ import annotations

import ast
from typing import FrozenSet, List, Optional, Set

from gpulint.semantic.model import Function, SemanticModel
from gpulint.semantic.survey import SCOPES, own_nodes
from gpulint.semantic.torch_api import (
    BINARY_TENSOR_METHODS, DEVICE_KEEPING_TENSOR_METHODS, ELEMENTWISE_METHODS, LAYOUT_METHODS,
    REDUCTIONS, is_torch_tensor_function,
)

COMPUTING_METHODS = LAYOUT_METHODS | DEVICE_KEEPING_TENSOR_METHODS | ELEMENTWISE_METHODS | BINARY_TENSOR_METHODS | REDUCTIONS
"""Tensor methods whose result is computed from the receiver and the arguments alone."""
FILLING_METHODS = frozenset({"append", "extend", "insert"})
"""Methods of a list that put a value into it."""
DETACHING = frozenset({"detach", "item", "tolist", "numpy"})
"""Methods whose result carries no autograd history."""
PYTHON_VALUE_BUILTINS = ("len", "int", "float", "bool", "str", "round")
"""Builtins whose result is a Python value (``len(features)``), never a tensor."""
MAX_DEPTH = 12
"""How deep values are followed through names and operands."""


def grad_free_functions(model: SemanticModel) -> FrozenSet[Function]:
    """The functions of the module whose every returned value is grad-free (see the module's docstring)."""
    if "grad" not in model.source:
        return frozenset()
    return frozenset(function for function in model.all_functions if _returns_grad_free(model, function))


def _returns_grad_free(model: SemanticModel, function: Function) -> bool:
    own = list(own_nodes(function.node.body))
    returns = [node for node in own if isinstance(node, ast.Return)]
    if not returns or any(node.value is None for node in returns):
        return False
    reader = _Reader(model, function, own)
    return all(reader.grad_free(node.value, 0) for node in returns if node.value is not None)


class _Reader:
    """Reads the values of one function for grad-freedom."""

    def __init__(self, model: SemanticModel, function: Function, own: List[ast.AST]) -> None:
        self.model = model
        self.parameters = set(function.scope.parameters)
        self.own = own
        self.reading: Set[str] = set()
        self.nested = {
            inner.id for scope in ast.walk(function.node) if isinstance(scope, SCOPES) and scope is not function.node
            for inner in ast.walk(scope) if isinstance(inner, ast.Name)
        }
        """Names a nested function, lambda or class reads or binds: it may put anything into them."""

    def grad_free(self, node: ast.expr, depth: int) -> bool:
        if depth > MAX_DEPTH:
            return False
        if isinstance(node, ast.Constant) or self._computed_with_gradients_off(node):
            return True
        if isinstance(node, (ast.Tuple, ast.List)):
            return all(self.grad_free(element, depth + 1) for element in node.elts)
        if isinstance(node, ast.BinOp):
            return self.grad_free(node.left, depth + 1) and self.grad_free(node.right, depth + 1)
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            return self.grad_free(node.value, depth + 1)
        if isinstance(node, ast.Call):
            return self._call_grad_free(node, depth)
        if isinstance(node, ast.Name):
            return self._name_grad_free(node.id, depth)
        return False

    def _computed_with_gradients_off(self, node: ast.AST) -> bool:
        line, column, _, _ = self.model.span(node)
        return self.model.gradients_off_at(line, column)

    def _call_grad_free(self, call: ast.Call, depth: int) -> bool:
        func = call.func
        arguments = [argument.value if isinstance(argument, ast.Starred) else argument for argument in call.args]
        arguments += [keyword.value for keyword in call.keywords]
        if (isinstance(func, ast.Attribute) and func.attr in DETACHING) or self.model.is_builtin(func, PYTHON_VALUE_BUILTINS):
            return True
        if any(is_torch_tensor_function(name) for name in self.model.resolved_names(func)):
            return all(self.grad_free(argument, depth + 1) for argument in arguments)
        if isinstance(func, ast.Attribute) and func.attr in COMPUTING_METHODS:
            return self.grad_free(func.value, depth + 1) and all(self.grad_free(argument, depth + 1) for argument in arguments)
        return False

    def _name_grad_free(self, name: str, depth: int) -> bool:
        if name in self.parameters or name in self.nested:
            return False
        if name in self.reading:
            return True
        self.reading.add(name)
        try:
            values = self._values_put_into(name)
            return values is not None and bool(values) and all(
                value is None or self.grad_free(value, depth + 1) for value in values
            )
        finally:
            self.reading.discard(name)

    def _values_put_into(self, name: str) -> Optional[List[Optional[ast.expr]]]:
        """What the function binds ``name`` to or puts into it (None for a value made where
        gradients are off, which needs no reading); None where it binds it any other way (a loop's
        target, a ``with`` target, an import, ``global``)."""
        values: List[Optional[ast.expr]] = []
        for node in self.own:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    found = _binds(target, name)
                    if found == "whole":
                        values.append(None if self._computed_with_gradients_off(node) else node.value)
                    elif found == "part":
                        if not self._computed_with_gradients_off(node):
                            return None
                        values.append(None)
                    elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id == name:
                        values.append(None if self._computed_with_gradients_off(node) else node.value)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == name:
                values.append(None if self._computed_with_gradients_off(node) else node.value)
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and isinstance(node.target, ast.Name) and node.target.id == name:
                if node.value is None:
                    continue
                values.append(None if self._computed_with_gradients_off(node) else node.value)
            elif isinstance(node, ast.Call) and _fills(node, name):
                values.extend(None if self._computed_with_gradients_off(node) else argument for argument in node.args)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and _binds(node.target, name):
                if not self._computed_with_gradients_off(node.target):
                    return None
            elif isinstance(node, (ast.With, ast.AsyncWith)) and any(
                item.optional_vars is not None and _binds(item.optional_vars, name) for item in node.items
            ):
                return None
            elif isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
                return None
            elif isinstance(node, (ast.Import, ast.ImportFrom, ast.ExceptHandler)) and _names_bound(node) & {name}:
                return None
        return values


def _binds(target: ast.AST, name: str) -> str:
    """``whole`` where ``target`` is the name itself, ``part`` where it binds the name as an element
    of an unpacking, else an empty string."""
    if isinstance(target, ast.Name):
        return "whole" if target.id == name else ""
    if isinstance(target, ast.Starred):
        return "part" if _binds(target.value, name) else ""
    if isinstance(target, (ast.Tuple, ast.List)):
        return "part" if any(_binds(element, name) for element in target.elts) else ""
    return ""


def _fills(call: ast.Call, name: str) -> bool:
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr in FILLING_METHODS and isinstance(func.value, ast.Name) and func.value.id == name


def _names_bound(node: ast.AST) -> Set[str]:
    if isinstance(node, ast.ExceptHandler):
        return {node.name} if node.name else set()
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return set()
