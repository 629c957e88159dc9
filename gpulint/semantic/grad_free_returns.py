"""Functions of the module whose results carry no autograd history, however they are called.

A feature extractor that switches gradients off inside its own body — ``model.eval()``, then
``with torch.no_grad():`` around the loop that appends ``model(x)`` to ``feats``, then ``return
torch.cat(feats)`` — hands its caller values without history, though the function as a whole
does not run with gradients off (its first statements run before the ``with`` block). A reader
sees it at once; a caller collecting its results in a loop keeps no graph.

Decided for every ``def`` of the module that returns a value at each ``return`` (one at least),
where each returned value is *grad-free*:

- a constant, a chain that detaches on its way (``out.detach().cpu()``,
  :func:`~gpulint.semantic.detached.detached`), or a builtin's Python value (``len(feats)``);
- a fresh computation made where gradients are certainly off — in the body of a ``with
  torch.no_grad():``, ``torch.inference_mode()`` or ``torch.set_grad_enabled(False)`` block that
  nothing inside switches back on, or in a function decorated so — that is a forward pass of a
  module (or of a parameter the function calls, ``model(images)``), a torch function or a tensor method that never returns a view or its input
  (:data:`~gpulint.semantic.torch_api.FRESH_TORCH_FUNCTIONS`,
  :data:`~gpulint.semantic.torch_api.FRESH_TENSOR_METHODS`); ``out[:, 0]``, ``out.float()`` or a
  plain name read there keeps the history of what it reads, and ``set_grad_enabled(flag)`` with a
  flag known only at run time switches nothing off for certain;
- a tuple or list display, arithmetic, an attribute or an item of grad-free values, or a torch
  function or tensor method computing from grad-free values alone (none asking for gradients:
  ``requires_grad=True``, ``requires_grad_()``);
- a name bound in the function itself (not a parameter, not ``global`` or ``nonlocal``, read by
  no function, lambda or class it defines) every binding of which, and every value appended or
  written into which (``feats.append(...)``, ``feats[i] = ...``), is grad-free, and every other read
  of which can neither change it nor hand it on: an operand, an argument of a torch function (not
  its ``out=``) or of a value builtin, the receiver of a tensor method that is not in place, or
  what the function returns. An alias (``other = feats``), a call that is handed it, a loop over it
  or an in-place method (``buf.add_(...)``) may put anything into it. A target of a loop over
  something named for batches or a loader (``for images, _ in loader``,
  :mod:`gpulint.semantic.batch_names`) is data, without history; any other loop's target is not
  grad-free.
"""

from __future__ import annotations

import ast
from typing import FrozenSet, List, Optional, Set

from gpulint.semantic.batch_names import BATCH_WORDS, name_words
from gpulint.semantic.detached import DETACHING_METHODS, detached
from gpulint.semantic.model import Function, SemanticModel
from gpulint.semantic.survey import SCOPES, argument_values, ast_dotted_name, forward_model, own_nodes
from gpulint.semantic.torch_api import (
    BINARY_TENSOR_METHODS, DEVICE_KEEPING_TENSOR_METHODS, ELEMENTWISE_METHODS, FRESH_TENSOR_METHODS,
    FRESH_TORCH_FUNCTIONS, GRAD_OFF, LAYOUT_METHODS, REDUCTIONS, SET_GRAD_ENABLED, VALUE_BUILTINS,
    is_torch_tensor_function,
)

COMPUTING_METHODS = LAYOUT_METHODS | DEVICE_KEEPING_TENSOR_METHODS | ELEMENTWISE_METHODS | BINARY_TENSOR_METHODS | REDUCTIONS
"""Tensor methods whose result is computed from the receiver and the arguments alone."""
FILLING_METHODS = frozenset({"append", "extend", "insert"})
"""Methods of a list that put a value into it."""
GRADIENT_REQUEST = "requires_grad"
"""The keyword (and, with ``_``, the method) that asks a tensor to record a history of its own."""
PYTHON_VALUE_BUILTINS = VALUE_BUILTINS - {"round"}
"""Builtins whose result is a Python value (``len(feats)``); ``round(t)`` gives a tensor, with ``t``'s history."""
OUT_KEYWORD = "out"
"""The keyword through which a torch function writes into a tensor it is handed."""
MAX_DEPTH = 12
"""How deep values are followed through names and operands."""


def grad_free_functions(model: SemanticModel) -> FrozenSet[Function]:
    """The functions of the module whose every returned value is grad-free (see the module's docstring)."""
    return frozenset(function for function in model.all_functions if _returns_grad_free(model, function))


def _returns_grad_free(model: SemanticModel, function: Function) -> bool:
    own = list(own_nodes(function.node.body))
    returned = [node.value for node in own if isinstance(node, ast.Return)]
    if not returned:
        return False
    reader = _Reader(model, function, own)
    return all(value is not None and reader.grad_free(value, 0) for value in returned)


class _Reader:
    """Reads the values of one function for grad-freedom."""

    def __init__(self, model: SemanticModel, function: Function, own: List[ast.AST]) -> None:
        self.model = model
        self.function = function
        self.own = own
        self.locals = function.scope.locals() - set(function.scope.parameters)
        self.nested = {
            inner.id for scope in ast.walk(function.node) if isinstance(scope, SCOPES) and scope is not function.node
            for inner in ast.walk(scope) if isinstance(inner, ast.Name)
        }
        """Names a nested function, lambda or class reads or binds: it may put anything into them."""
        self.reading: Set[str] = set()
        """The names being read: a name met again while its own values are read (``ret = ret +
        (x,)``) adds nothing to what its other values say of it."""

    def grad_free(self, node: ast.expr, depth: int) -> bool:
        if depth > MAX_DEPTH:
            return False
        if isinstance(node, ast.Constant) or detached(node):
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

    def _call_grad_free(self, call: ast.Call, depth: int) -> bool:
        func = call.func
        if self.model.is_builtin(func, PYTHON_VALUE_BUILTINS):
            return True
        if any(keyword.arg == GRADIENT_REQUEST for keyword in call.keywords) or (
            isinstance(func, ast.Attribute) and func.attr == GRADIENT_REQUEST + "_"
        ):
            return False
        if self._fresh(call) and self._gradients_certainly_off(call):
            return True
        arguments = argument_values(call)
        if any(is_torch_tensor_function(name) for name in self.model.resolved_names(func)):
            return all(self.grad_free(argument, depth + 1) for argument in arguments)
        if isinstance(func, ast.Attribute) and func.attr in COMPUTING_METHODS:
            return self.grad_free(func.value, depth + 1) and all(self.grad_free(argument, depth + 1) for argument in arguments)
        return False

    def _fresh(self, call: ast.Call) -> bool:
        """A forward pass (:meth:`_forward_pass`), or a torch function or tensor method that makes a
        new tensor."""
        func = call.func
        if self.model.resolved_names(func) & FRESH_TORCH_FUNCTIONS:
            return True
        if isinstance(func, ast.Attribute) and func.attr in FRESH_TENSOR_METHODS:
            return True
        return self._forward_pass(call)

    def _forward_pass(self, call: ast.Call) -> bool:
        """A call of a module the module knows, or of a parameter of the function (``model(images)``)."""
        called = forward_model(call)
        if isinstance(called, ast.Name) and called.id in self.function.scope.parameters:
            return True
        return ast_dotted_name(called) in self.model.modules

    def _gradients_certainly_off(self, node: ast.AST) -> bool:
        """Whether ``node`` is in the body of a ``with`` block that turns gradients off for certain
        and that nothing in it switches on again, or in a function decorated to run without them."""
        if any(self._certainly_off(decorator) for decorator in self.function.node.decorator_list):
            return True
        child, parent = node, self.model.parent(node)
        while parent is not None and parent is not self.function.node:
            if isinstance(parent, (ast.With, ast.AsyncWith)) and child in parent.body and any(
                self._certainly_off(item.context_expr) for item in parent.items
            ):
                return not self.model.may_switch_grad_on_in(parent)
            child, parent = parent, self.model.parent(parent)
        return False

    def _certainly_off(self, expression: ast.expr) -> bool:
        """``torch.no_grad()``, ``torch.inference_mode()`` (or either as a bare decorator), or
        ``torch.set_grad_enabled(False)``."""
        call = expression if isinstance(expression, ast.Call) else None
        names = self.model.resolved_names(call.func if call is not None else expression)
        if not names:
            return False
        if names <= GRAD_OFF:
            return call is None or (not call.args and not call.keywords)
        return call is not None and names <= SET_GRAD_ENABLED and len(call.args) == 1 and (
            isinstance(call.args[0], ast.Constant) and call.args[0].value is False
        )

    def _name_grad_free(self, name: str, depth: int) -> bool:
        if name not in self.locals or name in self.nested:
            return False
        if name in self.reading:
            return True
        self.reading.add(name)
        try:
            values = self._values_put_into(name)
            return values is not None and bool(values) and all(self.grad_free(value, depth + 1) for value in values)
        finally:
            self.reading.discard(name)

    def _values_put_into(self, name: str) -> Optional[List[ast.expr]]:
        """What the function binds ``name`` to or puts into it (a constant for a batch a loop over a
        loader draws); None where it binds it otherwise (another loop's target, a ``with`` target, an
        import, an exception) or reads it in a way that may change it or hand it on
        (:meth:`_read_safely`)."""
        values: List[ast.expr] = []
        for node in self.own:
            if isinstance(node, ast.Name) and node.id == name:
                if isinstance(node.ctx, ast.Load) and not self._read_safely(node):
                    return None
                if not isinstance(node.ctx, ast.Load) and not self._drawn_batch(node):
                    value = self._bound_value(node)
                    if value is None:
                        return None
                    values.append(value)
                elif not isinstance(node.ctx, ast.Load):
                    values.append(ast.Constant(value=None))
            elif isinstance(node, ast.Call) and _fills(node, name):
                values.extend(argument_values(node))
            elif isinstance(node, ast.Assign) and any(_writes_an_item_of(target, name) for target in node.targets):
                values.append(node.value)
            elif isinstance(node, (ast.ExceptHandler, ast.alias)) and name in (getattr(node, "name", None), getattr(node, "asname", None)):
                return None
        return values

    def _drawn_batch(self, target: ast.Name) -> bool:
        """Whether the name is (part of) the target of a ``for`` loop over something named for
        batches or a loader (``for images, _ in loader``): a batch holds data, without history."""
        node: ast.AST = target
        parent = self.model.parent(node)
        while isinstance(parent, (ast.Tuple, ast.List, ast.Starred)):
            node, parent = parent, self.model.parent(parent)
        if not (isinstance(parent, (ast.For, ast.AsyncFor)) and parent.target is node):
            return False
        read = [ast_dotted_name(part) or "" for part in ast.walk(parent.iter) if isinstance(part, (ast.Name, ast.Attribute))]
        return any(name_words(name) & BATCH_WORDS for name in read)

    def _bound_value(self, target: ast.Name) -> Optional[ast.expr]:
        """The value a store of the name assigns (the whole value of an unpacking), or None for a
        binding of another kind (a loop's or a ``with`` target, a deletion)."""
        node: ast.AST = target
        parent = self.model.parent(node)
        while isinstance(parent, (ast.Tuple, ast.List, ast.Starred)):
            node, parent = parent, self.model.parent(parent)
        if isinstance(parent, ast.Assign) and node in parent.targets:
            return parent.value
        if isinstance(parent, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)) and parent.target is node:
            return parent.value
        return None

    def _read_safely(self, node: ast.expr) -> bool:
        """Whether what ``node`` reads (the name, or a view of it) can be neither changed nor handed
        on from here: see the module's docstring."""
        parent = self.model.parent(node)
        if isinstance(parent, (ast.Return, ast.Expr, ast.BinOp, ast.UnaryOp, ast.Compare, ast.FormattedValue)):
            return True
        if isinstance(parent, (ast.Tuple, ast.List)):
            return isinstance(parent.ctx, ast.Load) and self._read_safely(parent)
        if isinstance(parent, ast.keyword):
            call = self.model.parent(parent)
            return parent.arg != OUT_KEYWORD and isinstance(call, ast.Call) and self._hands_on_nothing(call)
        if isinstance(parent, ast.Call):
            return node is not parent.func and self._hands_on_nothing(parent)
        if isinstance(parent, ast.Subscript) and parent.value is node:
            if isinstance(parent.ctx, ast.Store):
                return isinstance(node, ast.Name)
            return isinstance(parent.ctx, ast.Load) and self._read_safely(parent)
        if isinstance(parent, ast.Attribute) and parent.value is node and isinstance(parent.ctx, ast.Load):
            call = self.model.parent(parent)
            if not (isinstance(call, ast.Call) and call.func is parent):
                return True
            method = parent.attr
            if method in FILLING_METHODS:
                return isinstance(node, ast.Name)
            if method in LAYOUT_METHODS:
                return self._read_safely(call)
            return method in COMPUTING_METHODS | DETACHING_METHODS
        return False

    def _hands_on_nothing(self, call: ast.Call) -> bool:
        """A torch function or a value builtin, which keeps nothing it is given; a forward pass, which
        reads its input; or a list of the function's own being filled, whose values are read in turn."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in FILLING_METHODS:
            return isinstance(func.value, ast.Name) and func.value.id in self.locals
        return (
            self.model.is_builtin(func, PYTHON_VALUE_BUILTINS)
            or any(is_torch_tensor_function(name) for name in self.model.resolved_names(func))
            or self._forward_pass(call)
        )


def _fills(call: ast.Call, name: str) -> bool:
    func = call.func
    return isinstance(func, ast.Attribute) and func.attr in FILLING_METHODS and isinstance(func.value, ast.Name) and func.value.id == name


def _writes_an_item_of(target: ast.expr, name: str) -> bool:
    return isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id == name
