"""Forward passes given only tensors the code makes up on the CPU.

A model file's self-test or a notebook's shape check runs its network on inputs it fabricates:
``y = gnet(torch.randn(10, 64))``, ``data = torch.randn(2, 3, 32, 32)`` then ``feat, _ =
model_t(data, is_feat=True)``, ``src = torch.LongTensor([[1, 2, 3]])`` then ``model.encode(src,
src_mask)``. Made without a ``device`` and never moved, those tensors are on the CPU; a model on
the GPU would raise on them, so the pass runs on the CPU, where its graph takes no GPU memory, and
on no data the program was given.

Every argument of the call (one at least) must be such a tensor or a constant (``is_feat=True``), or
a list or tuple of them: a call of :data:`~gpulint.semantic.torch_api.CPU_FABRICATIONS` with no
``device`` or ``requires_grad`` keyword (an input that asks for gradients is one whose graph the
code wants), cast, reshaped or indexed (:data:`~gpulint.semantic.torch_api.PLACEMENT_KEEPING_METHODS`,
a subscript), ``Variable(...)`` of one, what a model returns given only such values (a model
on the GPU would raise on them: ``encoder(x)``, ``decoder.init_state(encoder(x))`` where the
method is its class's in the module and moves nothing), or a name every binding of which is an
assignment of one (or of a part of one, unpacked), which nothing changes in place
(``x.requires_grad_()``, ``x.data = ...``) and no ``global`` or ``nonlocal`` statement shares.

The module must leave the CPU the factories' device and the model no way to move its inputs: it
sets no default device (:data:`~gpulint.semantic.torch_api.DEFAULT_DEVICE_SETTERS`, ``with
torch.device(...)``), spells no ``DataParallel`` (which scatters CPU inputs onto the GPUs) but after
the call in the scope making it, outside any loop around it, where the model is a local name bound
to what calls return (a distillation script's probe before it wraps its training modules), and no
``forward`` of its classes moves anything (``x.to(self.device)``) but to an input's device
(``self.table.to(x.device)``, ``x`` a parameter of ``forward`` other than ``self``).
"""

from __future__ import annotations

import ast
from typing import FrozenSet, List, Optional, Set

from gpulint.semantic.model import Function, SemanticModel
from gpulint.semantic.scopes import Binding
from gpulint.semantic.survey import forward_model, position
from gpulint.semantic.torch_api import (
    CPU_FABRICATIONS, DEFAULT_DEVICE_SETTERS, DEVICE_CONTEXT, DEVICE_MOVES, FORWARD_METHODS, MODE_SWITCHES,
    MODULE_WRAPPERS, ON_CUDA_ATTRIBUTE, PLACEMENT_KEEPING_METHODS, VARIABLE,
)

DEVICE_KEYWORDS = frozenset({"device", "requires_grad", "pin_memory"})
"""Keywords of a factory that put its tensor elsewhere or ask for its gradient."""
WRAPPER_SPELLINGS = tuple(wrapper.lower() for wrapper in MODULE_WRAPPERS)
"""How ``DataParallel`` and ``DistributedDataParallel`` are spelled, in lower case (``spells`` reads so)."""
MAX_DEPTH = 8
"""How many names deep an argument is followed."""


def given_only_cpu_fabrications(model: SemanticModel, call: ast.Call) -> bool:
    """Whether the forward ``call`` is given only tensors the code makes up on the CPU (see the
    module's docstring), in a module that leaves them there."""
    if not _given_only_made_up(model, call, 0, frozenset()) or model.derived(_places_inputs):
        return False
    return not model.spells(WRAPPER_SPELLINGS) or _wrapped_only_later(model, call)


def _wrapped_only_later(model: SemanticModel, call: ast.Call) -> bool:
    """Whether ``DataParallel``, which scatters CPU inputs onto the GPUs, cannot have wrapped the model
    ``call`` runs when it runs: the model is a name of the scope making the call (not a parameter, not
    ``global`` or ``nonlocal``) every binding of which assigns what a call returns, and every
    spelling of a wrapper in the module (:func:`_wrapper_spellings`) lies in that scope, after the
    call and outside any loop around it (a shape probe on ``torch.randn(2, 3, 32, 32)`` before ``DDP
    = torch.nn.parallel.DistributedDataParallel``). An import that spells one counts as before it."""
    receiver = forward_model(call)
    if not isinstance(receiver, ast.Name):
        return False
    values = model.local_assignments(model.scope_at(call).resolve(receiver.id))
    if not values or not all(isinstance(value, ast.Call) for value in values):
        return False
    loops = {id(node) for node in model.ancestors(call) if isinstance(node, (ast.For, ast.AsyncFor, ast.While))}
    for node in model.derived(_wrapper_spellings):
        if isinstance(node, (ast.alias, ast.ImportFrom)) or model.scope_at(node) is not model.scope_at(call):
            return False
        if position(node) <= position(call) or any(id(around) in loops for around in model.ancestors(node)):
            return False
    return True


def _wrapper_spellings(model: SemanticModel) -> List[ast.AST]:
    """The nodes of the module's code that spell ``DataParallel`` or ``DistributedDataParallel``, as
    :meth:`~gpulint.semantic.model.SemanticModel.spells` reads them (names, attributes, parameters,
    keywords, imports, strings; not docstrings)."""
    return model.nodes_spelling(WRAPPER_SPELLINGS)


def _given_only_made_up(model: SemanticModel, call: ast.Call, depth: int, assuming: FrozenSet[Binding]) -> bool:
    """Whether every argument of ``call`` is made up (one at least a made-up tensor)."""
    arguments = [*call.args, *(keyword.value for keyword in call.keywords)]
    if not arguments or any(isinstance(argument, ast.Starred) for argument in arguments) or any(k.arg is None for k in call.keywords):
        return False
    return any(_fabricated(model, argument, depth, assuming) for argument in arguments) and all(
        _made_up(model, argument, depth, assuming) for argument in arguments
    )


def _made_up(model: SemanticModel, node: ast.expr, depth: int, assuming: FrozenSet[Binding]) -> bool:
    """A constant, a made-up tensor, or a list or tuple of such values."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_made_up(model, element, depth, assuming) for element in node.elts)
    return _fabricated(model, node, depth, assuming)


def _fabricated(model: SemanticModel, node: ast.expr, depth: int, assuming: FrozenSet[Binding]) -> bool:
    """Whether ``node`` is a tensor the code makes up on the CPU, or holds one: a factory's, a
    display holding one, a forward pass of a model given only made-up values, or a name every
    binding of which is one (a name being followed is taken as one: ``state = decoder(x, state)``)."""
    if depth > MAX_DEPTH:
        return False
    while True:
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in PLACEMENT_KEEPING_METHODS:
            node = node.func.value
        elif isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and VARIABLE in model.resolved_names(node.func):
            node = node.args[0]
        else:
            break
    if isinstance(node, ast.Call):
        if model.resolved_names(node.func) & CPU_FABRICATIONS:
            return not any(keyword.arg is None or keyword.arg in DEVICE_KEYWORDS for keyword in node.keywords)
        return _a_pass_of_a_model(model, node) and _given_only_made_up(model, node, depth + 1, assuming)
    if isinstance(node, (ast.List, ast.Tuple)):
        return any(_fabricated(model, element, depth, assuming) for element in node.elts) and _made_up(model, node, depth, assuming)
    if isinstance(node, ast.Name):
        binding = model.scope_at(node).resolve(node.id)
        if binding in assuming:
            return True
        values = assigned_values(model, node)
        return bool(values) and all(_fabricated(model, value, depth + 1, assuming | {binding}) for value in values)
    return False


def _a_pass_of_a_model(model: SemanticModel, call: ast.Call) -> bool:
    """``encoder(x)``, ``encoder.forward(x)``, or ``decoder.init_state(out)`` where the method is one
    that the module's class of the model defines and that moves nothing: a call of a model, a name
    the code switches to evaluation mode or every binding of which builds a model class of the
    module. Given only CPU tensors, a model on the GPU would raise, so what it returns is on the CPU."""
    func = call.func
    receiver = func if isinstance(func, ast.Name) else func.value if isinstance(func, ast.Attribute) else None
    if not isinstance(receiver, ast.Name) or not _a_model(model, receiver):
        return False
    if not isinstance(func, ast.Attribute) or func.attr in FORWARD_METHODS:
        return True
    classes = {_class_built(model, value) for value in _constructions(model, receiver)}
    methods = [
        function for function in model.all_functions
        if function.owner is not None and function.owner.node in classes and function.name == func.attr
    ]
    return len(classes) == 1 and None not in classes and len(methods) == 1 and not _moves_anything(model, methods[0])


def _a_model(model: SemanticModel, name: ast.Name) -> bool:
    binding = model.scope_at(name).resolve(name.id)
    for use in model.uses(binding):
        method = model.parent(use)
        if isinstance(use.ctx, ast.Load) and isinstance(method, ast.Attribute) and method.attr in MODE_SWITCHES:
            return True
    constructions = _constructions(model, name)
    return bool(constructions) and all(_class_built(model, value) in model.module_classes for value in constructions)


def _constructions(model: SemanticModel, name: ast.Name) -> List[ast.expr]:
    """What each plain assignment of ``name`` assigns; empty where one binds it otherwise."""
    return model.plain_assignments(model.scope_at(name).resolve(name.id)) or []


def _class_built(model: SemanticModel, value: ast.expr) -> Optional[ast.ClassDef]:
    """The class of the module that ``value`` builds (``Seq2SeqDecoder(...)``), else None."""
    return model.defined_class(value.func) if isinstance(value, ast.Call) else None


def assigned_values(model: SemanticModel, name: ast.Name) -> List[ast.expr]:
    """What each binding of ``name`` assigns (element by element from a tuple of values, or the
    value an unpacking takes a part of); empty where one binds it otherwise (a loop, ``+=``, an
    import), where the scope shares it (``global``), or where code changes it in place or sets an
    attribute of it."""
    binding = model.scope_at(name).resolve(name.id)
    scope = binding.scope
    if binding.name in scope.globals | scope.nonlocals or binding.name in scope.parameters or model.bound_otherwise(binding):
        return []
    values: List[ast.expr] = []
    for use in model.uses(binding):
        parent = model.parent(use)
        if isinstance(use.ctx, ast.Load):
            if isinstance(parent, ast.Attribute) and parent.value is use and (
                isinstance(parent.ctx, ast.Store) or parent.attr.endswith("_")
            ):
                return []
            continue
        value = _element_assigned(model, parent, use) if isinstance(parent, ast.Tuple) else (
            parent.value if isinstance(parent, ast.Assign) and parent.targets == [use] else None
        )
        if value is None:
            return []
        values.append(value)
    return values


def _element_assigned(model: SemanticModel, target: ast.Tuple, name: ast.Name) -> Optional[ast.expr]:
    """The value a tuple assignment gives ``name`` element by element (``n, lens = 2,
    torch.tensor([3, 2])``), or the value it unpacks, of which ``name`` gets a part (``output, state
    = encoder(x)``); None for a loop's or a ``with`` statement's target."""
    statement = model.parent(target)
    if not (isinstance(statement, ast.Assign) and statement.targets == [target]):
        return None
    if not isinstance(statement.value, ast.Tuple):
        return statement.value
    elements = statement.value.elts
    if len(elements) != len(target.elts) or any(isinstance(node, ast.Starred) for node in [*elements, *target.elts]):
        return None
    return next((value for element, value in zip(target.elts, elements) if element is name), None)


def moves_inputs(model: SemanticModel) -> bool:
    """Whether the module may put a made-up tensor, or a forward pass's input, on the GPU: it sets a
    default device, wraps a model in ``DataParallel``, or a forward method of its classes
    moves something."""
    return model.spells(WRAPPER_SPELLINGS) or model.derived(_places_inputs)


def _places_inputs(model: SemanticModel) -> bool:
    """Whether the module may put a made-up tensor, or a forward pass's input, on the GPU other than
    by a ``DataParallel`` wrapper: it sets a default device, or a forward method of its classes
    moves something."""
    for call in model.nodes(ast.Call):
        if model.resolved_names(call.func) & DEFAULT_DEVICE_SETTERS:
            return True
    for with_node in model.nodes(ast.With):
        for item in with_node.items:
            expression = item.context_expr
            if isinstance(expression, ast.Call) and DEVICE_CONTEXT in model.resolved_names(expression.func):
                return True
    for function in model.all_functions:
        if function.owner is None or function.name not in FORWARD_METHODS:
            continue
        if _moves_anything(model, function):
            return True
    return False


def _moves_anything(model: SemanticModel, function: Function) -> bool:
    """Whether a method moves anything (``x.to(self.device)``, ``.cuda()``) but to an input's device."""
    parameters = set(function.scope.parameters) - {function.receiver}
    return any(
        isinstance(node, ast.Attribute) and node.attr in DEVICE_MOVES and not _to_an_inputs_device(model, node, parameters)
        for node in ast.walk(function.node)
    )


def _to_an_inputs_device(model: SemanticModel, method: ast.Attribute, parameters: Set[str]) -> bool:
    """A move that follows an input's device, which puts nothing on the GPU that the input did not
    bring there: ``P.to(x.device)``, or any move made only when an input is on the GPU (``if not
    self.priors.is_cuda and x.is_cuda: self.priors = self.priors.cuda()``, ``self.priors.cuda() if
    x.is_cuda else self.priors``), ``x`` a parameter of the forward method other than ``self``."""
    call = model.parent(method)
    if _only_when_an_input_is_on_the_gpu(model, method, parameters):
        return True
    if not (isinstance(call, ast.Call) and call.func is method and method.attr == "to" and len(call.args) == 1 and not call.keywords):
        return False
    device = call.args[0]
    return (
        isinstance(device, ast.Attribute) and device.attr == "device"
        and isinstance(device.value, ast.Name) and device.value.id in parameters
    )


def _only_when_an_input_is_on_the_gpu(model: SemanticModel, node: ast.AST, parameters: Set[str]) -> bool:
    """Whether ``node`` lies in the body of an ``if`` (statement or expression) whose test holds only
    where a parameter is on the GPU: ``x.is_cuda``, alone or as a term of an ``and``."""
    child = node
    for around in model.ancestors(node):
        if isinstance(around, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return False
        if isinstance(around, ast.If) and any(child is statement for statement in around.body) and _requires_a_gpu_input(around.test, parameters):
            return True
        if isinstance(around, ast.IfExp) and child is around.body and _requires_a_gpu_input(around.test, parameters):
            return True
        child = around
    return False


def _requires_a_gpu_input(test: ast.expr, parameters: Set[str]) -> bool:
    """``x.is_cuda``, ``x`` one of ``parameters``, or an ``and`` one of whose terms is."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_requires_a_gpu_input(term, parameters) for term in test.values)
    return (
        isinstance(test, ast.Attribute) and test.attr == ON_CUDA_ATTRIBUTE
        and isinstance(test.value, ast.Name) and test.value.id in parameters
    )
