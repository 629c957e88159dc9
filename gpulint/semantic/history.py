"""Which values of a module may carry autograd history, decided on the model for every function at
once: a call of a module, a criterion, a ``torch.nn.functional`` function, a ``*_loss`` function of
torch or a helper that returns a forward output computed with gradients on (of a model that is not
frozen, :mod:`gpulint.semantic.frozen`, or of a frozen one given an argument that may carry
history); a name that ``.backward()`` is called on, or a name spelling ``loss`` unpacked beside
one (:func:`loss_parts`), or that its scope binds to such a call or to arithmetic of such values
(``total = 0.5 * loss - torch.mean(log_det)``); and a call of a loss helper of
the module (:attr:`AutogradHistory.loss_helpers`) given an argument that may carry history. A helper
whose every returned value is computed without history (:mod:`gpulint.semantic.grad_free_returns`:
a feature extractor with its own ``torch.no_grad()`` block) is neither such a helper nor a loss helper.

It over-approximates what a rule's per-scope analysis concludes, so a rule may use it to decide
which functions it must read at all.
"""

from __future__ import annotations

import ast
import re
from typing import AbstractSet, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from gpulint.semantic.detached import only_detached
from gpulint.semantic.frozen import frozen_models
from gpulint.semantic.grad_free_returns import grad_free_functions
from gpulint.semantic.model import SemanticModel
from gpulint.semantic.survey import argument_values, ast_dotted_name, module_of, own_nodes
from gpulint.semantic.torch_api import (
    FUNCTIONAL_NAMESPACE,
    REDUCTIONS,
    TORCH_PACKAGE,
    is_loss_module,
    is_torch_tensor_function,
)

LOSS_WORDS = frozenset({"loss", "losses"})
"""Words of a name that holds a loss (``batch_loc_loss``, ``lossD``)."""
WORD = re.compile(r"[A-Z0-9]+(?![a-z])|[A-Z]?[a-z0-9]+")
LOSS_FUNCTION = re.compile(r"_*(loss|criterion|(compute|calc|calculate|get|build|make)_(\w+_)?loss(es)?)", re.IGNORECASE)
"""The start of the name of a function that computes a loss (``loss_fn``, ``compute_loss``,
``make_loss_NA``, ``criterion``)."""
MAX_HISTORY_ROUNDS = 4
"""How many times names are re-read for history passed on through loss helpers (a loss of a loss)."""


def loss_parts(unpacked: Sequence[str], backpropagated: AbstractSet[str]) -> Set[str]:
    """The names of one unpacking (``loss, loc_loss, class_loss = criterion(...)``) that spell
    ``loss`` as a word, where another of them is backpropagated: parts of the same loss, with its
    history. The others (``acc``, ``correct``) may be metrics computed without history."""
    if not set(unpacked) & backpropagated:
        return set()
    return {name for name in unpacked if LOSS_WORDS & {word.lower() for word in WORD.findall(name)}}


def name_bindings(model: SemanticModel) -> Iterator[Tuple[str, ast.expr]]:
    """(name, value) for every plain binding of a name in the module."""
    for assign in model.nodes(ast.Assign):
        for target in assign.targets:
            elements = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
            for element in elements:
                name = element.value if isinstance(element, ast.Starred) else element
                if isinstance(name, ast.Name):
                    yield name.id, assign.value
    for annotated in model.nodes(ast.AnnAssign):
        if isinstance(annotated.target, ast.Name) and annotated.value is not None:
            yield annotated.target.id, annotated.value
    for named in model.nodes(ast.NamedExpr):
        yield named.target.id, named.value


class AutogradHistory:
    """The values of one module that may carry autograd history."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self.criteria = {m for m in model.modules if m.split(".")[-1].lower().endswith(("criterion", "loss_fn"))}
        bindings = list(name_bindings(model))
        self.criteria.update(
            name for name, value in bindings
            if isinstance(value, ast.Call) and any(is_loss_module(q) for q in model.qualified_names(value.func))
        )
        self.backward_names = {
            call.func.value.id for call in model.method_calls("backward")
            if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
        }
        self.loss_parts: Dict[Tuple[int, int], Set[str]] = {}
        """For each unpacking (by line and column of its statement), the loss parts it binds:
        names spelling ``loss`` beside a backpropagated one, each returned as a tensor by the
        module's function (or model's ``forward``) it calls (:func:`_returned_as_tensors`)."""
        for assign in model.nodes(ast.Assign):
            for target in assign.targets:
                if isinstance(target, (ast.Tuple, ast.List)):
                    unpacked = [element.id if isinstance(element, ast.Name) else "" for element in target.elts]
                    parts = {
                        name for name in loss_parts(unpacked, self.backward_names)
                        if _returned_as_tensors(model, assign.value, unpacked.index(name), len(unpacked))
                    }
                    if parts:
                        self.loss_parts[model.span(assign)[:2]] = parts
                        self.backward_names |= parts
        frozen = model.derived(frozen_models)
        self.frozen = frozen
        """The places of the module's frozen models (:func:`~gpulint.semantic.frozen.frozen_models`)."""
        self.grad_free = model.derived(grad_free_functions)
        """The module's functions whose results carry no history
        (:func:`~gpulint.semantic.grad_free_returns.grad_free_functions`: a feature extractor that
        switches gradients off in its own body)."""
        history_free = model.runs_without_grad | self.grad_free
        unfrozen = (
            model.functions_returning_outputs(lambda call: _called_model(model, call) not in frozen) if frozen
            else model.returns_forward_output
        ) - history_free
        self.helper_calls_with_history: Set[Tuple[int, int, int, int]] = set(model.calls_of(unfrozen))
        """Where the module calls a function of its own that may run with gradients on and returns
        a forward output of a model that is not frozen, or of a frozen one given an argument that
        may carry history (the span of each call's ``func``)."""
        self.loss_helpers = frozenset(
            function for function in model.all_functions
            if LOSS_FUNCTION.match(function.name) and function not in history_free
            and _returns_tensors(model, function.node)
        )
        """Functions of the module named for a loss (``make_loss``, ``compute_loss``) that return a
        value computed as a tensor, or a tuple with one, wherever they return anything but
        ``None`` (:func:`_returns_tensors`): a loss computed from its arguments carries their
        history."""
        self.loss_helper_calls = frozenset(model.span(site.node.func) for site in model.call_sites if site.callee in self.loss_helpers)
        """Where the module calls one of its loss helpers (the span of each call's ``func``)."""
        self.history_names: Set[Tuple[str, ast.AST]] = set()
        for _ in range(MAX_HISTORY_ROUNDS):
            found = self._history_names(bindings)
            if found == self.history_names:
                break
            self.history_names = found
        frozen_only = model.returns_forward_output - history_free - unfrozen
        if frozen_only:
            self.helper_calls_with_history.update(
                model.span(site.node.func) for site in model.call_sites
                if site.callee in frozen_only and any(self.may_carry(argument) for argument in argument_values(site.node))
            )
            self.history_names = self._history_names(bindings)

    def _history_names(self, bindings: List[Tuple[str, ast.expr]]) -> Set[Tuple[str, ast.AST]]:
        return {
            (name, self.model.scope_of(value)) for name, value in bindings
            if (isinstance(value, ast.Call) and self.produces(value))
            or (isinstance(value, (ast.BinOp, ast.UnaryOp)) and self.may_carry(value))
        }

    def calls_torch_loss(self, call: ast.Call) -> bool:
        """Whether ``call`` calls a name every assignment of which, in the scope it refers to, builds
        a torch loss module (``mse = nn.MSELoss()`` at the top of a script, called in a function):
        a loss that holds no parameters, whose result carries history only where an argument does.
        Not a parameter, whatever the module binds elsewhere under the same name."""
        func = call.func
        if not isinstance(func, ast.Name):
            return False
        binding = self.model.scope_at(func).resolve(func.id)
        if binding.name in binding.scope.parameters or self.model.bound_otherwise(binding):
            return False
        values = self.model.plain_assignments(binding)
        return bool(values) and all(
            isinstance(value, ast.Call) and any(is_loss_module(q) for q in self.model.qualified_names(value.func))
            for value in values or ()
        )

    def calls_frozen_model(self, call: ast.Call) -> bool:
        """Whether ``call`` is a forward pass of a frozen model (``G(z)`` after
        ``G.requires_grad_(False)``): its output carries history only where an argument does."""
        return _called_model(self.model, call) in self.frozen

    def produces(self, call: ast.Call) -> bool:
        """Whether the call's result may carry autograd history. A criterion, a
        ``torch.nn.functional`` function or a ``*_loss`` function of torch given only detached
        values (``criterion(pred.detach().cpu(), true.detach().cpu())``) carries none."""
        model = self.model
        func = call.func
        dotted = ast_dotted_name(func)
        if dotted in model.modules - self.criteria:
            return True
        if isinstance(func, ast.Attribute) and func.attr == "forward" and ast_dotted_name(func.value) in model.modules:
            return True
        if model.span(func) in self.helper_calls_with_history:
            return True
        if model.span(func) in self.loss_helper_calls:
            return any(self.may_carry(argument) for argument in argument_values(call))
        return (
            dotted in self.criteria or any(
                q.startswith(FUNCTIONAL_NAMESPACE) or (is_torch_tensor_function(q) and q.endswith("_loss"))
                for q in model.qualified_names(func)
            )
        ) and not only_detached(call)

    def helper_binds_history(self, call: ast.Call, name: str) -> bool:
        """Whether ``name``, bound by the statement that calls the loss helper ``call``, is bound to
        what the helper computes as a tensor: the whole result, or its element at the name's place
        in an unpacking (``loss`` of ``loss, parts = self.make_loss(...)``, not ``parts`` where the
        helper returns a list of numbers there)."""
        statement = self.model.parent(call)
        if not isinstance(statement, ast.Assign) or statement.value is not call:
            return True
        for target in statement.targets:
            if isinstance(target, (ast.Tuple, ast.List)):
                unpacked = [element.id if isinstance(element, ast.Name) else "" for element in target.elts]
                if name in unpacked:
                    return _returned_as_tensors(self.model, call, unpacked.index(name), len(unpacked))
        return True

    def may_carry(self, value: ast.expr) -> bool:
        """Whether ``value`` (a call or a name read in its scope, or arithmetic, a reduction or a
        slice of one: ``torch.mean(loss) / n``, ``criterion(out, y).sum()``, ``pred[:, 1:]``) may
        carry autograd history."""
        reduced = reduced_value(self.model, value) if isinstance(value, ast.Call) else None
        if reduced is not None:
            return self.may_carry(reduced)
        if isinstance(value, ast.Call):
            return self.produces(value)
        if isinstance(value, ast.BinOp) and isinstance(value.op, ARITHMETIC):
            return self.may_carry(value.left) or self.may_carry(value.right)
        if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
            return self.may_carry(value.operand)
        if isinstance(value, ast.Subscript):
            return self.may_carry(value.value)
        return isinstance(value, ast.Name) and (
            value.id in self.backward_names or (value.id, self.model.scope_of(value)) in self.history_names
        )


ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div)
"""Operators whose result keeps the autograd history of either operand."""


def reduced_value(model: SemanticModel, call: ast.Call) -> Optional[ast.expr]:
    """The tensor a reduction that keeps its history reduces (``loss`` of ``loss.sum()`` or
    ``torch.mean(loss)``: :data:`~gpulint.semantic.torch_api.REDUCTIONS`), else None."""
    func = call.func
    if any(q == f"{TORCH_PACKAGE}.{name}" for q in model.qualified_names(func) for name in REDUCTIONS):
        return call.args[0] if call.args and not isinstance(call.args[0], ast.Starred) else None
    if isinstance(func, ast.Attribute) and func.attr in REDUCTIONS:
        return func.value
    return None


NOT_TENSORS = frozenset({"item", "tolist", "numpy", "detach"})
"""Methods whose result is a Python value, an array or a tensor without history."""
BUILTIN_VALUES = frozenset({"float", "int", "round", "bool", "str", "len", "dict", "list", "tuple", "sum", "max", "min", "abs"})
"""Builtins whose result, from a loss, is no tensor with its history (``sum`` of numbers...)."""
MAX_TENSOR_DEPTH = 8


def _returned_as_tensors(model: SemanticModel, value: ast.expr, position: int, length: int) -> bool:
    """Whether ``value`` calls a function of the module, or a model of a class of the module (its
    ``forward``), every ``return`` of which returns a tuple of ``length`` whose element at
    ``position`` is no constant, Python number or detached value (``loss.item()``, ``float(x)``,
    ``x.detach()``)."""
    if not isinstance(value, ast.Call):
        return False
    function = model.callee(value)
    node: Optional[ast.AST] = function.node if function is not None else None
    if node is None and isinstance(value.func, ast.Name):
        binding = model.scope_at(value.func).resolve(value.func.id)
        stores = [use for use in model.uses(binding) if not isinstance(use.ctx, ast.Load)]
        statement = model.parent(stores[0]) if len(stores) == 1 else None
        built = model.class_built(statement.value) if isinstance(statement, ast.Assign) and statement.targets == stores else None
        node = next((item for item in built.body if isinstance(item, ast.FunctionDef) and item.name == "forward"), None) if built else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    returns = [part for part in own_nodes(node.body) if isinstance(part, ast.Return)]
    own = list(own_nodes(node.body))
    return bool(returns) and all(
        isinstance(returned.value, ast.Tuple) and len(returned.value.elts) == length
        and _computed_as_tensor(model, own, returned.value.elts[position], 0)
        for returned in returns
    )


def _returns_tensors(model: SemanticModel, node: ast.AST) -> bool:
    """Whether ``node`` is a function that returns a value computed as a tensor
    (:func:`_computed_as_tensor`), or a tuple one element of which is, at every ``return`` but
    those that return ``None`` (``if logit is None: return None``)."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    own = list(own_nodes(node.body))
    returned = [
        part.value for part in own
        if isinstance(part, ast.Return) and not (isinstance(part.value, ast.Constant) and part.value.value is None)
    ]
    return bool(returned) and all(
        value is not None and any(
            _computed_as_tensor(model, own, element, 0)
            for element in (value.elts if isinstance(value, ast.Tuple) else [value])
        )
        for value in returned
    )


def _computed_as_tensor(model: SemanticModel, own: List[ast.AST], node: ast.expr, depth: int) -> bool:
    """Whether ``node``, in a function whose own nodes are ``own``, is computed as a tensor: a call
    of torch (a criterion, ``F.l1_loss``...), of a module or of a tensor method that keeps a tensor
    (not ``.item()``, ``.detach()``, numpy, a builtin), arithmetic with one, or a local name one of
    whose assignments (``=`` or ``+=``) is one. A constant, a dict, ``loss.item() / n``, a name
    bound only to Python values or a parameter is not."""
    if depth > MAX_TENSOR_DEPTH:
        return False
    if isinstance(node, ast.Call):
        function = node.func
        if isinstance(function, ast.Attribute) and function.attr in NOT_TENSORS:
            return False
        names = model.resolved_names(function)
        if any(name.startswith("numpy.") for name in names) or (isinstance(function, ast.Name) and function.id in BUILTIN_VALUES and not names):
            return False
        return True
    if isinstance(node, ast.BinOp):
        return _computed_as_tensor(model, own, node.left, depth + 1) or _computed_as_tensor(model, own, node.right, depth + 1)
    if isinstance(node, ast.UnaryOp):
        return _computed_as_tensor(model, own, node.operand, depth + 1)
    if isinstance(node, ast.Name):
        values = [
            part.value for part in own
            if (isinstance(part, ast.Assign) and any(isinstance(target, ast.Name) and target.id == node.id for target in part.targets))
            or (isinstance(part, ast.AugAssign) and isinstance(part.target, ast.Name) and part.target.id == node.id)
        ]
        return any(_computed_as_tensor(model, own, value, depth + 1) for value in values)
    return False


def _called_model(model: SemanticModel, call: ast.Call) -> object:
    """The place of the model a forward call calls (``model`` in ``model(x)`` and ``model.forward(x)``)."""
    func = call.func
    target = func.value if isinstance(func, ast.Attribute) and func.attr == "forward" else func
    return model.place(module_of(target))
