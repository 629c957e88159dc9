"""Conservative tensor-likeness: which expressions evaluate to GPU tensors (or objects holding them).

Unknown means not tensor-like. Evidence is what the code itself shows: ``.cuda()``/``.to(device)``,
``torch`` functions given a device or tensor-like arguments, ``torch.load`` without a CPU
``map_location``, calls of objects the file treats as modules (``model.eval()``,
``model.parameters()``, ``self.net = nn.Linear(...)``), ``.backward()`` called on a name, and
arithmetic, indexing and methods on tensor-like values.
"""

from __future__ import annotations

from typing import Callable, FrozenSet, Iterable, List, Optional, Set, Union

import libcst as cst
from libcst.helpers import get_full_name_for_node

from gpulint.analysis.names import QualifiedNames
from gpulint.semantic.torch_api import (
    CHECKPOINT_COUNTER_KEYS,
    FLOAT_DTYPES,
    FLOATING_LEGACY_TENSOR_CLASSES,
    FORWARD_METHODS,
    INDEX_METHODS,
    LEGACY_TENSOR_CLASSES,
    LOADERS,
    MODULE_METHODS,
    NON_TENSOR_ATTRIBUTES,
    NON_TENSOR_METHODS,
    PARAMETER_FREE_LAYERS,
    RELEASING_BUILTINS,
    SHAPE_FACTORIES,
    TORCH_PACKAGE,
    VALUE_BUILTINS,
    builds_history_free_metric,
    is_loss_module,
    is_module_constructor,
    is_torch_tensor_function,
    nn_class_name,
)

CRITERION_SUFFIXES = ("criterion", "loss_fn", "loss_func", "loss_function")
"""How a loss function or module bound to a name is usually named: its result holds a graph."""
RELEASING_METHODS = NON_TENSOR_METHODS | {"keys"}
"""Methods whose result holds no GPU tensor: torch's ``NON_TENSOR_METHODS``, and a mapping's ``keys``."""
INDEX_RESULT_METHODS = INDEX_METHODS | {"generate"}
"""Methods whose result is indices, masks or token ids: a few bytes, whatever the input's size
(torch's ``INDEX_METHODS``, and transformers' ``generate``)."""
MODULE_CAST_METHODS = frozenset({"eval", "train", "half", "float", "bfloat16", "requires_grad_"})
"""Module methods that return the module itself, switched or cast (``Net().half()``)."""
MODULE_OUTPUT_METHODS = frozenset({"forward", "generate"})
"""Module methods whose result is the module's output: ``nn.Module.forward``, and transformers'
``generate``."""



def dotted_name(node: cst.CSTNode) -> Optional[str]:
    """``a.b.c`` for a name or attribute chain, else None."""
    if isinstance(node, (cst.Name, cst.Attribute)):
        return get_full_name_for_node(node)
    return None


def subexpressions(node: cst.CSTNode, nested: bool = True) -> List[cst.CSTNode]:
    """``node`` and every node below it, in visit order; without entering a function, lambda or
    class below ``node`` where ``nested`` is false."""
    found: List[cst.CSTNode] = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, child: cst.CSTNode) -> bool:
            found.append(child)
            return nested or child is node or not isinstance(child, (cst.FunctionDef, cst.Lambda, cst.ClassDef))

    node.visit(Collect())
    return found


def _string(node: cst.CSTNode) -> Optional[str]:
    value = node.evaluated_value if isinstance(node, cst.SimpleString) else None
    return value if isinstance(value, str) else None


def _names_cpu(node: cst.CSTNode) -> bool:
    """``"cpu"``, ``torch.device("cpu")``, or a ``map_location`` function (which decides per tensor)."""
    if isinstance(node, cst.Lambda):
        return True
    if isinstance(node, cst.Call) and node.args:
        node = node.args[0].value
    text = _string(node)
    return text is not None and text.split(":")[0] == "cpu"


def _keyword(call: cst.Call, name: str, position: Optional[int] = None) -> Optional[cst.BaseExpression]:
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    if position is not None and len(positional) > position:
        return positional[position].value
    return None


def _moves_to_cpu(call: cst.Call) -> bool:
    return bool(call.args) and _names_cpu(call.args[0].value)


class ModuleEvidence(cst.CSTVisitor):
    """Collects, across a file, the dotted names the code treats as ``nn.Module`` objects: names
    bound to a module built, moved or switched, and receivers of ``nn.Module`` methods but names
    bound to a metric of :data:`~gpulint.semantic.torch_api.HISTORY_FREE_METRICS`
    (``accuracy.to(device)`` after ``accuracy = Accuracy(...)``)."""

    def __init__(self, qualified_names: QualifiedNames) -> None:
        super().__init__()
        self.qualified_names = qualified_names
        self.constructed: Set[str] = set()
        self.receivers: Set[str] = set()
        self.metrics: Set[str] = set()

    @property
    def modules(self) -> Set[str]:
        """The names shown to be modules, once the file is visited."""
        return self.constructed | (self.receivers - self.metrics)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in MODULE_METHODS:
            name = dotted_name(node.func.value)
            if name:
                self.receivers.add(name)

    def visit_Assign(self, node: cst.Assign) -> None:
        call = _constructor_call(node.value)
        if call is None:
            return
        qualified = self.qualified_names(call.func)
        if builds_history_free_metric(qualified):
            found = self.metrics
        elif (call is not node.value and isinstance(call.func, (cst.Name, cst.Attribute))) or any(
            map(is_module_constructor, qualified)
        ):
            found = self.constructed
        else:
            return
        for target in node.targets:
            name = dotted_name(target.target)
            if name:
                found.add(name)


def _constructor_call(value: cst.BaseExpression) -> Optional[cst.Call]:
    """The call under any moving or switching methods (``Net()`` of ``Net().cuda().eval()``)."""
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in (
        "cuda", "to", "eval", "train", "half", "float", "bfloat16", "requires_grad_",
    ):
        value = value.func.value
    return value if isinstance(value, cst.Call) else None


class TensorLikeness:
    """Decides whether expressions of one scope are tensor-like."""

    def __init__(
        self,
        qualified_names: QualifiedNames,
        modules: Iterable[str],
        backward_names: Iterable[str],
        helper_output: Callable[[cst.Call], bool] = lambda call: False,
        runs_on_the_cpu: Callable[[cst.Call], bool] = lambda call: False,
        runs_a_weightless_layer: Callable[[cst.Call], bool] = lambda call: False,
    ) -> None:
        self.qualified_names = qualified_names
        self.modules: FrozenSet[str] = frozenset(modules)
        self.helper_output = helper_output
        """Whether a call calls a function of the module that returns a forward output (from the
        semantic model's summaries)."""
        self.runs_on_the_cpu = runs_on_the_cpu
        """Whether a forward call runs a model the scope still holds on the CPU (the semantic
        model's :func:`~gpulint.semantic.cpu_models.runs_on_the_cpu`)."""
        self.runs_a_weightless_layer = runs_a_weightless_layer
        """Whether a call runs a name every binding of which builds a ``torch.nn`` layer without
        weights (``softmax = nn.Softmax(dim=1)``, from the semantic model): its output is computed
        from its input alone, on the input's device."""
        self.backward_names: FrozenSet[str] = frozenset(backward_names)
        self.names: Set[str] = set(self.backward_names)

    def learn(self, name: str) -> bool:
        """Record that ``name`` is bound to a tensor-like value; True if that is news."""
        if name in self.names:
            return False
        self.names.add(name)
        return True

    def binds_tensor(self, name: str, value: cst.BaseExpression, holding: Optional[Set[str]] = None) -> bool:
        """Whether binding ``name`` to ``value`` leaves a tensor-like value bound to it.

        A name the code calls ``.backward()`` on holds a tensor wherever it is bound, unless the
        value visibly is not one (``None``, a literal, ``.item()``, ``float(...)``...)."""
        return self(value, holding) or (name in self.backward_names and not self.releases(value))

    @staticmethod
    def releases(value: cst.BaseExpression) -> bool:
        """Whether ``value`` visibly holds no GPU tensor."""
        if isinstance(value, (cst.BaseNumber, cst.BaseString)):
            return True
        if isinstance(value, cst.Name):
            return value.value in ("None", "True", "False")
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
            return value.func.value in VALUE_BUILTINS
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            return value.func.attr.value in RELEASING_METHODS or (value.func.attr.value == "to" and _moves_to_cpu(value))
        return False

    def is_module(self, node: cst.CSTNode) -> bool:
        return dotted_name(node) in self.modules

    def __call__(self, node: cst.CSTNode, holding: Optional[Set[str]] = None) -> bool:
        """Whether ``node`` is tensor-like, where the names in ``holding`` (by default every name
        ever bound to a tensor-like value in the scope) hold tensors."""
        names = self.names if holding is None else holding
        if isinstance(node, cst.Name):
            return node.value in names
        if isinstance(node, cst.Call):
            return self._call(node, holding)
        if isinstance(node, cst.Attribute):
            if node.attr.value in NON_TENSOR_ATTRIBUTES:
                return False
            if self.is_module(node.value):
                return False
            return self(node.value, holding)
        if isinstance(node, cst.Subscript):
            return self(node.value, holding)
        if isinstance(node, cst.BinaryOperation):
            return self(node.left, holding) or self(node.right, holding)
        if isinstance(node, cst.UnaryOperation):
            return not isinstance(node.operator, cst.Not) and self(node.expression, holding)
        if isinstance(node, cst.Comparison):
            if any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in node.comparisons):
                return False
            return self(node.left, holding) or any(self(target.comparator, holding) for target in node.comparisons)
        if isinstance(node, cst.IfExp):
            return self(node.body, holding) or self(node.orelse, holding)
        if isinstance(node, (cst.List, cst.Tuple)):
            return any(self(element.value, holding) for element in node.elements)
        return False

    def _call(self, node: cst.Call, holding: Optional[Set[str]]) -> bool:
        func = node.func
        if isinstance(func, cst.Name) and func.value in RELEASING_BUILTINS:
            return func.value in ("list", "tuple") and any(self(arg.value, holding) for arg in node.args)
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in RELEASING_METHODS or (method == "to" and _moves_to_cpu(node)):
                return False
            if method in ("cuda", "to"):
                return True
            if self.is_module(func.value):
                return method in MODULE_OUTPUT_METHODS
            if self(func.value, holding):
                return True
        if self.is_module(func) or (isinstance(func, cst.Name) and func.value in (self.names if holding is None else holding)):
            return True
        if self.helper_output(node):
            return True
        qualified = self.qualified_names(func)
        if qualified and qualified <= LOADERS:
            location = _keyword(node, "map_location", 1)
            return location is None or not _names_cpu(location)
        if any(is_torch_tensor_function(q) for q in qualified):
            device = _keyword(node, "device")
            if device is not None:
                return not _names_cpu(device)
            return any(self(arg.value, holding) for arg in node.args)
        return False

    def holds_device_memory(self, node: cst.CSTNode, holding: Set[str], replaced: FrozenSet[str] = frozenset()) -> bool:
        """Whether ``node`` holds memory worth an ``empty_cache()`` call: a module's forward output
        (or a value computed from one, which holds the output's storage or its graph; a layer
        without weights only passes on what its input holds), a loss from a
        criterion, a checkpoint loaded to a named device, a module built and moved to the device, a
        tensor allocated by shape on the device, or a module's weight that the scope then replaces
        (``replaced`` names such attributes: ``layer.weight``) — where ``holding`` names values that
        already do. Token ids, masks, inputs moved to the device, checkpoints loaded wherever they
        were saved from (GPU001 reports those), and a weight its module still holds are not."""
        if isinstance(node, cst.Name):
            return node.value in holding
        if isinstance(node, cst.Attribute):
            if node.attr.value in NON_TENSOR_ATTRIBUTES:
                return False
            if dotted_name(node) in replaced or (node.attr.value == "data" and dotted_name(node.value) in replaced):
                return True
            return not self.is_module(node.value) and self.holds_device_memory(node.value, holding, replaced)
        if isinstance(node, cst.Subscript):
            return not _reads_a_counter(node) and self.holds_device_memory(node.value, holding)
        if isinstance(node, cst.BinaryOperation):
            return self.holds_device_memory(node.left, holding) or self.holds_device_memory(node.right, holding)
        if isinstance(node, (cst.List, cst.Tuple)):
            return any(self.holds_device_memory(element.value, holding) for element in node.elements)
        if isinstance(node, cst.Call):
            return self._call_holds_device_memory(node, holding)
        return False

    def _call_holds_device_memory(self, node: cst.Call, holding: Set[str]) -> bool:
        func = node.func
        qualified = self.qualified_names(func)
        if qualified and qualified <= LOADERS:
            location = _keyword(node, "map_location", 1)
            return location is not None and not _names_cpu(location)
        if any(is_torch_tensor_function(q) for q in qualified):
            device, dtype = _keyword(node, "device"), _keyword(node, "dtype")
            if device is not None and any(q.split(".")[-1] in SHAPE_FACTORIES for q in qualified):
                floating = dtype is None or (dotted_name(dtype) or "").split(".")[-1] in FLOAT_DTYPES
                return floating and not _names_cpu(device)
            return any(self.holds_device_memory(arg.value, holding) for arg in node.args)
        if self.is_module(func) and self.runs_a_weightless_layer(node):
            return any(self.holds_device_memory(arg.value, holding) for arg in node.args)
        if self.is_module(func) or self.helper_output(node):
            return not self.runs_on_the_cpu(node)
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in RELEASING_METHODS or method in INDEX_RESULT_METHODS or (method == "to" and _moves_to_cpu(node)):
                return False
            if method in ("cuda", "to"):
                if self._builds_parameter_free_module(func.value):
                    return False
                if self._makes_a_legacy_tensor(func.value):
                    return self._allocates_floats_by_size(func.value)
                return self._builds_module(func.value) or self.holds_device_memory(func.value, holding)
            if self.is_module(func.value):
                return method in FORWARD_METHODS
            if method == "from_pretrained":
                return _keyword(node, "device_map") is not None
            if method == "get" and _reads_a_counter(node):
                return False
            return self.holds_device_memory(func.value, holding)
        return self.is_module(func) or (dotted_name(func) or "").split(".")[-1].lower().endswith(CRITERION_SUFFIXES)

    def acquires_memory(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` loads, allocates on a named device or builds something anywhere in it —
        a load, a torch function given a ``device``, a module or other object constructed — rather
        than only computing from values (a forward call, arithmetic, indexing, a tensor shaped
        like another, ``torch.ones_like(output)``)."""
        for call in (child for child in subexpressions(node) if isinstance(child, cst.Call)):
            qualified = self.qualified_names(call.func)
            if (qualified and qualified <= LOADERS) or self._builds_module(call):
                return True
            if _keyword(call, "device") is not None and any(is_torch_tensor_function(q) for q in qualified):
                return True
        return False

    def _builds_parameter_free_module(self, node: cst.CSTNode) -> bool:
        """A ``torch.nn`` loss or layer without weights constructed here (``nn.CrossEntropyLoss()``,
        ``nn.MaxPool2d(2)``): moved to the device, it holds nothing there worth freeing (at most a
        loss's class weights)."""
        while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in MODULE_CAST_METHODS:
            node = node.func.value
        if not isinstance(node, cst.Call):
            return False
        names = self.qualified_names(node.func)
        return bool(names) and all(is_loss_module(q) or nn_class_name(q) in PARAMETER_FREE_LAYERS for q in names)

    def _builds_module(self, node: cst.CSTNode) -> bool:
        """A module constructed here (``Net(config)``, ``nn.Linear(...)``, ``Net().half()``): a
        ``torch.nn`` module class, or a capitalised class of the project or another library; a
        capitalised name of torch itself that is no module class (``torch.Tensor(weights)``,
        ``torch.Generator()``) builds none."""
        while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in MODULE_CAST_METHODS:
            node = node.func.value
        if not isinstance(node, cst.Call):
            return False
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "from_pretrained":
            return True
        names = self.qualified_names(node.func)
        if any(is_module_constructor(q) for q in names):
            return True
        from_torch = bool(names) and all(q == TORCH_PACKAGE or q.startswith(f"{TORCH_PACKAGE}.") for q in names)
        return not from_torch and (
            isinstance(node.func, (cst.Name, cst.Attribute)) and (dotted_name(node.func) or "").split(".")[-1][:1].isupper()
        )

    def _makes_a_legacy_tensor(self, node: cst.CSTNode) -> bool:
        """A call of a legacy tensor class (``torch.Tensor(weights)``, ``torch.FloatTensor(2, 3)``)."""
        return isinstance(node, cst.Call) and bool(self.qualified_names(node.func) & LEGACY_TENSOR_CLASSES)

    def _allocates_floats_by_size(self, node: cst.CSTNode) -> bool:
        """Whether a call of a legacy tensor class allocates floating-point elements by size, as a
        shape factory does (``torch.Tensor(64, 3, 224, 224)``, ``torch.FloatTensor(4096)``): a
        floating-point class given sizes (an integer, or two positional arguments or more, none a
        list or tuple) rather than data (``torch.Tensor(weights)``, ``torch.Tensor([0.3, 0.7])``: a
        few numbers)."""
        if not isinstance(node, cst.Call) or not self.qualified_names(node.func) & FLOATING_LEGACY_TENSOR_CLASSES:
            return False
        positional = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
        if not positional or any(isinstance(value, (cst.List, cst.Tuple, cst.ListComp)) for value in positional):
            return False
        return len(positional) > 1 or isinstance(positional[0], cst.Integer)


def _reads_a_counter(node: Union[cst.Subscript, cst.Call]) -> bool:
    """``checkpoint["epoch"]`` or ``checkpoint.get("accuracy", 0)``: an entry a checkpoint keeps a
    counter or a score under (:data:`~gpulint.semantic.torch_api.CHECKPOINT_COUNTER_KEYS`), a Python
    number."""
    if isinstance(node, cst.Subscript):
        key = node.slice[0].slice if len(node.slice) == 1 else None
        value = key.value if isinstance(key, cst.Index) else None
    else:
        value = node.args[0].value if node.args and node.args[0].keyword is None else None
    return isinstance(value, cst.SimpleString) and value.evaluated_value in CHECKPOINT_COUNTER_KEYS
