"""Forward passes on one example the function itself makes of Python data.

``predict_sentiment(model, sentence)`` turns one sentence into a list of token ids, makes a tensor
of it (``tensor = torch.LongTensor(indexed).to(device)``, ``tensor = tensor.unsqueeze(1)``), runs
the model once and returns ``prediction.item()``. The graph its forward pass builds holds the
activations of one sentence and is freed when the function returns: nothing a GPU notices,
whatever the model. The function runs one example when every forward call (one at least) is
outside any loop or comprehension of it, and is given only such tensors (or numbers and
strings): integer tensors, by their constructor or ``dtype`` (``torch.LongTensor``,
``torch.tensor(ids, dtype=torch.long)``), made of a list the code spells (a list display or
comprehension, a sum with one, or a name every assignment of which is one), moved or reshaped
(:data:`~gpulint.semantic.torch_api.LAYOUT_METHODS`). Nothing of the forward pass may outlive the
call: the function returns only Python values (``.item()``, ``.tolist()``, numbers, strings),
stores nothing in an attribute, an item, a global or a nonlocal, calls no container's mutator
(``append``), ``setattr`` nor function or class of the module after its first forward call (before
it, such a call has nothing of the forward pass to keep: ``generate_bigrams(tokens)``), and neither
yields nor awaits, and defines no function, lambda or class. An
image or a batch, a tensor the function is given, a generation loop, a tensor returned: the
function is checked.
"""

from __future__ import annotations

import ast
from typing import List, Optional

from gpulint.semantic.confined import CONTAINER_MUTATORS, STORING_FUNCTIONS
from gpulint.semantic.model import Function, SemanticModel
from gpulint.semantic.torch_api import INTEGER_DTYPES, INTEGER_TENSOR_CLASSES, LAYOUT_METHODS, TENSOR_TO_PYTHON_METHODS, VALUE_BUILTINS

LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
LISTS = (ast.List, ast.ListComp)
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
"""Code that may run later, with what the forward pass made: a function holding one is checked."""
MAX_DEPTH = 8
"""How many names deep an argument or a returned value is followed."""


def runs_one_example(model: SemanticModel, function: Optional[Function], calls: List[ast.Call]) -> bool:
    """Whether ``function`` runs its forward ``calls`` once each on one example it makes of
    Python data, and lets nothing of them out (see the module's docstring)."""
    if function is None or not calls or function.scope.globals or function.scope.nonlocals:
        return False
    body = [node for statement in function.node.body for node in ast.walk(statement)]
    if any(isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await, *DEFINITIONS)) for node in body):
        return False
    first = min((call.lineno, call.col_offset) for call in calls)
    if any(isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store) for node in body):
        return False
    if any(_may_keep(model, node) and (node.lineno, node.col_offset) > first for node in body if isinstance(node, ast.Call)):
        return False
    if any(isinstance(node, ast.Return) and node.value is not None and not _python_value(model, function, node.value, 0) for node in body):
        return False
    for call in calls:
        if any(isinstance(ancestor, LOOPS) for ancestor in _ancestors_within(model, call, function.node)):
            return False
        arguments = [*call.args, *(keyword.value for keyword in call.keywords)]
        if not all(_python_value(model, function, argument, 0) or _id_tensor(model, function, argument, 0) for argument in arguments):
            return False
    return True


def _may_keep(model: SemanticModel, node: ast.Call) -> bool:
    """A call that may keep what it is given: a container's or queue's mutator (``kept.append(x)``),
    ``setattr`` and the like, or a function or class of the module."""
    if isinstance(node.func, ast.Attribute) and node.func.attr in CONTAINER_MUTATORS:
        return True
    return bool(model.resolved_names(node.func) & STORING_FUNCTIONS) or model.callee(node) is not None or model.class_built(node) is not None


def _ancestors_within(model: SemanticModel, node: ast.AST, function: ast.AST) -> List[ast.AST]:
    found = []
    for ancestor in model.ancestors(node):
        if ancestor is function:
            break
        found.append(ancestor)
    return found


def _assigned(model: SemanticModel, function: Function, name: ast.Name) -> Optional[List[ast.expr]]:
    """What each assignment of a local name of ``function`` assigns; None for a parameter, a name
    of another scope or one bound any other way (a loop, ``with``, an unpacking, ``+=``)."""
    binding = model.scope_at(name).resolve(name.id)
    if binding.scope is not function.scope or name.id in function.scope.parameters:
        return None
    values = []
    for use in model.uses(binding):
        if isinstance(use.ctx, ast.Load):
            continue
        statement = model.parent(use)
        if not (isinstance(statement, ast.Assign) and statement.targets == [use]):
            return None
        values.append(statement.value)
    return values or None


def _id_tensor(model: SemanticModel, function: Function, node: ast.expr, depth: int) -> bool:
    """An integer tensor made of a list the code spells, moved or reshaped."""
    if depth > MAX_DEPTH:
        return False
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LAYOUT_METHODS:
        node = node.func.value
    if isinstance(node, ast.Name):
        values = _assigned(model, function, node)
        return values is not None and all(
            _id_tensor(model, function, value, depth + 1) or _moved_in_place(value, node.id) for value in values
        ) and not all(_moved_in_place(value, node.id) for value in values)
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and _spelled_list(model, function, node.args[0], depth)):
        return False
    names = model.resolved_names(node.func)
    if names and names <= INTEGER_TENSOR_CLASSES:
        return not node.keywords
    if names != {"torch.tensor"}:
        return False
    dtypes = [keyword.value for keyword in node.keywords if keyword.arg == "dtype"]
    return len(dtypes) == 1 and bool(model.resolved_names(dtypes[0])) and model.resolved_names(dtypes[0]) <= INTEGER_DTYPES


def _moved_in_place(value: ast.expr, name: str) -> bool:
    """``name.to(device)``, ``name.unsqueeze(1)``: the tensor ``name`` holds, moved or reshaped."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in LAYOUT_METHODS:
        value = value.func.value
    return isinstance(value, ast.Name) and value.id == name


def _spelled_list(model: SemanticModel, function: Function, node: ast.expr, depth: int) -> bool:
    """A list display or comprehension, a sum or repetition with one (``[bos] + ids + [eos]``:
    the other side must be a list too), or a local name every assignment of which is one."""
    if isinstance(node, LISTS):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult)) and depth <= MAX_DEPTH:
        return _spelled_list(model, function, node.left, depth + 1) or _spelled_list(model, function, node.right, depth + 1)
    if isinstance(node, ast.Name) and depth <= MAX_DEPTH:
        values = _assigned(model, function, node)
        return values is not None and all(_spelled_list(model, function, value, depth + 1) for value in values)
    return False


def _python_value(model: SemanticModel, function: Function, node: ast.expr, depth: int) -> bool:
    """A value without tensors: a constant, ``x.item()``, ``x.tolist()``, a builtin's number or
    string (``float(x)``, ``len(x)``), f-strings, arithmetic, comparisons and tuples of them, and
    local names every assignment of which is one."""
    if depth > MAX_DEPTH:
        return False
    if isinstance(node, (ast.Constant, ast.JoinedStr)):
        return True
    if isinstance(node, ast.Call):
        function_node = node.func
        if isinstance(function_node, ast.Attribute) and function_node.attr in TENSOR_TO_PYTHON_METHODS:
            return True
        return isinstance(function_node, ast.Name) and function_node.id in VALUE_BUILTINS and function_node.id not in function.scope.bound
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_python_value(model, function, element, depth + 1) for element in node.elts)
    if isinstance(node, ast.BinOp):
        return _python_value(model, function, node.left, depth + 1) and _python_value(model, function, node.right, depth + 1)
    if isinstance(node, ast.UnaryOp):
        return _python_value(model, function, node.operand, depth + 1)
    if isinstance(node, ast.Name):
        values = _assigned(model, function, node)
        return values is not None and all(_python_value(model, function, value, depth + 1) for value in values)
    return False
