"""Forward passes on one example the function itself makes of Python data.

``predict_sentiment(model, sentence)`` turns one sentence into a list of token ids, makes a tensor
of it (``tensor = torch.LongTensor(indexed).to(device)``, ``tensor = tensor.unsqueeze(1)``), runs
the model once and returns ``prediction.item()``. The graph its forward pass builds holds the
activations of one sentence and is freed when the function returns: nothing a GPU notices,
whatever the model.

The function runs one example when every forward call (one at least) is outside any loop or
comprehension of it, and is given only such tensors (or numbers and strings): integer tensors of
ids, by their constructor or ``dtype`` (``torch.LongTensor``, ``torch.tensor(ids,
dtype=torch.long)``), made of a flat list the code spells (a list display or a comprehension of
one ``for`` whose elements are no lists, a sum of such a list with another or with a call's
result, a name every assignment of which is one, or one such list in a list: a batch of one),
moved or given a leading dimension of one (``unsqueeze``).

Nothing of the forward pass may outlive the call. The function returns only Python values
(``.item()``, ``.tolist()``, numbers, strings, names bound only to them and never given to a
method); stores nothing in an attribute or an item, rebinds no parameter with ``+=``, declares no
``global`` or ``nonlocal``; defines no function, lambda or class; neither yields, awaits, raises
nor asserts after the first forward call; and from the first forward call on calls only the
forward passes, torch's and numpy's functions, builtins that give Python values (``print``,
``float``), and methods of values it made itself (``prediction.item()``) that are no container's
mutator and change nothing in place (not ``kept.append``, ``buffer.copy_``, whatever ``kept``
is): not a parameter's method (``tracker.record(output)``), a function or class of the module, or
a callback. The module registers no hook (``register_forward_hook``, whose function may keep
activations), and no method of its model classes stores on ``self`` (a ``forward`` keeping
activations, directly or through a method it calls) but ``__init__`` and the methods that run only
while a model is built (a ResNet's ``_make_layer``).

An image or a batch, a tensor the function is given, a generation loop, a tensor returned: the
function is checked.
"""

from __future__ import annotations

import ast
from typing import FrozenSet, List, Optional, Set, Tuple

from gpulint.semantic.confined import CONTAINER_MUTATORS
from gpulint.semantic.model import Function, SemanticModel, called_unseen
from gpulint.semantic.model_size import stores_on_instance
from gpulint.semantic.survey import own_nodes
from gpulint.semantic.torch_api import INTEGER_DTYPES, INTEGER_TENSOR_CLASSES, TENSOR_TO_PYTHON_METHODS, VALUE_BUILTINS

LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
"""Code that may run later, with what the forward pass made: a function holding one is checked."""
NESTED = (ast.List, ast.Tuple, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.Starred)
"""Elements that make a list of lists (a batch)."""
ID_KEEPING_METHODS = frozenset({"to", "cuda", "cpu", "unsqueeze", "long", "int", "contiguous"})
"""Tensor methods an id tensor is moved with, or given a leading dimension of one (a ``view`` or
``reshape`` may make a batch of a flat list)."""
PYTHON_BUILTINS = VALUE_BUILTINS | frozenset({"print", "isinstance", "format"})
"""Builtins that give Python values and keep nothing they are given."""
LIBRARIES = ("torch.", "numpy.")
"""Functions that keep nothing they are given (``torch.sigmoid(out)``, ``numpy.argmax(probs)``)."""
HOOK_REGISTRATIONS = frozenset({
    "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook", "register_backward_hook",
    "register_module_forward_hook", "register_module_forward_pre_hook",
})
HOOK_TABLES = frozenset({"_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_global_forward_hooks"})
"""A module's hook dictionaries, which code may fill without a ``register_*`` call."""
MAX_DEPTH = 8
"""How many names deep an argument or a returned value is followed."""


def runs_one_example(model: SemanticModel, function: Optional[Function], calls: List[ast.Call]) -> bool:
    """Whether ``function`` runs its forward ``calls`` once each on one example it makes of
    Python data, and lets nothing of them out (see the module's docstring)."""
    if function is None or not calls or function.scope.globals or function.scope.nonlocals:
        return False
    if keeps_activations(model):
        return False
    body = [node for statement in function.node.body for node in ast.walk(statement)]
    first = min((call.lineno, call.col_offset) for call in calls)
    forward = {id(call) for call in calls}
    for node in body:
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await, *DEFINITIONS)):
            return False
        if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store):
            return False
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id in function.scope.parameters:
            return False
        if isinstance(node, (ast.Raise, ast.Assert)) and _end(node) > first:
            return False
        if isinstance(node, ast.Call) and _end(node) > first and id(node) not in forward and not _keeps_nothing(model, function, node):
            return False
        if isinstance(node, ast.Return) and node.value is not None and not _python_value(model, function, node.value, 0):
            return False
    for call in calls:
        if any(isinstance(ancestor, LOOPS) for ancestor in _ancestors_within(model, call, function.node)):
            return False
        arguments = [*call.args, *(keyword.value for keyword in call.keywords)]
        if not all(_python_value(model, function, argument, 0) or _id_tensor(model, function, argument, 0) for argument in arguments):
            return False
    return True


def _end(node: ast.AST) -> Tuple[int, int]:
    return (getattr(node, "end_lineno", 0) or 0, getattr(node, "end_col_offset", 0) or 0)


def keeps_activations(model: SemanticModel) -> bool:
    """Whether a forward pass of the module's models may keep what it computes where the caller
    does not see it: the module registers a hook, or a method of a model class (but ``__init__`` and
    the methods run only while it is built: :func:`_run_only_while_built`) stores on its instance or
    outside itself (a global, a container it did not make)."""
    return registers_hooks(model) or _forward_stores_on_self(model) or _forward_stores_outside(model)


def registers_hooks(model: SemanticModel) -> bool:
    """Whether the module registers a module hook or writes a module's hook tables
    (``register_forward_hook``, ``_forward_hooks``): a hook may hand activations anywhere."""
    return any(node.attr in HOOK_REGISTRATIONS or node.attr in HOOK_TABLES for node in model.nodes(ast.Attribute))


def _forward_stores_outside(model: SemanticModel) -> bool:
    """Whether a method of a model class of the module, other than those run only while it is built
    (:func:`_run_only_while_built`), declares a name
    ``global`` or ``nonlocal``, or stores into (or calls a mutator of) a value none of its own
    names holds but ``self`` (``FEATURES.append(h)``, ``CACHE[key] = h``, a caller's ``cache``
    parameter)."""
    construction = model.derived(_run_only_while_built)
    for function in model.all_functions:
        if function.owner is None or function.owner.node not in model.module_classes or function in construction:
            continue
        own = function.scope.locals() - (set(function.scope.parameters) - {function.receiver})
        for node in own_nodes(function.node.body):
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                return True
            target: Optional[ast.expr] = None
            if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store):
                target = node.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CONTAINER_MUTATORS:
                target = node.func.value
            while isinstance(target, (ast.Attribute, ast.Subscript)):
                target = target.value
            if isinstance(target, ast.Name) and target.id not in own:
                return True
    return False


def _forward_stores_on_self(model: SemanticModel) -> bool:
    """Whether a method of a model class of the module (of ``nn.Module``), other than those run only
    while it is built (:func:`_run_only_while_built`: ``__init__``, a ResNet's ``_make_layer``
    counting ``self.inplanes``), may store something on its instance (``self.last = h``,
    ``self.activations.append(h)``, ``setattr(self, ...)``): ``forward`` may do so, or call a method
    that does."""
    construction = model.derived(_run_only_while_built)
    return any(
        function.receiver is not None and function not in construction and function.owner is not None
        and function.owner.node in model.module_classes and stores_on_instance(function.node)
        for function in model.all_functions
    )


def _run_only_while_built(model: SemanticModel) -> FrozenSet[Function]:
    """The methods of the module's classes that run only while an instance is built: ``__init__``,
    and each method called at least once, every call of it resolving to it by binding from such a
    method of its own class, not in a lambda there (``self._make_layer(block, 64)`` in
    ``__init__``), neither ``forward`` nor a special method (:func:`called_unseen`), its name used
    only as the callee of those calls (:meth:`SemanticModel.called_only`: not handed on, aliased in
    the class body, called on another object or by a subclass's method that does not resolve to it)
    and spelt by no string (``getattr(self, "_grow")``) — a fixed point over the class's calls."""
    methods = [function for function in model.all_functions if function.owner is not None and function.receiver is not None]
    found: Set[Function] = {function for function in methods if function.name == CONSTRUCTOR}
    strings = {node.value for node in model.nodes(ast.Constant) if isinstance(node.value, str)}
    candidates = [
        function for function in methods
        if function.calls and not called_unseen(function.name) and function.name not in strings and model.called_only(function)
    ]
    changed = True
    while changed:
        changed = False
        for function in candidates:
            if function not in found and all(
                site.caller is not None and site.caller in found and site.caller.owner is function.owner
                and not _in_a_lambda(model, site.node, site.caller) for site in function.calls
            ):
                found.add(function)
                changed = True
    return frozenset(found)


CONSTRUCTOR = "__init__"


def _in_a_lambda(model: SemanticModel, node: ast.AST, function: Function) -> bool:
    """Whether ``node`` lies in a lambda inside ``function``, which may run after it returns."""
    for ancestor in model.ancestors(node):
        if ancestor is function.node:
            return False
        if isinstance(ancestor, ast.Lambda):
            return True
    return False


def _keeps_nothing(model: SemanticModel, function: Function, call: ast.Call) -> bool:
    """A call after the first forward pass that keeps nothing it is given: a function of torch or
    numpy, a builtin that gives a Python value, or a method of a value the function made itself
    (its receiver's root a local name, not a parameter, or a call)."""
    names = model.resolved_names(call.func)
    if names and all(name.startswith(LIBRARIES) for name in names):
        return True
    if isinstance(call.func, ast.Name):
        return call.func.id in PYTHON_BUILTINS and call.func.id not in function.scope.bound and not names
    if not isinstance(call.func, ast.Attribute) or call.func.attr in CONTAINER_MUTATORS or call.func.attr.endswith("_"):
        return False  # ``kept.append(output)``, ``buffer.copy_(output)``, whatever ``kept`` is
    root: ast.expr = call.func.value
    while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
        if isinstance(root, ast.Call):
            return True  # a method of a call's result (``model(x).argmax()``)
        root = root.value
    return isinstance(root, ast.Name) and _assigned(model, function, root) is not None


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
    return model.plain_assignments(binding) or None


def _id_tensor(model: SemanticModel, function: Function, node: ast.expr, depth: int) -> bool:
    """An integer tensor made of a flat list the code spells, moved or reshaped."""
    if depth > MAX_DEPTH:
        return False
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ID_KEEPING_METHODS:
        node = node.func.value
    if isinstance(node, ast.Name):
        values = _assigned(model, function, node)
        return values is not None and all(
            _id_tensor(model, function, value, depth + 1) or _moved_in_place(value, node.id) for value in values
        ) and not all(_moved_in_place(value, node.id) for value in values)
    if not (isinstance(node, ast.Call) and len(node.args) == 1 and _one_example(model, function, node.args[0], depth)):
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
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in ID_KEEPING_METHODS:
        value = value.func.value
    return isinstance(value, ast.Name) and value.id == name


def _one_example(model: SemanticModel, function: Function, node: ast.expr, depth: int) -> bool:
    """A flat list the code spells, or one in a list display of its own (a batch of one)."""
    if isinstance(node, ast.List) and len(node.elts) == 1 and not isinstance(node.elts[0], ast.Starred):
        return _flat_list(model, function, node.elts[0], depth + 1)
    return _flat_list(model, function, node, depth)


def _flat_list(model: SemanticModel, function: Function, node: ast.expr, depth: int) -> bool:
    """A list display or comprehension whose elements are no lists (nor ``.tolist()``), a sum of
    such a list with another or with a call's result (``[bos] + tokenizer.convert_tokens_to_ids(t)
    + [eos]``), or a local name every assignment of which is one."""
    if depth > MAX_DEPTH:
        return False
    if isinstance(node, ast.List):
        return all(_scalar(element) for element in node.elts)
    if isinstance(node, ast.ListComp):
        return len(node.generators) == 1 and _scalar(node.elt)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        sides = (node.left, node.right)
        return any(_flat_list(model, function, side, depth + 1) for side in sides) and all(
            _flat_list(model, function, side, depth + 1) or (isinstance(side, ast.Call) and not _listed(side)) for side in sides
        )
    if isinstance(node, ast.Name):
        values = _assigned(model, function, node)
        return values is not None and all(_flat_list(model, function, value, depth + 1) for value in values)
    return False


def _scalar(element: ast.expr) -> bool:
    """An element that holds no list: nothing in it is a list, tuple or comprehension, a starred
    value, ``x.tolist()`` or ``list(x)``."""
    return not any(isinstance(part, NESTED) or (isinstance(part, ast.expr) and _listed(part)) for part in ast.walk(element))


def _listed(node: ast.expr) -> bool:
    """``x.tolist()`` or ``list(x)``: a list made of a value, which may be a list of lists."""
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Attribute) and node.func.attr == "tolist")
        or (isinstance(node.func, ast.Name) and node.func.id == "list")
    )


def _python_value(model: SemanticModel, function: Function, node: ast.expr, depth: int) -> bool:
    """A value without tensors: a constant, ``x.item()``, ``x.tolist()``, a builtin's number or
    string (``float(x)``, ``len(x)``), f-strings, arithmetic, comparisons and tuples of them, and
    local names every assignment of which is one and no read of which is a method's receiver."""
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
        binding = model.scope_at(node).resolve(node.id)
        if any(isinstance(model.parent(use), ast.Attribute) for use in model.uses(binding)):
            return False  # ``results.append(output)`` fills what ``results = []`` made
        return values is not None and all(_python_value(model, function, value, depth + 1) for value in values)
    return False
