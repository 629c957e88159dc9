"""How large a network's state dict is, where the code spells every size as a number.

``NeuralNetwork(2, 2)``, whose ``__init__`` builds ``nn.Sequential(nn.Linear(num_inputs, 30), ...)``,
``nn.Linear(10, 1)``, a class holding ``nn.Parameter(torch.randn(1))``: the state dict's size, in
elements (parameters and buffers), is computed from the layers' arguments, following a class of
the module through its ``__init__`` with the arguments of the call that builds it. Anything the
evaluation cannot follow (a size read from data, ``len(vocab)``, a loop, a helper, a layer without
a known formula) gives no size: the network is not known to be small.
"""

from __future__ import annotations

import ast
import math
from typing import Dict, List, Optional, Tuple, Union

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.scopes import Binding
from gpulint.semantic.survey import ast_dotted_name, module_of
from gpulint.semantic.torch_api import (
    MODULE_CONTAINERS, MODULE_RETURNING_METHODS, PARAMETER_FREE_LAYERS, SHAPE_FACTORIES, SIZED_LAYERS, nn_class_name,
)

TOY_SIZE = 100_000
"""The most elements a toy's state dict holds: 400 KB in float32, nothing a GPU notices."""
MODULE_BASE = "torch.nn.Module"
PARAMETER = "torch.nn.Parameter"
BUFFER_REGISTRATION = "register_buffer"
MAX_DEPTH = 8
"""How deep classes built by classes are followed."""

Value = Union[int, float, bool, str, None, Tuple["Value", ...]]
Environment = Dict[str, Value]


class _Unknown(Exception):
    """A value or size the evaluation cannot follow."""


def state_dict_size(model: SemanticModel, value: ast.expr) -> Optional[int]:
    """The number of elements in the state dict of the network ``value`` builds, or None."""
    try:
        return _Evaluator(model).size(value, {}, 0)
    except _Unknown:
        return None


def is_toy(model: SemanticModel, value: ast.expr) -> bool:
    """Whether ``value`` builds a network whose state dict holds at most :data:`TOY_SIZE` elements,
    and some: a network without any is a stub still to be written (an exercise's empty class), not
    the one a checkpoint was saved from."""
    size = state_dict_size(model, value)
    return size is not None and 0 < size <= TOY_SIZE


LAYER_KEEPING_METHODS = MODULE_RETURNING_METHODS | frozenset({
    "load_state_dict", "state_dict", "parameters", "named_parameters", "buffers", "named_buffers", "forward",
    "modules", "named_modules", "children", "zero_grad",
})
"""Methods of a module that leave its layers as they are (``semantic.model_size`` reads any other
use of a toy's name as one that may grow it)."""
READING_BUILTINS = frozenset({"print", "len", "str", "repr", "type", "isinstance", "id", "next", "iter", "sum", "display"})
"""Builtins (and a notebook's ``display``) that only read what they are given."""
OTHER_BINDINGS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.alias, ast.ExceptHandler, ast.MatchAs,
                  ast.MatchStar, ast.MatchMapping)
"""Statements and patterns that bind a name other than by assigning it."""


def always_a_toy(model: SemanticModel, binding: Binding) -> bool:
    """Whether every binding of a name (one at least) assigns a toy network (:func:`is_toy`), or the
    same name moved or put in a mode (``net = net.to(device)``), and nothing grows it after
    (:func:`_grown`). A parameter, an
    import, a global or any other kind of binding of the name is not known to be a toy."""
    scope = binding.scope
    if binding.name in scope.parameters or binding.name in scope.globals | scope.nonlocals or _bound_otherwise(model, binding.name):
        return False
    built = False
    for use in model.uses(binding):
        if isinstance(use.ctx, ast.Load):
            if _grown(model, use):
                return False
            continue
        statement = model.parent(use)
        if not (isinstance(statement, ast.Assign) and statement.targets == [use]):
            return False
        value = module_of(statement.value)
        if isinstance(value, ast.Name) and value.id == binding.name:
            continue
        if not is_toy(model, statement.value):
            return False
        built = True
    return built


def _bound_otherwise(model: SemanticModel, name: str) -> bool:
    """Whether the module binds ``name`` anywhere by a ``def``, class, import, ``except`` or
    ``match`` pattern."""
    for node in ast.walk(model.tree):
        if isinstance(node, OTHER_BINDINGS):
            bound = getattr(node, "asname", None) or getattr(node, "name", None) or getattr(node, "rest", None)
            if bound is not None and (bound == name or str(bound).split(".")[0] == name):
                return True
    return False


def _grown(model: SemanticModel, use: ast.Name) -> bool:
    """Whether a read of a network's name may add to its state dict. Calling it, handing it to a
    builtin that only reads (``print(net)``), showing it in an f-string, comparing it, reading an attribute (``net.weights``) and calling
    methods that leave its layers alone (``net.eval()``, ``net.to(device)``, ``net.parameters()``)
    do not; storing an attribute or item on it or on a part of it (``net.fc = ...``,
    ``net.layers[2] = ...``, ``net.eval().head = ...``), calling any other method on it or a part
    of it (``net.layers.append(...)``, ``net.build(...)``), and handing it or a part of it on
    (``add_head(net)``, ``alias = net``) may."""
    node: ast.AST = use
    parent = model.parent(use)
    if isinstance(parent, ast.Call) and parent.func is use:
        return False
    while isinstance(parent, (ast.Attribute, ast.Subscript)) and parent.value is node:
        if not isinstance(parent.ctx, ast.Load):
            return True
        call = model.parent(parent)
        if isinstance(call, ast.Call) and call.func is parent:
            if not (isinstance(parent, ast.Attribute) and parent.attr in LAYER_KEEPING_METHODS):
                return True
            node, parent = call, model.parent(call)
            continue
        node, parent = parent, call
    if isinstance(node, ast.Call):
        return False  # a method's result: the module moved, its parameters, its state dict
    if isinstance(parent, ast.Call) and node is not parent.func:
        return not (isinstance(parent.func, ast.Name) and parent.func.id in READING_BUILTINS)
    if isinstance(parent, (ast.FormattedValue, ast.Compare)):
        return False  # shown in an f-string, compared
    return node is use or isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.Return, ast.Yield, ast.withitem))


class _Evaluator:
    def __init__(self, model: SemanticModel) -> None:
        self.model = model

    def size(self, node: ast.expr, environment: Environment, depth: int) -> int:
        node = module_of(node)
        if depth > MAX_DEPTH or not isinstance(node, ast.Call):
            raise _Unknown
        names = self.model.resolved_names(node.func)
        if len(names) == 1:
            qualified = next(iter(names))
            if qualified == PARAMETER and node.args:
                return self.tensor_size(node.args[0], environment)
            layer = nn_class_name(qualified)
            if layer in PARAMETER_FREE_LAYERS:
                return 0
            if layer in MODULE_CONTAINERS:
                return self.container_size(layer, node, environment, depth)
            if layer in SIZED_LAYERS:
                kind, positional = SIZED_LAYERS[layer]
                return _layer_size(kind, layer, self.arguments(node, positional, {}, environment))
            raise _Unknown
        built = self.model.class_built(node)
        if built is None:
            raise _Unknown
        return self.class_size(built, node, environment, depth)

    def container_size(self, layer: str, call: ast.Call, environment: Environment, depth: int) -> int:
        if call.keywords or any(isinstance(argument, ast.Starred) for argument in call.args):
            raise _Unknown
        parts: List[ast.expr] = list(call.args)
        if layer == "ModuleList":
            if len(parts) != 1 or not isinstance(parts[0], (ast.List, ast.Tuple)):
                raise _Unknown
            parts = list(parts[0].elts)
        return sum(self.size(part, environment, depth + 1) for part in parts)

    def class_size(self, built: ast.ClassDef, call: ast.Call, environment: Environment, depth: int) -> int:
        if not built.bases or any(MODULE_BASE not in self.model.resolved_names(base) for base in built.bases):
            raise _Unknown
        constructor = next(
            (item for item in reversed(built.body) if isinstance(item, ast.FunctionDef) and item.name == "__init__"), None
        )
        if constructor is None or constructor.args.vararg or constructor.args.kwarg or constructor.args.kwonlyargs:
            raise _Unknown
        names = [argument.arg for argument in constructor.args.posonlyargs + constructor.args.args]
        if not names:
            raise _Unknown
        receiver, parameters = names[0], tuple(names[1:])
        defaults = dict(zip(names[len(names) - len(constructor.args.defaults):], constructor.args.defaults))
        defaults.pop(receiver, None)
        bound = self.arguments(call, parameters, defaults, environment)
        if set(bound) != set(parameters):
            raise _Unknown  # a parameter left unfilled: the call would fail
        return self.body_size(constructor.body, receiver, bound, depth)

    def body_size(self, body: List[ast.stmt], receiver: str, environment: Environment, depth: int) -> int:
        """The state dict of what a constructor's statements store on ``receiver``: each must be a
        docstring, ``super().__init__(...)``, a number bound to a name or attribute, a layer stored
        in an attribute, or a buffer registered from a shape."""
        total = 0
        for statement in body:
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                continue
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
                total += self.call_statement_size(statement.value, receiver, environment)
                continue
            if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
                raise _Unknown
            target = statement.targets[0]
            try:
                number = _number(statement.value, environment)
            except _Unknown:
                if not (isinstance(target, ast.Attribute) and ast_dotted_name(target.value) == receiver):
                    raise
                total += self.size(statement.value, environment, depth + 1)
                continue
            if isinstance(target, ast.Name):
                environment = {**environment, target.id: number}
            elif not (isinstance(target, ast.Attribute) and ast_dotted_name(target.value) == receiver):
                raise _Unknown
        return total

    def call_statement_size(self, call: ast.Call, receiver: str, environment: Environment) -> int:
        function = call.func
        if isinstance(function, ast.Attribute) and function.attr == "__init__" and isinstance(function.value, ast.Call) and ast_dotted_name(function.value.func) == "super":
            return 0
        if isinstance(function, ast.Attribute) and function.attr == BUFFER_REGISTRATION and ast_dotted_name(function.value) == receiver and len(call.args) == 2:
            return self.tensor_size(call.args[1], environment)
        raise _Unknown

    def tensor_size(self, node: ast.expr, environment: Environment) -> int:
        """The elements of ``torch.randn(3, 4)``, ``torch.zeros((3, 4))`` and the other shape factories."""
        if not isinstance(node, ast.Call) or not node.args:
            raise _Unknown
        names = self.model.resolved_names(node.func)
        if len(names) != 1:
            raise _Unknown
        head, _, factory = next(iter(names)).rpartition(".")
        if head != "torch" or factory not in SHAPE_FACTORIES or factory.endswith("_like") or factory in ("full", "normal"):
            raise _Unknown
        values = [_number(argument, environment) for argument in node.args]
        shape = values[0] if len(values) == 1 and isinstance(values[0], tuple) else tuple(values)
        if not all(isinstance(dimension, int) and not isinstance(dimension, bool) for dimension in shape):
            raise _Unknown
        return math.prod(shape)  # type: ignore[arg-type]

    def arguments(self, call: ast.Call, positional: Tuple[str, ...], defaults: Dict[str, ast.expr], environment: Environment) -> Environment:
        """The values a call passes, by parameter name (defaults where it passes none)."""
        if any(isinstance(argument, ast.Starred) for argument in call.args) or any(keyword.arg is None for keyword in call.keywords):
            raise _Unknown
        if len(call.args) > len(positional):
            raise _Unknown
        bound: Environment = {name: _number(value, {}) for name, value in defaults.items()}
        bound.update((name, _number(argument, environment)) for name, argument in zip(positional, call.args))
        bound.update((keyword.arg, _number(keyword.value, environment)) for keyword in call.keywords if keyword.arg is not None)
        return bound


def _number(node: ast.expr, environment: Environment) -> Value:
    """The value of a constant expression over ``environment``: numbers, strings, ``None``, tuples
    and lists of them, names, and arithmetic on integers."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, type(None))):
        return node.value
    if isinstance(node, ast.Name) and node.id in environment:
        return environment[node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_number(element, environment) for element in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = _number(node.operand, environment)
        if isinstance(operand, int):
            return -operand
    if isinstance(node, ast.BinOp):
        left, right = _number(node.left, environment), _number(node.right, environment)
        if isinstance(left, int) and isinstance(right, int) and not isinstance(left, bool) and not isinstance(right, bool):
            if isinstance(node.op, ast.Add):
                return left + right
            if isinstance(node.op, ast.Sub):
                return left - right
            if isinstance(node.op, ast.Mult):
                return left * right
            if isinstance(node.op, ast.FloorDiv) and right:
                return left // right
    raise _Unknown


def _count(environment: Environment, name: str) -> int:
    value = environment.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _Unknown
    return value


def _flag(environment: Environment, name: str) -> bool:
    value = environment.get(name, True)
    if not isinstance(value, bool):
        raise _Unknown
    return value


def _layer_size(kind: str, layer: str, arguments: Environment) -> int:
    """The elements of a ``torch.nn`` layer's state dict, by the formula of its ``kind``."""
    if kind == "linear":
        outputs = _count(arguments, "out_features")
        return _count(arguments, "in_features") * outputs + (outputs if _flag(arguments, "bias") else 0)
    if kind == "conv":
        outputs, groups = _count(arguments, "out_channels"), arguments.get("groups", 1)
        kernel = arguments.get("kernel_size")
        dimensions = int(layer[-2])
        sides = (kernel,) * dimensions if isinstance(kernel, int) and not isinstance(kernel, bool) else kernel
        if not isinstance(sides, tuple) or len(sides) != dimensions or not all(isinstance(side, int) and not isinstance(side, bool) for side in sides):
            raise _Unknown
        if not isinstance(groups, int) or isinstance(groups, bool) or groups <= 0:
            raise _Unknown
        weight = _count(arguments, "in_channels") * outputs // groups * math.prod(sides)  # type: ignore[arg-type]
        return weight + (outputs if _flag(arguments, "bias") else 0)
    if kind == "embedding":
        return _count(arguments, "num_embeddings") * _count(arguments, "embedding_dim")
    if kind == "batch_norm":
        features = _count(arguments, "num_features")
        affine = 2 * features if _flag(arguments, "affine") else 0
        statistics = 2 * features + 1 if _flag(arguments, "track_running_stats") else 0
        return affine + statistics
    raise _Unknown
