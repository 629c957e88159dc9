"""Passes through networks without weights, given only inputs without history: no graph at all.

``attention = DotProductAttention(dropout=0.5)``, whose constructor builds only ``nn.Dropout``, and
then ``attention(queries, keys, values)`` where each argument comes from a torch factory
(``torch.normal(0, 1, (2, 1, 2))``, ``torch.ones((2, 10, 2))``); or ``pool = nn.MaxPool2d(2, 2)``
run on an image tensor made from a picture. Autograd records an operation only where a parameter or
an input requires gradients, and here neither does: the pass builds no graph whatever the grad
mode, so ``torch.no_grad()`` would change nothing.

The network is a name every binding of which builds one whose state dict the code spells as empty
(:func:`~gpulint.semantic.model_size.always_weightless`), or an instance of a class of the module
that can hold no parameter (derived from ``torch.nn.Module`` alone, building no layer but ones
without weights). Every argument (one at least) is a constant; a tensor a torch factory or legacy
tensor class makes from numbers, or ``torch.from_numpy`` makes from an array, on any device, without
``requires_grad``; what numpy or PIL returns (an array, an image); a torchvision transform's tensor
of one (``to_tensor(image)`` after ``to_tensor = ToTensor()``); a method's result, an index or
``.data`` of one (not ``.requires_grad_()``); arithmetic on such values; a list or tuple of them;
or a name every binding of which assigns one and that nothing changes in place
(:func:`~gpulint.semantic.fabricated_inputs.assigned_values`). Where the name is read by a
statement of the module's own top level and every assignment of it is one too (a script's or a
notebook's straight-line code, where ``attention`` is rebound from one network to the next), only
the last assignment before that statement counts.
"""

from __future__ import annotations

import ast
from typing import FrozenSet, List, Optional

from gpulint.semantic.fabricated_inputs import assigned_values
from gpulint.semantic.model import SemanticModel
from gpulint.semantic.model_size import MODULE_BASE, always_weightless, state_dict_size
from gpulint.semantic.scopes import Binding
from gpulint.semantic.survey import forward_model, module_of
from gpulint.semantic.torch_api import (
    ARRAY_ONLY_FUNCTIONS, CPU_FABRICATIONS, FUNCTIONAL_NAMESPACE, GRAD_REQUEST_KEYWORD, GRAD_REQUEST_METHOD, MODULE_ADDITIONS,
    NN_PACKAGE, PARAMETER, PARAMETER_FREE_LAYERS, SIZE_KEEPING_TRANSFORMS, TENSOR_STORAGE, TRANSFORMS_PACKAGE, VARIABLE,
    nn_class_name,
)

HISTORYLESS_LIBRARIES = ("numpy.", "PIL.")
"""Libraries whose values hold no autograd history (arrays, images)."""
MAX_DEPTH = 8
"""How many names deep an argument is followed."""


def weightless_pass_on_historyless_inputs(model: SemanticModel, call: ast.Call) -> bool:
    """Whether the forward ``call`` runs a network without weights on inputs without history (see
    the module's docstring)."""
    network = forward_model(call)
    if not isinstance(network, ast.Name):
        return False
    arguments = [*call.args, *(keyword.value for keyword in call.keywords)]
    if not arguments or any(isinstance(argument, ast.Starred) for argument in arguments):
        return False
    if any(keyword.arg is None for keyword in call.keywords):
        return False
    return _weightless(model, network) and all(_historyless(model, argument, 0, frozenset()) for argument in arguments)


def _weightless(model: SemanticModel, network: ast.Name) -> bool:
    """Whether the network the name holds where it is read has an empty state dict: every network
    its assignments build (:func:`~gpulint.semantic.model_size.always_weightless`), or in
    straight-line top-level code the one the last assignment before the read builds, past those
    that only move it or switch its mode (``attention = attention.eval()``)."""
    built = [
        value for value in _reaching_values(model, network, assigned_values(model, network))
        if not _the_name_again(value, network.id)
    ]
    if not built:
        binding = model.scope_at(network).resolve(network.id)
        return binding is not None and always_weightless(model, binding)
    return all(state_dict_size(model, value) == 0 or _builds_a_weightless_class(model, value) for value in built)


def _builds_a_weightless_class(model: SemanticModel, value: ast.expr) -> bool:
    """Whether ``value`` builds an instance of a class of the module that can hold no parameter:
    derived from ``torch.nn.Module`` alone, and nowhere in its body building a ``torch.nn`` layer
    other than one without weights, a parameter, or an instance of another class of the module, nor
    registering or adding anything (``register_parameter``, ``add_module``)."""
    built = module_of(value)
    cls = model.class_built(built) if isinstance(built, ast.Call) else None
    if cls is None or len(cls.bases) != 1 or MODULE_BASE not in model.resolved_names(cls.bases[0]):
        return False
    for node in ast.walk(cls):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute) and node.func.attr in MODULE_ADDITIONS:
            return False
        if model.defined_class(node.func) is not None:
            return False
        for name in model.resolved_names(node.func):
            if name == PARAMETER or (name.startswith(NN_PACKAGE) and not name.startswith(FUNCTIONAL_NAMESPACE) and nn_class_name(name) not in PARAMETER_FREE_LAYERS):
                return False
    return True


def _the_name_again(value: ast.expr, name: str) -> bool:
    moved = module_of(value)
    return isinstance(moved, ast.Name) and moved.id == name


def _reaching_values(model: SemanticModel, name: ast.Name, values: List[ast.expr]) -> List[ast.expr]:
    """The values that may reach the read ``name``: where it is read by a top-level statement of
    the module (not in a function) and each value is assigned by one, the last assigned before that
    statement that does more than move or switch what the name holds; all of them otherwise."""
    top = {id(statement): index for index, statement in enumerate(model.tree.body)}
    around = [name, *model.ancestors(name)]
    reader = next((node for node in around if id(node) in top), None)
    if reader is None or any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)) for node in around):
        return values
    placed = [(next((node for node in model.ancestors(value) if id(node) in top), None), value) for value in values]
    if any(statement is None for statement, _ in placed):
        return values
    before = sorted(
        ((top[id(statement)], value) for statement, value in placed if top[id(statement)] < top[id(reader)]),
        key=lambda pair: pair[0],
    )
    for index in range(len(before) - 1, -1, -1):
        if not _the_name_again(before[index][1], name.id):
            return [value for position, value in before if position >= before[index][0]]
    return values


def _historyless(model: SemanticModel, node: ast.expr, depth: int, assuming: FrozenSet[Binding]) -> bool:
    if depth > MAX_DEPTH:
        return False
    while True:
        receiver = _receiver_of_a_method(model, node) if isinstance(node, ast.Call) else None
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Attribute) and node.attr == TENSOR_STORAGE:
            node = node.value
        elif receiver is not None:
            node = receiver  # ``.reshape(...)``, ``.repeat(2, 1, 1)``, ``.unsqueeze(0)``
        elif isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and VARIABLE in model.resolved_names(node.func):
            node = node.args[0]
        else:
            break
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_historyless(model, element, depth, assuming) for element in node.elts)
    if isinstance(node, ast.BinOp):
        return _historyless(model, node.left, depth, assuming) and _historyless(model, node.right, depth, assuming)
    if isinstance(node, ast.UnaryOp):
        return _historyless(model, node.operand, depth, assuming)
    if isinstance(node, ast.Call):
        return _makes_a_historyless_value(model, node, depth, assuming)
    if isinstance(node, ast.Name):
        binding = model.scope_at(node).resolve(node.id)
        if binding is None:
            return False
        if binding in assuming:
            return True
        values = _reaching_values(model, node, assigned_values(model, node))
        return bool(values) and all(_historyless(model, value, depth + 1, assuming | {binding}) for value in values)
    return False


def _receiver_of_a_method(model: SemanticModel, call: ast.Call) -> Optional[ast.expr]:
    """``<value>`` of ``<value>.method(...)``: a method of what a call or an index gives, or of a name
    that is no import (``torch.ones(3).repeat(2)``, ``x.unsqueeze(0)``; not ``torch.ones(3)`` or
    ``np.array(x)``), that does not make a tensor ask for its gradient; None for any other call."""
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr == GRAD_REQUEST_METHOD or any(keyword.arg == GRAD_REQUEST_KEYWORD for keyword in call.keywords):
        return None
    if isinstance(func.value, (ast.Call, ast.Subscript)) or (isinstance(func.value, ast.Name) and not model.resolved_names(func)):
        return func.value
    return None


def _makes_a_historyless_value(model: SemanticModel, call: ast.Call, depth: int, assuming: FrozenSet[Binding]) -> bool:
    """A factory's tensor made without ``requires_grad``, a value of numpy or PIL, or a torchvision
    transform's output given only values without history."""
    names = model.resolved_names(call.func)
    if names & (CPU_FABRICATIONS | ARRAY_ONLY_FUNCTIONS):
        return not any(keyword.arg is None or keyword.arg == GRAD_REQUEST_KEYWORD for keyword in call.keywords)
    if names and all(name.startswith(HISTORYLESS_LIBRARIES) for name in names):
        return True
    if _a_transform(model, call.func) or any(_names_a_transform(name) for name in names):
        return all(_historyless(model, argument, depth + 1, assuming) for argument in call.args) and not call.keywords
    return False


def _a_transform(model: SemanticModel, func: ast.expr) -> bool:
    """A name every binding of which builds a torchvision transform (``to_tensor = ToTensor()``)."""
    if not isinstance(func, ast.Name):
        return False
    values = assigned_values(model, func)
    return bool(values) and all(
        isinstance(value, ast.Call) and any(_names_a_transform(name) for name in model.resolved_names(value.func))
        for value in values
    )


def _names_a_transform(qualified: str) -> bool:
    return qualified.startswith(TRANSFORMS_PACKAGE) and (
        qualified.rsplit(".", 1)[-1] in SIZE_KEEPING_TRANSFORMS or qualified.startswith(TRANSFORMS_PACKAGE + "functional.")
    )
