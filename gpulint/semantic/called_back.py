"""Functions a factory makes, which the code calls back only with gradients off.

A training class of a popular book builds its steps as closures: ``self.val_step_fn =
self._make_val_step_fn()`` stores the ``perform_val_step_fn`` that the method returns, which runs
the model in evaluation mode; the mini-batch method picks the step by an argument (``if
validation: step_fn = self.val_step_fn``) and calls it on every batch, and ``train()`` calls
``self._mini_batch(validation=True)`` only under ``torch.no_grad()``. In its notebooks the factory
is a plain function whose result, ``val_step_fn = make_val_step_fn(model, loss_fn)``, is handed to
``mini_batch(device, val_loader, val_step_fn)`` under ``torch.no_grad()``. Nothing calls the
closure by its name, yet it always runs with gradients off (:func:`called_back_without_grad`).

The value is followed only where nothing else can reach it: the factory returns the function and
nothing else, every mention of the factory is one of its calls, each assigned whole to a name or to
an attribute of ``self``, and every read of that name or attribute (by any receiver) is a call
made with gradients off, a local name the function only calls, or an argument of a module function
that only calls its parameter, called with gradients off. A read in the body of ``if flag:`` (``flag`` a parameter the
function never rebinds) runs only in the calls of its function that may pass a true ``flag``; those
calls must all be made with gradients off, and every other use of the function's name must be one
of its calls. A function that may switch gradients on again, anywhere along the way, decides
nothing; nor does a call that may run later than where it is written (in a lambda, a generator
expression, a generator function: grad mode is the caller's when it runs, and another thread's
is its own), a decorated closure or function, a method Python calls implicitly (``__call__``,
``forward``), or a module whose methods reach their object's attributes by computed names
(``getattr(self, name)``).
"""

from __future__ import annotations

import ast
from typing import List, Optional, Union

from gpulint.semantic.model import Function, SemanticModel, called_unseen
from gpulint.semantic.scopes import Binding
from gpulint.semantic.survey import is_falsy_constant, own_nodes

REFLECTION = frozenset({"getattr", "vars", "setattr"})
"""Builtins that reach attributes by computed names."""


def called_back_without_grad(model: SemanticModel, function: Function) -> bool:
    """Whether ``function`` is made by a factory and every call back of it runs with gradients off."""
    model.call_sites  # resolves every function's calls
    factory = model.function_of_scope(function.scope.parent) if function.scope.parent is not None else None
    if factory is None or function.calls or not factory.calls or function.node.decorator_list or _reflective(model):
        return False
    if model.may_switch_grad_on_in(function.node) or not _only_returned(model, function, factory) or not model.called_only(factory):
        return False
    for site in factory.calls:
        statement = model.parent(site.node)
        if not (isinstance(statement, ast.Assign) and statement.value is site.node and len(statement.targets) == 1):
            return False
        reads = model.target_reads(statement.targets[0])
        if reads is None or not reads or not all(_read_runs_without_grad(model, read) for read in reads):
            return False
    return True


def _only_returned(model: SemanticModel, function: Function, factory: Function) -> bool:
    """The factory returns ``function`` (by name) and nothing else, and reads it nowhere else."""
    binding = factory.scope.resolve(function.name)
    reads = [use for use in model.uses(binding) if isinstance(use.ctx, ast.Load)]
    returns = [node for node in ast.walk(factory.node) if isinstance(node, ast.Return) and model.innermost_function(node) is factory]
    return bool(reads) and all(
        isinstance(model.parent(read), ast.Return) and model.innermost_function(read) is factory for read in reads
    ) and all(
        isinstance(node.value, ast.Name) and node.value in reads for node in returns
    )


def _read_runs_without_grad(model: SemanticModel, read: ast.expr) -> bool:
    """A read that is called, bound to a local name only called, or handed to a module function
    that only calls it, each with gradients off."""
    parent = model.parent(read)
    if isinstance(parent, ast.Call) and parent.func is read:
        return _without_grad(model, read, [parent])
    if isinstance(parent, ast.Assign) and parent.value is read and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
        place = model.place(parent.targets[0])
        holder = model.innermost_function(read)
        calls = _only_called(model, place.binding) if place is not None else None
        return holder is not None and calls is not None and all(model.innermost_function(call) is holder for call in calls) and (
            _without_grad(model, read, calls)
        )
    if isinstance(parent, ast.Call) and read in parent.args:
        callee = model.callee(parent)
        index = parent.args.index(read)
        if callee is None or callee.owner is not None or callee.node.args.posonlyargs or _defers(callee) or index >= len(callee.node.args.args):
            return False
        calls = _only_called(model, callee.scope.resolve(callee.node.args.args[index].arg))
        return calls is not None and not model.may_switch_grad_on_in(callee.node) and _without_grad(model, parent, [parent])
    return False


def _only_called(model: SemanticModel, binding: Binding) -> Optional[List[ast.Call]]:
    """The calls of a name whose every read is a call of it; None where one reads it otherwise."""
    calls = []
    for use in model.uses(binding):
        if not isinstance(use.ctx, ast.Load):
            continue
        parent = model.parent(use)
        if not (isinstance(parent, ast.Call) and parent.func is use):
            return None
        calls.append(parent)
    return calls


def _without_grad(model: SemanticModel, read: ast.expr, calls: List[ast.Call]) -> bool:
    """Whether ``calls``, made where ``read`` is, run with gradients off: each at a grad-off place,
    or all of them in a function that switches nothing on, where ``read`` runs only in calls of
    that function made with gradients off (:func:`_flagged_off`)."""
    if any(_deferred(model, call) for call in calls):
        return False
    if all(_off_at(model, call) for call in calls):
        return True
    holder = model.innermost_function(read)
    return holder is not None and not model.may_switch_grad_on_in(holder.node) and _flagged_off(model, holder, read)


def _off_at(model: SemanticModel, call: ast.Call) -> bool:
    line, column = model.span(call)[:2]
    return model.gradients_off_at(line, column)


def _deferred(model: SemanticModel, call: ast.Call) -> bool:
    """Whether ``call`` may run later than where it is written: in a lambda, a generator
    expression or a generator function."""
    ancestor = model.parent(call)
    while ancestor is not None and not isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
        if isinstance(ancestor, (ast.Lambda, ast.GeneratorExp)):
            return True
        ancestor = model.parent(ancestor)
    holder = model.innermost_function(call)
    return holder is not None and _defers(holder)


def _defers(function: Function) -> bool:
    """A generator function, an ``async`` one, or one a decorator may change."""
    return isinstance(function.node, ast.AsyncFunctionDef) or bool(function.node.decorator_list) or any(
        isinstance(node, (ast.Yield, ast.YieldFrom)) for node in own_nodes(function.node.body)
    )


def _reflective(model: SemanticModel) -> bool:
    """Whether a method reaches its object's attributes by computed names (``getattr(self, name)``,
    ``vars(self)``, ``self.__dict__``), which no read of an attribute shows."""
    for call in model.nodes(ast.Call):
        if isinstance(call.func, ast.Name) and call.func.id in REFLECTION and call.args and _of_self(model, call.args[0]):
            return True
    return any(attribute.attr == "__dict__" and _of_self(model, attribute.value) for attribute in model.nodes(ast.Attribute))


def _of_self(model: SemanticModel, node: ast.expr) -> bool:
    place = model.place(node)
    return place is not None and place.binding.name == "self" and place.binding.scope.is_class


def _flagged_off(model: SemanticModel, holder: Function, read: ast.expr) -> bool:
    """``read`` lies in the body of ``if flag:`` of ``holder`` (``flag`` a parameter it never
    rebinds), every use of ``holder``'s name is one of its calls, and each call that may pass a true
    ``flag`` runs with gradients off."""
    flag = _guarding_flag(model, holder, read)
    if flag is None or not holder.calls or not model.called_only(holder) or _defers(holder) or holder.node.args.posonlyargs:
        return False
    if called_unseen(holder.name):
        return False
    parameters = holder.node.args.args
    index = next((number for number, parameter in enumerate(parameters) if parameter.arg == flag), -1)
    if index < 0:
        return False
    defaults = holder.node.args.defaults
    default = defaults[index - (len(parameters) - len(defaults))] if index >= len(parameters) - len(defaults) else None
    offset = 1 if holder.owner is not None else 0
    for site in holder.calls:
        passed = next((keyword.value for keyword in site.node.keywords if keyword.arg == flag), None)
        if passed is None and 0 <= index - offset < len(site.node.args):
            passed = site.node.args[index - offset]
        if any(isinstance(argument, ast.Starred) for argument in site.node.args) or any(keyword.arg is None for keyword in site.node.keywords):
            return False
        value = passed if passed is not None else default
        if value is not None and is_falsy_constant(value):
            continue
        if _deferred(model, site.node) or not _off_at(model, site.node):
            return False
    return True


def _guarding_flag(model: SemanticModel, holder: Function, read: ast.expr) -> Optional[str]:
    """The parameter ``flag`` of ``holder`` whose ``if flag:`` body holds ``read``, never rebound."""
    child: ast.AST = read
    ancestor = model.parent(read)
    while ancestor is not None and ancestor is not holder.node:
        if isinstance(ancestor, ast.If) and isinstance(ancestor.test, ast.Name) and any(part is child for part in ancestor.body):
            name = ancestor.test.id
            binding = holder.scope.resolve(name)
            if name in holder.scope.parameters and binding.scope is holder.scope and not [
                use for use in model.uses(binding) if not isinstance(use.ctx, ast.Load)
            ]:
                return name
        child, ancestor = ancestor, model.parent(ancestor)
    return None
