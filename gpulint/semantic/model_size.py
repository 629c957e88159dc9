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
from typing import Callable, Dict, FrozenSet, List, Optional, Set, Tuple, TypeVar, Union

from gpulint.semantic.confined import CONTAINER_MUTATORS
from gpulint.semantic.model import OTHER_BINDINGS, Function, SemanticModel
from gpulint.semantic.scopes import Binding
from gpulint.semantic.survey import ast_dotted_name, module_of
from gpulint.semantic.torch_api import (
    BUFFER_REGISTRATION, LITERAL_TENSOR, MODULE_CONTAINERS, MODULE_RETURNING_METHODS,
    MODEL_SUMMARIES, MODULE_WRAPPERS, PARAMETER, PARAMETER_FREE_LAYERS, RANGE_FUNCTION, SHAPE_FACTORIES, SHAPE_KEEPING_FUNCTIONS, SHAPE_KEEPING_METHODS,
    RECURRENT_GATES, SIZE_CHANGING_IN_PLACE_METHODS, SIZED_LAYERS, STACKING_FUNCTION, TENSOR_OPTIONS, TENSOR_SHAPE_METHODS, TENSOR_TO_PYTHON_METHODS, WEIGHT_INITIALISERS, nn_class_name,
)

TOY_SIZE = 100_000
"""The most elements a toy's state dict holds: 400 KB in float32, nothing a GPU notices."""
SMALL_NETWORK = 1_000_000
"""The most elements a small network's state dict holds (a course's MNIST or CIFAR classifier):
4 MB in float32."""
MODULE_BASE = "torch.nn.Module"
MAX_DEPTH = 8
"""How deep classes built by classes are followed."""
SIZE_CHANGING_FREE_LAYERS = frozenset({
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "Upsample",
})
"""Layers without weights whose output may be larger than their input: an adaptive pooling to a
size larger than the input's, an upsampling."""
SMALL_SIDE = 32
"""The largest side an adaptive pooling may give and still shrink a tiny image."""
SIZE_KEEPING_CALLS = frozenset({
    "relu", "relu6", "leaky_relu", "gelu", "silu", "elu", "selu", "sigmoid", "tanh", "softmax", "log_softmax",
    "dropout", "dropout1d", "dropout2d", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d",
    "avg_pool3d", "flatten", "squeeze", "unsqueeze", "mean", "sum", "amax", "max", "argmax", "transpose", "permute",
})
"""torch functions (``torch.X``, ``F.X``) whose result is no larger than their first argument."""
SIZE_KEEPING_METHODS_OF_TENSORS = frozenset({
    "view", "view_as", "reshape", "flatten", "squeeze", "unsqueeze", "permute", "transpose", "contiguous", "size",
    "dim", "numel", "mean", "sum", "max", "min", "argmax", "float", "half", "double", "to", "cpu", "cuda", "relu",
    "sigmoid", "tanh", "softmax", "log_softmax", "clamp", "detach", "t",
})
"""Tensor methods whose result is no larger than the tensor they are called on."""

Value = Union[int, float, bool, str, None, Tuple["Value", ...]]
T = TypeVar("T")
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


def spelled_value(model: SemanticModel, node: ast.expr) -> Value:
    """The value of an expression the code spells as constants (``batch_size = 64``,
    ``28 * 28``), through names bound once (see :meth:`_Evaluator.value`), or None."""
    try:
        return _Evaluator(model).value(node, {})
    except _Unknown:
        return None


def payload_size(model: SemanticModel, value: ast.expr, load: Optional[ast.AST] = None) -> Optional[int]:
    """The tensor elements ``value``, something saved, holds where the code spells them: a tensor
    whose shape it spells (``torch.arange(4)``, ``torch.zeros(4)``), or a list, tuple or dict
    display of them, through names each assignment of which that may reach it is one (the
    largest), and that nothing may change before ``load`` reads the file back (see
    :meth:`_Evaluator.kept_as_assigned`); else None."""
    try:
        return _Evaluator(model, load).payload_size(value, 0)
    except _Unknown:
        return None


def is_toy_payload(model: SemanticModel, value: ast.expr, load: Optional[ast.AST] = None) -> bool:
    """Whether ``value`` holds at most :data:`TOY_SIZE` tensor elements, and some (:func:`payload_size`)."""
    size = payload_size(model, value, load)
    return size is not None and 0 < size <= TOY_SIZE


NEW_VALUE_METHODS = TENSOR_SHAPE_METHODS | TENSOR_TO_PYTHON_METHODS | frozenset({
    "clone", "sum", "mean", "max", "min", "std", "var", "abs", "exp", "log", "sqrt", "round", "clamp", "keys", "index", "count",
})
"""Methods of tensors, lists and dicts whose result shares nothing with the receiver's storage
(``x.size()``, ``x.item()``, ``x.clone()``, ``x.sum()``, ``d.keys()``): a view, a cast that may
return the receiver itself, ``d.get(k)`` or ``d.values()`` hand out what the receiver holds."""
METADATA = frozenset({"shape", "dtype", "device", "ndim", "is_cuda"})
"""Attributes of a tensor that describe it."""
DISPLAYS = (ast.List, ast.Tuple, ast.Dict, ast.Set)

LAYER_KEEPING_METHODS = MODULE_RETURNING_METHODS | frozenset({
    "load_state_dict", "state_dict", "parameters", "named_parameters", "buffers", "named_buffers", "forward",
    "modules", "named_modules", "children", "zero_grad",
})
"""Methods of a module that leave its layers as they are (``semantic.model_size`` reads any other
use of a toy's name as one that may grow it)."""
PART_METHODS = frozenset({
    "state_dict", "parameters", "named_parameters", "buffers", "named_buffers", "modules", "named_modules", "children",
    "named_children",
})
"""Methods that hand out a module's parts, through which code may replace or add weights."""

READING_BUILTINS = frozenset({"print", "len", "str", "repr", "type", "isinstance", "id", "next", "iter", "sum", "display"})
"""Builtins (and a notebook's ``display``) that only read what they are given."""
def always_a_toy(model: SemanticModel, binding: Binding) -> bool:
    """Whether every binding of a name (one at least) assigns a toy network (:func:`is_toy`): see
    :func:`always_at_most`."""
    return always_at_most(model, binding, TOY_SIZE)


def always_at_most(model: SemanticModel, binding: Binding, limit: int) -> bool:
    """Whether every binding of a name (one at least) assigns a network whose state dict holds at
    most ``limit`` elements, and some (an empty class is a stub still to be written), or the
    same name moved, put in a mode or wrapped (``net = net.to(device)``, ``net =
    nn.DataParallel(net)``), and nothing grows it after (:func:`_grown`). A parameter, an import, a
    global or any other kind of binding of the name is not known to hold such a network."""
    built = _networks_built(model, binding)
    if not built:
        return False
    return all(0 < (state_dict_size(model, value) or 0) <= limit for value in built)


def always_weightless(model: SemanticModel, binding: Binding) -> bool:
    """Whether every binding of a name (one at least) assigns a network whose state dict the code
    spells as empty (``nn.MaxPool2d(2)``, a class whose constructor builds only ``nn.Dropout``), or
    the same name moved, put in a mode or wrapped, as :func:`always_at_most` reads them."""
    built = _networks_built(model, binding)
    return bool(built) and all(state_dict_size(model, value) == 0 for value in built or [])


def widest_output(model: SemanticModel, binding: Binding) -> Optional[int]:
    """For a name every binding of which builds a network (see :func:`always_at_most`), the largest
    sum of the output widths of a network's layers with weights (:func:`output_width`), or None."""
    widths: List[int] = []
    for value in _networks_built(model, binding) or []:
        width = output_width(model, value)
        if width is None:
            return None
        widths.append(width)
    return max(widths) if widths else None


def output_width(model: SemanticModel, value: ast.expr) -> Optional[int]:
    """The sum, over the layers with weights of the network ``value`` builds, of what each puts out
    per pixel or example: a convolution's ``out_channels``, a linear layer's ``out_features``, an
    embedding's ``embedding_dim``. A forward pass on a batch computes at most the batch's pixels
    times that many elements where each layer runs once and none enlarges its input; None where the
    code does not show that (a transposed convolution, a recurrent layer, a class whose methods loop
    or call one of its layers twice)."""
    evaluator = _Evaluator(model)
    try:
        evaluator.size(value, {}, 0)
    except _Unknown:
        return None
    return None if evaluator.unbounded else evaluator.widths


def _networks_built(model: SemanticModel, binding: Binding) -> Optional[List[ast.expr]]:
    """The networks the assignments of a name build (one at least), leaving out those that only
    move, switch or wrap what it holds; None where the name is bound some other way, or a read of it
    may grow its network (:func:`_grown`)."""
    scope = binding.scope
    if binding.name in scope.parameters or binding.name in scope.globals | scope.nonlocals or binding.name in model.names_bound_otherwise:
        return None
    if _rebinds_names_unseen(model) or model.imports.star_modules:
        return None  # ``globals()["net"] = ...``, or a star import that may bind the name
    built: List[ast.expr] = []
    for use in model.uses(binding):
        if isinstance(use.ctx, ast.Load):
            if _grown(model, use):
                return None
            continue
        statement = model.parent(use)
        if not (isinstance(statement, ast.Assign) and statement.targets == [use]):
            return None
        value = module_of(statement.value)
        wrapped = _wrapper_of(model, value)
        value = module_of(wrapped) if wrapped is not None else value
        if isinstance(value, ast.Name) and value.id == binding.name:
            continue
        built.append(statement.value)
    return built or None


def _wrapper_of(model: SemanticModel, value: ast.expr) -> Optional[ast.expr]:
    """``net`` of ``nn.DataParallel(net)``: the module a wrapper of :data:`MODULE_WRAPPERS` holds."""
    if not (isinstance(value, ast.Call) and value.args and not isinstance(value.args[0], ast.Starred)):
        return None
    names = model.resolved_names(value.func)
    return value.args[0] if len(names) == 1 and nn_class_name(next(iter(names))) in MODULE_WRAPPERS else None


def _rewraps(model: SemanticModel, wrapper: ast.Call, name: str) -> bool:
    """Whether ``wrapper`` (moved or put in a mode) is assigned back to ``name`` alone (``net =
    nn.DataParallel(net).to(device)``)."""
    value: ast.AST = wrapper
    parent = model.parent(value)
    while isinstance(parent, ast.Attribute) and parent.attr in MODULE_RETURNING_METHODS:
        call = model.parent(parent)
        if not isinstance(call, ast.Call):
            return False
        value, parent = call, model.parent(call)
    return isinstance(parent, ast.Assign) and parent.value is value and len(parent.targets) == 1 and (
        isinstance(parent.targets[0], ast.Name) and parent.targets[0].id == name
    )


def _grown(model: SemanticModel, use: ast.Name, seen: FrozenSet[int] = frozenset()) -> bool:
    """Whether a read of a network's name may add to its state dict. Calling it, handing it to a
    builtin that only reads (``print(net)``), showing it in an f-string or as a notebook cell's bare
    name, comparing it, reading an attribute (``net.weights``) and calling
    methods that leave its layers alone (``net.eval()``, ``net.to(device)``, ``net.parameters()``)
    do not, nor printing its summary (``torchsummary.summary(net, ...)``); storing an attribute or
    item on it or on a part of it (``net.fc = ...``, ``net.layers[2] = ...``, ``net.eval().head =
    ...``), calling any other method on it or a part of it (``net.layers.append(...)``, ``net.build(...)``), and handing it or a part of it on
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
            if parent.attr in PART_METHODS and not _parts_only_read(model, call):
                return True
            node, parent = call, model.parent(call)
            continue
        node, parent = parent, call
    if isinstance(node, ast.Call):
        return False  # a method's result: the module moved, its parameters, its state dict
    if isinstance(parent, ast.keyword):
        call = model.parent(parent)
        return not (isinstance(call, ast.Call) and _only_read_by_callee(model, call, node, seen))
    if isinstance(parent, ast.Call) and node is not parent.func:
        if isinstance(parent.func, ast.Name) and parent.func.id in READING_BUILTINS:
            return False
        if model.resolved_names(parent.func) & MODEL_SUMMARIES:
            return False
        if node is use and _wrapper_of(model, parent) is use and _rewraps(model, parent, use.id):
            return False
        return not _only_read_by_callee(model, parent, node, seen)
    if isinstance(parent, (ast.FormattedValue, ast.Compare)):
        return False  # shown in an f-string, compared
    if isinstance(parent, ast.Expr) and node is use:
        return False  # a bare name, shown by a notebook
    return node is use or isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.Return, ast.Yield, ast.withitem))


MAX_HELPER_DEPTH = 8
"""How many functions deep a toy handed on is followed."""


class _HelperReads:
    """For one module, the parameters of its functions known to be only read (by ``id`` of the
    ``def`` and parameter name): each is followed once (build with ``model.derived``)."""

    def __init__(self, model: SemanticModel) -> None:
        self.only_read: Dict[Tuple[int, str], bool] = {}


PART_READS = frozenset({"shape", "dtype", "device", "requires_grad", "grad", "numel", "size", "dim", "is_cuda"})
"""Attributes and methods of a module's part that only read it."""


def _parts_only_read(model: SemanticModel, call: ast.Call) -> bool:
    """Whether the parts ``net.parameters()`` (or another of :data:`PART_METHODS`) hands out are
    only read: shown by a notebook, given to a ``torch.optim`` optimizer (``params=`` too), to
    ``torch.save``, to ``len`` or ``print`` (also through ``list(...)``, or shown), to ``next(...)`` whose result is only
    read, or looped over by a comprehension (``sum(p.numel() for p in net.parameters())``) that only
    reads each (:data:`PART_READS`). A ``for`` statement, an assignment or any other use may
    replace or add weights (``p.data = ...``)."""
    parent = model.parent(call)
    if isinstance(parent, ast.Expr):
        return True  # shown by a notebook
    if isinstance(parent, ast.keyword):
        parent = model.parent(parent)
        names = model.resolved_names(parent.func) if isinstance(parent, ast.Call) else frozenset()
        return bool(names) and all(name.startswith("torch.optim.") for name in names)
    if isinstance(parent, ast.Call) and call in parent.args:
        names = model.resolved_names(parent.func)
        if names and all(name.startswith("torch.optim.") or name == "torch.save" for name in names):
            return True
        builtin = parent.func.id if isinstance(parent.func, ast.Name) and parent.func.id not in model.scope_at(parent).bound else None
        if builtin == "next":
            return _only_part_reads(model, parent)
        if builtin in ("list", "tuple"):
            shown = model.parent(parent)
            return isinstance(shown, ast.Expr) or (
                isinstance(shown, ast.Call) and isinstance(shown.func, ast.Name) and shown.func.id in ("len", "print")
            )
        return builtin in ("len", "print")
    if isinstance(parent, ast.comprehension) and parent.iter is call and isinstance(parent.target, ast.Name):
        binding = model.scope_at(parent.target).resolve(parent.target.id)
        return all(isinstance(use.ctx, ast.Store) or _only_part_reads(model, use) for use in model.uses(binding))
    return False


def _only_part_reads(model: SemanticModel, node: ast.expr) -> bool:
    attribute = model.parent(node)
    if not (isinstance(attribute, ast.Attribute) and attribute.value is node and isinstance(attribute.ctx, ast.Load) and attribute.attr in PART_READS):
        return False
    call = model.parent(attribute)
    return not (isinstance(call, ast.Attribute) or (isinstance(call, ast.Subscript) and call.value is attribute))


def _only_read_by_callee(model: SemanticModel, call: ast.Call, argument: ast.AST, seen: FrozenSet[int]) -> bool:
    """Whether ``call`` calls, by a name bound only by undecorated ``def`` statements of the module
    (a notebook may define a helper again in a later cell), functions each of which fills a
    parameter with ``argument``, never rebinds that parameter, and only reads it the ways
    :func:`_grown` allows (through the functions it hands it to in turn, each followed once, at
    most :data:`MAX_HELPER_DEPTH` deep). A method (which a subclass may override), a decorated
    function (whose wrapper runs instead) or a name bound any other way is not followed."""
    definitions = _definitions_called(model, call)
    if not definitions or len(seen) >= MAX_HELPER_DEPTH:
        return False
    return all(_parameter_only_read(model, function, call, argument, seen) for function in definitions)


def _parameter_only_read(model: SemanticModel, function: Function, call: ast.Call, argument: ast.AST, seen: FrozenSet[int]) -> bool:
    if id(function.node) in seen:
        return False
    parameter: Optional[str] = None
    index = next((position for position, passed in enumerate(call.args) if passed is argument), None)
    if index is not None:
        if any(isinstance(earlier, ast.Starred) for earlier in call.args[: index + 1]) or index >= len(function.positional):
            return False
        parameter = function.positional[index]
    else:
        keyword = next((keyword for keyword in call.keywords if keyword.value is argument), None)
        if keyword is not None and keyword.arg in function.scope.parameters:
            parameter = keyword.arg
    scope = function.scope
    if parameter is None or parameter in scope.globals | scope.nonlocals:
        return False
    known = model.derived(_HelperReads).only_read
    key = (id(function.node), parameter)
    if key not in known:
        uses = model.uses(Binding(scope, parameter))
        known[key] = all(
            isinstance(use.ctx, ast.Load) and not _grown(model, use, seen | {id(function.node)}) for use in uses
        )
    return known[key]


def _definitions_called(model: SemanticModel, call: ast.Call) -> List[Function]:
    """The functions ``f(...)`` may call where ``f`` is bound only by undecorated ``def``
    statements (no assignment, import or class) in the scope its binding resolves to; empty
    otherwise."""
    if not isinstance(call.func, ast.Name) or model.callee(call) is None:
        return []
    binding = model.scope_at(call.func).resolve(call.func.id)
    if any(not isinstance(use.ctx, ast.Load) for use in model.uses(binding)):
        return []
    bound = [
        node for node in ast.walk(model.tree)
        if isinstance(node, OTHER_BINDINGS) and (getattr(node, "asname", None) or getattr(node, "name", None) or getattr(node, "rest", None)) == call.func.id
    ]
    functions = [function for function in model.all_functions if function.node in bound and function.scope.parent is binding.scope]
    if len(functions) != len(bound) or any(function.node.decorator_list for function in functions):
        return []
    return functions


MAX_STEPS = 2_000
"""How many values and shapes one evaluation reads at most."""
NAME_REBINDERS = frozenset({"globals", "exec"})
"""Builtins through which code may rebind a module's names unseen (and ``vars()`` without an
argument)."""


class _Evaluator:
    def __init__(self, model: SemanticModel, load: Optional[ast.AST] = None) -> None:
        self.model = model
        self.horizon = self.model.top_level_index(load) if load is not None else None
        """The index of the top-level statement that reads a payload back, where it runs there
        (not in a function): what later statements do to the payload's names comes too late."""
        self.steps = 0
        self.widths = 0
        """The output widths of the layers with weights met so far (see :func:`output_width`)."""
        self.unbounded = False
        """Whether a layer met may enlarge its input or run more than once."""
        self.following: Set[Binding] = set()
        """The names whose values are being read (a name read again inside its own value is a cycle)."""

    def step(self) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _Unknown

    def through(self, name: ast.Name, read: Callable[[ast.expr], T]) -> T:
        """``read`` of the value one assignment alone gives ``name`` (:meth:`bound_value`), never
        reading a name inside its own value."""
        binding = self.model.scope_at(name).resolve(name.id)
        if binding in self.following:
            raise _Unknown
        self.following.add(binding)
        try:
            return read(self.bound_value(name))
        finally:
            self.following.discard(binding)

    def size(self, node: ast.expr, environment: Environment, depth: int) -> int:
        self.step()
        node = module_of(node)
        if depth > MAX_DEPTH or not isinstance(node, ast.Call):
            raise _Unknown
        names = self.model.resolved_names(node.func)
        if len(names) == 1:
            qualified = next(iter(names))
            if qualified == PARAMETER:
                data = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "data"), None)
                if data is None:
                    raise _Unknown
                return self.tensor_size(data, environment)
            layer = nn_class_name(qualified)
            if layer in PARAMETER_FREE_LAYERS:
                if layer in SIZE_CHANGING_FREE_LAYERS and not self.shrinks(node, environment):
                    self.unbounded = True  # ``nn.AdaptiveAvgPool2d(224)``, ``nn.Upsample`` may enlarge
                return 0
            if layer in MODULE_WRAPPERS and node.args and not isinstance(node.args[0], ast.Starred):
                return self.size(node.args[0], environment, depth + 1)
            if layer in MODULE_CONTAINERS:
                return self.container_size(layer, node, environment, depth)
            if layer in SIZED_LAYERS:
                kind, positional = SIZED_LAYERS[layer]
                arguments = self.arguments(node, positional, {}, environment)
                size = _layer_size(kind, layer, arguments)
                width = _layer_width(kind, layer, arguments)
                if width is None:
                    self.unbounded = True
                else:
                    self.widths += width
                return size
            raise _Unknown
        built = self.model.class_built(node)
        if built is None or _rebound_by_assignment(self.model, node.func):
            raise _Unknown  # ``Net = BigNet`` before ``Net()``: the name may hold another class
        return self.class_size(built, node, environment, depth)

    def shrinks(self, node: ast.Call, environment: Environment) -> bool:
        """Whether an adaptive pooling's output size is spelled, at most :data:`SMALL_SIDE`."""
        if not nn_class_name(next(iter(self.model.resolved_names(node.func)), "")).startswith("Adaptive") or len(node.args) != 1:
            return False
        try:
            side = self.value(node.args[0], environment)
        except _Unknown:
            return False
        sides = side if isinstance(side, tuple) else (side,)
        return all(isinstance(part, int) and not isinstance(part, bool) and 0 < part <= SMALL_SIDE for part in sides)

    def payload_size(self, value: ast.expr, depth: int) -> int:
        """The tensor elements ``value`` holds (see :func:`is_toy_payload`)."""
        if depth > MAX_DEPTH:
            raise _Unknown
        if isinstance(value, (ast.List, ast.Tuple)):
            return sum(self.payload_size(part, depth + 1) for part in value.elts)
        if isinstance(value, ast.Dict):
            if any(key is None or not isinstance(key, ast.Constant) for key in value.keys):
                raise _Unknown
            return sum(self.payload_size(part, depth + 1) for part in value.values)
        if isinstance(value, ast.Name):
            assigned = self.reaching_values(value)
            if not self.kept_as_assigned(value, depth):
                raise _Unknown  # a container filled later, a tensor resized in place or aliased
            return max(self.payload_size(part, depth + 1) for part in assigned)
        return math.prod(self.tensor_shape(value, {}, depth + 1))

    def kept_as_assigned(self, name: ast.Name, depth: int) -> bool:
        """Whether every read of a name bound to a container leaves what it holds as assigned: a method that returns a
        new value (``x.to(device)``, ``x.size(0)``, ``d.keys()``), ``x.shape`` and the other
        metadata, an argument of ``torch.save``, of another torch function not given ``out=``, or
        of a builtin that only reads (``print(x)``), an f-string, a comparison, or an element of a
        list, tuple or dict display used so (or assigned to a name kept so). Anything else (``xs.append``,
        ``x.resize_``, ``d["k"] = ...``, ``x.data = ...``, ``fill(xs)``, ``xs[0]``) may change it."""
        if depth > MAX_DEPTH:
            return False
        binding = self.model.scope_at(name).resolve(name.id)
        uses = [use for use in self.model.uses(binding) if not self.too_late(use)]
        return not any(isinstance(use.ctx, ast.Del) for use in uses) and all(
            isinstance(use.ctx, ast.Store) or self.only_read(use, depth) for use in uses
        )

    def too_late(self, use: ast.AST) -> bool:
        """Whether ``use`` runs in a top-level statement after the one that reads the payload back."""
        if self.horizon is None:
            return False
        index = self.model.top_level_index(use)
        return index is not None and index > self.horizon

    def only_read(self, node: ast.expr, depth: int) -> bool:
        parent = self.model.parent(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            call = self.model.parent(parent)
            if isinstance(call, ast.Call) and call.func is parent:
                return parent.attr in NEW_VALUE_METHODS
            return isinstance(parent.ctx, ast.Load) and parent.attr in METADATA
        if isinstance(parent, ast.Call) and any(argument is node for argument in parent.args):
            if isinstance(parent.func, ast.Name) and parent.func.id in READING_BUILTINS:
                return True
            names = self.model.resolved_names(parent.func)
            return bool(names) and all(
                name.startswith("torch.") and not name.endswith("_") and not name.startswith("torch.Tensor.") for name in names
            ) and not any(k.arg == "out" for k in parent.keywords)
        if isinstance(parent, (ast.FormattedValue, ast.Compare)):
            return True
        if isinstance(parent, (ast.List, ast.Tuple, ast.Set)) or (isinstance(parent, ast.Dict) and any(value is node for value in parent.values)):
            holder = self.model.parent(parent)
            if isinstance(holder, ast.Assign) and holder.value is parent and len(holder.targets) == 1 and isinstance(holder.targets[0], ast.Name):
                return self.kept_as_assigned(holder.targets[0], depth + 1)
            return self.only_read(parent, depth + 1)
        return False

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
        if any(stores_on_instance(item) for item in ast.walk(built) if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item is not constructor):
            raise _Unknown  # a method (``forward``) may add layers after the constructor
        if _may_compute_more_than_its_layers(self.model, built, constructor):
            self.unbounded = True
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
        in an attribute, a tensor stored in an attribute (no part of the state dict), or a buffer
        registered from a tensor whose shape the code spells."""
        total = 0
        buffers: Set[str] = set()
        for statement in body:
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                continue
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
                total += self.call_statement_size(statement.value, receiver, environment)
                buffers.add(_buffer_name(statement.value))
                continue
            if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
                raise _Unknown
            target = statement.targets[0]
            try:
                number = self.value(statement.value, environment)
            except _Unknown:
                if not (isinstance(target, ast.Attribute) and ast_dotted_name(target.value) == receiver):
                    raise
                if target.attr in buffers:
                    raise  # a tensor assigned to a buffer's name replaces the buffer in the state dict
                if not self.plain_tensor(statement.value, environment):
                    total += self.size(statement.value, environment, depth + 1)
                continue
            if isinstance(target, ast.Name):
                environment = {**environment, target.id: number}
            elif not (isinstance(target, ast.Attribute) and ast_dotted_name(target.value) == receiver):
                raise _Unknown
        return total

    def plain_tensor(self, value: ast.expr, environment: Environment) -> bool:
        """Whether ``value`` is a tensor the code spells the shape of (see :meth:`tensor_shape`): an
        attribute holding one is no part of the state dict."""
        try:
            self.tensor_shape(value, environment, 0)
        except _Unknown:
            return False
        return True

    def call_statement_size(self, call: ast.Call, receiver: str, environment: Environment) -> int:
        function = call.func
        if isinstance(function, ast.Attribute) and function.attr == "__init__" and isinstance(function.value, ast.Call) and ast_dotted_name(function.value.func) == "super":
            return 0
        if isinstance(function, ast.Attribute) and function.attr == BUFFER_REGISTRATION and ast_dotted_name(function.value) == receiver and len(call.args) == 2 and _buffer_name(call):
            return self.tensor_size(call.args[1], environment)
        if _fills_in_place(self.model, call, receiver):
            return 0
        raise _Unknown

    def tensor_size(self, node: ast.expr, environment: Environment) -> int:
        """The elements of a tensor whose shape the code spells (see :meth:`tensor_shape`)."""
        return math.prod(self.tensor_shape(node, environment, 0))

    def tensor_shape(self, node: ast.expr, environment: Environment, depth: int) -> Tuple[int, ...]:
        """The shape of ``torch.randn(3, 4)``, ``torch.zeros((3, 4))`` and the other shape
        factories, of ``torch.tensor([[1, 2], [3, 4]])``, of ``torch.stack((x, x), dim=0)`` and of
        ``torch.triu(x)``, through names bound once (:meth:`bound_value`)."""
        self.step()
        if depth > MAX_DEPTH:
            raise _Unknown
        if isinstance(node, ast.Name) and node.id not in environment:
            if self.resized_in_place(node):
                raise _Unknown
            return self.through(node, lambda bound: self.tensor_shape(bound, {}, depth + 1))
        if not isinstance(node, ast.Call):
            raise _Unknown
        names = self.model.resolved_names(node.func)
        if len(names) != 1:
            raise _Unknown
        head, _, function = next(iter(names)).rpartition(".")
        if head != "torch" or any(isinstance(argument, ast.Starred) for argument in node.args):
            raise _Unknown
        if function in SHAPE_KEEPING_FUNCTIONS and node.args:
            return self.tensor_shape(node.args[0], environment, depth + 1)
        if function == STACKING_FUNCTION:
            return self.stacked_shape(node, environment, depth)
        sized = {keyword.arg: keyword.value for keyword in node.keywords if keyword.arg not in TENSOR_OPTIONS}
        if function == LITERAL_TENSOR and len(node.args) == 1 and not sized:
            return _literal_shape(node.args[0])
        if function == RANGE_FUNCTION and 1 <= len(node.args) <= 3 and not sized:
            return (_range_length([self.value(argument, environment) for argument in node.args]),)
        if function not in SHAPE_FACTORIES or function.endswith("_like") or function in ("full", "normal"):
            raise _Unknown
        if set(sized) - {"size"} or bool(sized) == bool(node.args):
            raise _Unknown
        values = [self.value(argument, environment) for argument in (node.args or [sized["size"]])]
        shape = values[0] if len(values) == 1 and isinstance(values[0], tuple) else tuple(values)
        return _dimensions(shape)

    def stacked_shape(self, call: ast.Call, environment: Environment, depth: int) -> Tuple[int, ...]:
        """The shape of ``torch.stack(tensors, dim)``: the tensors', all alike, with their number at ``dim``."""
        dimension: Value = 0
        if len(call.args) == 2:
            dimension = self.value(call.args[1], environment)
        for keyword in call.keywords:
            if keyword.arg != "dim" or len(call.args) != 1:
                raise _Unknown
            dimension = self.value(keyword.value, environment)
        parts = call.args[0]
        if len(call.args) > 2 or not isinstance(parts, (ast.Tuple, ast.List)) or not parts.elts:
            raise _Unknown
        shapes = {self.tensor_shape(part, environment, depth + 1) for part in parts.elts}
        if len(shapes) != 1 or not isinstance(dimension, int) or isinstance(dimension, bool):
            raise _Unknown
        shape = shapes.pop()
        position = dimension if dimension >= 0 else len(shape) + 1 + dimension
        if not 0 <= position <= len(shape):
            raise _Unknown
        return shape[:position] + (len(parts.elts),) + shape[position:]

    def arguments(self, call: ast.Call, positional: Tuple[str, ...], defaults: Dict[str, ast.expr], environment: Environment) -> Environment:
        """The values a call passes, by parameter name (defaults where it passes none)."""
        if any(isinstance(argument, ast.Starred) for argument in call.args) or any(keyword.arg is None for keyword in call.keywords):
            raise _Unknown
        if len(call.args) > len(positional):
            raise _Unknown
        bound: Environment = {name: self.value(value, {}) for name, value in defaults.items()}
        bound.update((name, self.value(argument, environment)) for name, argument in zip(positional, call.args))
        bound.update((keyword.arg, self.value(keyword.value, environment)) for keyword in call.keywords if keyword.arg is not None)
        return bound

    def value(self, node: ast.expr, environment: Environment, depth: int = 0) -> Value:
        """The value of a constant expression over ``environment``: numbers, strings, ``None``,
        tuples and lists of them, arithmetic on integers, names (of ``environment``, or bound once:
        :meth:`bound_value`), and the shape of a tensor the code spells (``x.shape[1]``,
        ``x.size(0)``, ``len(x)``: :meth:`tensor_shape`)."""
        self.step()
        if depth > MAX_DEPTH:
            raise _Unknown
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, type(None))):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in environment:
                return environment[node.id]
            return self.through(node, lambda bound: self.value(bound, {}, depth + 1))
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self.value(element, environment, depth) for element in node.elts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            operand = self.value(node.operand, environment, depth)
            if isinstance(operand, int):
                return -operand
        if isinstance(node, ast.BinOp):
            return _arithmetic(node.op, self.value(node.left, environment, depth), self.value(node.right, environment, depth))
        if isinstance(node, ast.Attribute) and node.attr == SHAPE_ATTRIBUTE:
            return self.tensor_shape(node.value, environment, depth + 1)
        if isinstance(node, ast.Subscript):
            return _item(self.value(node.value, environment, depth), self.value(node.slice, environment, depth))
        if isinstance(node, ast.Call) and not node.keywords and len(node.args) <= 1:
            function = node.func
            if isinstance(function, ast.Attribute) and function.attr == SIZE_METHOD:
                shape = self.tensor_shape(function.value, environment, depth + 1)
                return _item(shape, self.value(node.args[0], environment, depth)) if node.args else shape
            if isinstance(function, ast.Name) and function.id == "len" and node.args and self.model.names_at(self.model.span(function)) >= {"builtins.len"}:
                return _item(self.tensor_shape(node.args[0], environment, depth + 1), 0)
        raise _Unknown

    def resized_in_place(self, name: ast.Name) -> bool:
        """Whether the code may change the shape of the tensor a name holds without assigning the
        name: an in-place method (``x.resize_(...)``, ``x.data.resize_(...)``,
        ``torch.Tensor.resize_(x, ...)``), an attribute or item stored on it (``x.data = ...``),
        the name given as a call's ``out=``, or the name aliased (``y = x``)."""
        binding = self.model.scope_at(name).resolve(name.id)
        for use in self.model.uses(binding):
            parent = self.model.parent(use)
            if isinstance(parent, ast.Attribute) and parent.value is use and (
                parent.attr.endswith("_") or parent.attr == "data" or not isinstance(parent.ctx, ast.Load)
            ):
                return True
            if isinstance(parent, ast.Subscript) and parent.value is use and not isinstance(parent.ctx, ast.Load):
                return True
            if isinstance(parent, ast.keyword) and parent.arg == "out":
                return True
            if isinstance(parent, ast.Call) and use in parent.args and any(n.endswith("_") for n in self.model.resolved_names(parent.func)):
                return True
            if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr)) and parent.value is use:
                return True
        return False

    def reaching_values(self, name: ast.Name) -> List[ast.expr]:
        """The values of a name's assignments (:meth:`assigned_values`) that may reach a read of
        it: in a module whose every assignment of the name is a statement of its own top level (a
        script's or notebook's straight-line code), read by a top-level statement itself (not in a
        function, which runs when called), the last one before the statement that reads it (``y = torch.zeros(4)`` before ``torch.save([x, y], path)``, not a later ``y =
        net(x)``); any of them otherwise."""
        values = self.assigned_values(name)
        top = {id(statement): index for index, statement in enumerate(self.model.tree.body)}
        statements = [self.model.parent(value) for value in values]
        around = [name, *self.model.ancestors(name)]
        reader = next((node for node in around if id(node) in top), None)
        deferred = any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)) for node in around)
        if reader is None or deferred or not all(id(statement) in top for statement in statements):
            return values  # a read in a function runs when it is called, after any of them
        before = [(top[id(statement)], value) for statement, value in zip(statements, values) if top[id(statement)] < top[id(reader)]]
        if not before:
            raise _Unknown
        return [max(before, key=lambda pair: pair[0])[1]]

    def bound_value(self, name: ast.Name) -> ast.expr:
        """What a name read outside ``environment`` holds where one assignment of it alone gives
        its value (``d_out = 2``, ``x = torch.tensor(...)``) and any other only moves or casts it
        (``x = x.to(device)``): see :meth:`assigned_values`."""
        values = self.assigned_values(name)
        if len(values) != 1:
            raise _Unknown
        return values[0]

    def assigned_values(self, name: ast.Name) -> List[ast.expr]:
        """The values the assignments of a name give it (one at least), leaving out those that
        only move or cast what it holds (``x = x.to(device)``); the name is bound no other way (a
        parameter, a global or nonlocal, an import, a ``def``, a loop or ``with`` target), not in a
        class body, and not in a module with a star import or that calls ``globals()``, ``exec``
        or ``vars()``."""
        binding = self.model.scope_at(name).resolve(name.id)
        scope = binding.scope
        if name.id in scope.parameters or name.id in scope.globals | scope.nonlocals or name.id in self.model.names_bound_otherwise:
            raise _Unknown
        if scope.is_class or self.model.imports.star_modules or _rebinds_names_unseen(self.model):
            raise _Unknown  # a class body reads the module's name until it binds its own; names rebound unseen
        assigned = self.model.plain_assignments(binding)
        values = [value for value in assigned or [] if not _reshaped_in_place(value, name.id)]
        if not values:
            raise _Unknown
        return values


SHAPE_ATTRIBUTE = "shape"
SIZE_METHOD = "size"


GROWING_METHODS = CONTAINER_MUTATORS | frozenset({"add_module", "register_module"})
"""Methods of a module (or of the containers it holds) that add to it."""


def stores_on_instance(method: Union[ast.FunctionDef, ast.AsyncFunctionDef]) -> bool:
    """Whether a method stores something on its instance (``self.extra = ...``, ``setattr(self,
    ...)``, ``self.add_module(...)``, ``self.blocks.append(...)``)."""
    arguments = method.args.posonlyargs + method.args.args
    if not arguments:
        return False
    receiver = arguments[0].arg
    for node in ast.walk(method):
        if isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in GROWING_METHODS:
            root = node.func.value
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if isinstance(root, ast.Name) and root.id == receiver:
                return True
    return False


def _fills_in_place(model: SemanticModel, call: ast.Call, receiver: str) -> bool:
    """Whether ``call`` fills a tensor of the instance in place, keeping its size: an in-place
    method of it (``self.fc.weight.data.normal_(0, 0.1)``, not one of
    :data:`~gpulint.semantic.torch_api.SIZE_CHANGING_IN_PLACE_METHODS`), or an initialiser of
    :data:`~gpulint.semantic.torch_api.WEIGHT_INITIALISERS` given it first
    (``nn.init.zeros_(self.fc.bias)``)."""
    function = call.func
    if any(name.startswith(WEIGHT_INITIALISERS + ".") for name in model.resolved_names(function)):
        target: Optional[ast.expr] = call.args[0] if call.args else None
    elif isinstance(function, ast.Attribute) and function.attr.endswith("_") and not function.attr.startswith("_"):
        if function.attr in SIZE_CHANGING_IN_PLACE_METHODS:
            return False
        target = function.value
    else:
        return False
    dotted = ast_dotted_name(target) if isinstance(target, (ast.Name, ast.Attribute)) else None
    return dotted is not None and dotted.startswith(receiver + ".")


def _buffer_name(call: ast.Call) -> str:
    """The name ``register_buffer("mask", ...)`` gives, or ``""`` for any other call."""
    function = call.func
    if isinstance(function, ast.Attribute) and function.attr == BUFFER_REGISTRATION and call.args:
        name = call.args[0]
        return name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else ""
    return ""


def _rebinds_names_unseen(model: SemanticModel) -> bool:
    """Whether the module calls ``globals()``, ``exec(...)`` or ``vars()`` (without an argument)."""
    return any(
        isinstance(call.func, ast.Name) and (call.func.id in NAME_REBINDERS or (call.func.id == "vars" and not call.args))
        for call in model.calls()
    )


def _reshaped_in_place(value: ast.expr, name: str) -> bool:
    """``name.to(device)``, ``name.float().cuda()``: the tensor ``name`` holds, of the same shape."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in SHAPE_KEEPING_METHODS:
        value = value.func.value
    return isinstance(value, ast.Name) and value.id == name


def _range_length(bounds: List[Value]) -> int:
    """The length of ``range(*bounds)``, for integer bounds."""
    integers = [bound for bound in bounds if isinstance(bound, int) and not isinstance(bound, bool)]
    if len(integers) != len(bounds) or integers[2:] == [0]:
        raise _Unknown
    return len(range(*integers))


def _literal_shape(node: ast.expr) -> Tuple[int, ...]:
    """The shape of the nested lists or tuples of numbers ``torch.tensor`` is given."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
        return ()
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _literal_shape(node.operand)
    if isinstance(node, (ast.List, ast.Tuple)) and not any(isinstance(element, ast.Starred) for element in node.elts):
        shapes = {_literal_shape(element) for element in node.elts}
        if len(shapes) > 1:
            raise _Unknown
        return (len(node.elts),) + (shapes.pop() if shapes else ())
    raise _Unknown


def _dimensions(shape: Value) -> Tuple[int, ...]:
    """``shape`` as a tuple of sides, each a count."""
    if not isinstance(shape, tuple):
        raise _Unknown
    sides: List[int] = []
    for side in shape:
        if not isinstance(side, int) or isinstance(side, bool) or side < 0:
            raise _Unknown
        sides.append(side)
    return tuple(sides)


def _item(sequence: Value, index: Value) -> Value:
    if not isinstance(sequence, tuple) or not isinstance(index, int) or isinstance(index, bool) or not -len(sequence) <= index < len(sequence):
        raise _Unknown
    return sequence[index]


def _arithmetic(operator: ast.operator, left: Value, right: Value) -> int:
    if isinstance(left, int) and isinstance(right, int) and not isinstance(left, bool) and not isinstance(right, bool):
        if isinstance(operator, ast.Add):
            return left + right
        if isinstance(operator, ast.Sub):
            return left - right
        if isinstance(operator, ast.Mult):
            return left * right
        if isinstance(operator, ast.FloorDiv) and right:
            return left // right
    raise _Unknown


def _rebound_by_assignment(model: SemanticModel, func: ast.expr) -> bool:
    """Whether the name a class is called by is also assigned (``Net = BigNet``)."""
    if not isinstance(func, ast.Name):
        return False
    binding = model.scope_at(func).resolve(func.id)
    return any(not isinstance(use.ctx, ast.Load) for use in model.uses(binding))


def _layer_width(kind: str, layer: str, arguments: Environment) -> Optional[int]:
    """What a layer of ``SIZED_LAYERS`` puts out per pixel or example, where it does not enlarge
    its input: None for a transposed convolution and a convolution padded by more than half its
    kernel (which do) and a recurrent layer (whose gates, per step, the count does not follow); a
    batch norm's output is its input's size (0 more)."""
    if kind == "linear":
        return _count(arguments, "out_features")
    if kind == "conv":
        padding, kernel = arguments.get("padding", 0), arguments.get("kernel_size")
        if layer.startswith("ConvTranspose") or not (padding in ("same", "valid") or (
            isinstance(padding, int) and isinstance(kernel, int) and 0 <= padding <= kernel // 2
        )):
            return None
        return _count(arguments, "out_channels")
    if kind == "embedding":
        return _count(arguments, "embedding_dim")
    if kind == "batch_norm":
        return 0
    return None


def _may_compute_more_than_its_layers(model: SemanticModel, built: ast.ClassDef, constructor: ast.FunctionDef) -> bool:
    """Whether a method of the class, other than its constructor, may compute more than each of
    its layers once: a loop or a comprehension; a call of an attribute of the instance other than a
    layer the constructor binds once (a layer with weights called twice, ``self.forward``,
    ``self.conv.forward``); a call of anything but torch's functions that keep or shrink sizes
    (``F.relu``, ``F.max_pool2d``: :data:`SIZE_KEEPING_CALLS`) and tensor methods that do
    (``view``, ``flatten``, ``mean``); or any ``nn.Parameter`` of the class (broadcast in
    ``forward``, it may multiply a batch's size)."""
    receiver = constructor.args.args[0].arg if constructor.args.args else ""
    bound: Dict[str, int] = {}
    free: Set[str] = set()
    for statement in constructor.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Call) and PARAMETER in model.resolved_names(node.func):
                return True
        if not isinstance(statement, ast.Assign):
            continue
        for target in statement.targets:
            if isinstance(target, ast.Attribute) and ast_dotted_name(target.value) == receiver:
                bound[target.attr] = bound.get(target.attr, 0) + 1
                if isinstance(statement.value, ast.Call) and any(
                    nn_class_name(name) in PARAMETER_FREE_LAYERS for name in model.resolved_names(statement.value.func)
                ):
                    free.add(target.attr)
    called: Set[str] = set()
    for method in built.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) or method is constructor:
            continue
        own = method.args.args[0].arg if method.args.args else ""
        for node in ast.walk(method):
            if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.comprehension, ast.Lambda)):
                return True
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if isinstance(func, ast.Attribute) and ast_dotted_name(func.value) == own:
                if bound.get(func.attr) != 1 or (func.attr in called and func.attr not in free):
                    return True
                called.add(func.attr)
            elif isinstance(func, ast.Attribute) and not model.resolved_names(func):
                if func.attr not in SIZE_KEEPING_METHODS_OF_TENSORS:
                    return True
            elif not (isinstance(func, ast.Name) and model.is_builtin(func, {"print", "len", "isinstance"})) and not any(
                name.rpartition(".")[2] in SIZE_KEEPING_CALLS and name.startswith("torch.") for name in model.resolved_names(func)
            ):
                return True
    return False


def _recurrent_size(layer: str, arguments: Environment) -> int:
    """An ``nn.RNN``, ``nn.GRU`` or ``nn.LSTM``: for each layer and direction, a weight of
    ``gates * hidden`` rows over the layer's input and over the hidden state, and two biases of as
    many rows; a layer's input is the previous one's output (``hidden`` per direction). A
    projection (``proj_size``) is not followed."""
    if arguments.get("proj_size", 0) != 0:
        raise _Unknown
    hidden, layers = _count(arguments, "hidden_size"), arguments.get("num_layers", 1)
    directions = 2 if _flag(arguments, "bidirectional", default=False) else 1
    if not isinstance(layers, int) or isinstance(layers, bool) or layers < 1:
        raise _Unknown
    rows = RECURRENT_GATES[layer] * hidden
    size = 0
    for index in range(layers):
        inputs = _count(arguments, "input_size") if index == 0 else hidden * directions
        size += directions * (rows * (inputs + hidden) + (2 * rows if _flag(arguments, "bias") else 0))
    return size


def _count(environment: Environment, name: str) -> int:
    value = environment.get(name)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _Unknown
    return value


def _flag(environment: Environment, name: str, default: bool = True) -> bool:
    """A flag the call passes, or ``default`` where it passes none."""
    value = environment.get(name, default)
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
    if kind == "recurrent":
        return _recurrent_size(layer, arguments)
    if kind == "batch_norm":
        features = _count(arguments, "num_features")
        affine = 2 * features if _flag(arguments, "affine") else 0
        statistics = 2 * features + 1 if _flag(arguments, "track_running_stats") else 0
        return affine + statistics
    raise _Unknown
