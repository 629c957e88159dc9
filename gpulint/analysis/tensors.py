"""Conservative tensor-likeness: which expressions evaluate to tensors (or objects holding them).

Unknown means not tensor-like. Evidence is what the code itself shows: values from ``torch``
functions, ``.cuda()``/``.to(...)``, calls of objects the file treats as modules (``model.eval()``,
``model.parameters()``, ``self.net = nn.Linear(...)``), ``.backward()`` called on a name, and
arithmetic, indexing and methods on tensor-like values.
"""

from __future__ import annotations

from typing import Callable, FrozenSet, Iterable, Optional, Set

import libcst as cst
from libcst.helpers import get_full_name_for_node

MODULE_METHODS = frozenset({
    "eval", "train", "parameters", "named_parameters", "buffers", "named_buffers", "zero_grad",
    "state_dict", "load_state_dict", "modules", "named_modules", "children", "named_children",
    "requires_grad_", "register_forward_hook", "register_buffer", "half", "bfloat16",
})
"""Methods whose call shows the receiver is an ``nn.Module``."""

NON_TENSOR_METHODS = frozenset({
    "cpu", "item", "tolist", "numpy", "size", "dim", "numel", "nelement", "element_size", "backward",
    "data_ptr", "is_contiguous", "stride", "storage_offset", "get_device", "__len__", "keys",
    "register_hook", "eval", "train", "zero_grad", "parameters", "named_parameters", "state_dict",
    "load_state_dict", "modules", "children", "named_modules", "named_children", "is_floating_point",
})
"""Methods of tensors (or modules) whose result holds no GPU tensor: releasing rebinds."""

NON_TENSOR_ATTRIBUTES = frozenset({
    "shape", "dtype", "device", "ndim", "is_cuda", "requires_grad", "names", "layout", "training",
    "is_leaf", "grad_fn",
})

NON_TENSOR_TORCH = frozenset({
    "device", "dtype", "no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "manual_seed",
    "seed", "is_tensor", "is_floating_point", "is_complex", "numel", "save", "compile", "get_default_dtype",
    "set_default_dtype", "typename", "Generator", "Size", "finfo", "iinfo", "is_grad_enabled",
    "set_printoptions", "use_deterministic_algorithms", "set_num_threads", "get_num_threads",
    "is_inference_mode_enabled", "set_float32_matmul_precision", "autocast",
})
"""``torch.X`` functions that return no tensor."""

_TENSOR_NAMESPACES = ("torch.nn.functional.", "torch.linalg.", "torch.fft.", "torch.special.")

QualifiedNames = Callable[[cst.CSTNode], Set[str]]


def dotted_name(node: cst.CSTNode) -> Optional[str]:
    """``a.b.c`` for a name or attribute chain, else None."""
    if isinstance(node, (cst.Name, cst.Attribute)):
        return get_full_name_for_node(node)
    return None


def is_torch_tensor_function(qualified: str) -> bool:
    if qualified.startswith(_TENSOR_NAMESPACES) or qualified in ("torch.load", "torch.serialization.load"):
        return True
    parts = qualified.split(".")
    return len(parts) == 2 and parts[0] == "torch" and parts[1] not in NON_TENSOR_TORCH and not parts[1][:1].isupper()


def is_module_constructor(qualified: str) -> bool:
    return qualified.startswith("torch.nn.") and not qualified.startswith(_TENSOR_NAMESPACES) and qualified.split(".")[-1][:1].isupper()


def _moves_to_cpu(call: cst.Call) -> bool:
    if not call.args:
        return False
    target = call.args[0].value
    text = target.evaluated_value if isinstance(target, cst.SimpleString) else None
    if isinstance(target, cst.Call) and target.args and isinstance(target.args[0].value, cst.SimpleString):
        text = target.args[0].value.evaluated_value
    return isinstance(text, str) and text.split(":")[0] == "cpu"


class ModuleEvidence(cst.CSTVisitor):
    """Collects, across a file, the dotted names the code treats as ``nn.Module`` objects."""

    def __init__(self, qualified_names: QualifiedNames) -> None:
        super().__init__()
        self.qualified_names = qualified_names
        self.modules: Set[str] = set()

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in MODULE_METHODS:
            name = dotted_name(node.func.value)
            if name:
                self.modules.add(name)

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._constructs_module(node.value):
            for target in node.targets:
                name = dotted_name(target.target)
                if name:
                    self.modules.add(name)

    def _constructs_module(self, value: cst.BaseExpression) -> bool:
        """``nn.Linear(...)``, or any constructor call moved or switched: ``Net().cuda()``, ``Net().eval()``."""
        moved = False
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in (
            "cuda", "to", "eval", "train", "half", "float", "bfloat16", "requires_grad_",
        ):
            value, moved = value.func.value, True
        if isinstance(value, cst.Call):
            return (moved and isinstance(value.func, (cst.Name, cst.Attribute))) or any(
                is_module_constructor(q) for q in self.qualified_names(value.func)
            )
        return False


class TensorLikeness:
    """Decides whether expressions of one scope are tensor-like."""

    def __init__(self, qualified_names: QualifiedNames, modules: Iterable[str], backward_names: Iterable[str]) -> None:
        self.qualified_names = qualified_names
        self.modules: FrozenSet[str] = frozenset(modules)
        self.backward_names: FrozenSet[str] = frozenset(backward_names)
        self.names: Set[str] = set(self.backward_names)

    def learn(self, name: str) -> bool:
        """Record that ``name`` is bound to a tensor-like value; True if that is news."""
        if name in self.names:
            return False
        self.names.add(name)
        return True

    def binds_tensor(self, name: str, value: cst.BaseExpression) -> bool:
        """Whether binding ``name`` to ``value`` leaves a tensor-like value bound to it.

        A name the code calls ``.backward()`` on holds a tensor wherever it is bound, unless the
        value visibly is not one (``None``, a literal, ``.item()``, ``.cpu()``...)."""
        return self(value) or (name in self.backward_names and not self.releases(value))

    @staticmethod
    def releases(value: cst.BaseExpression) -> bool:
        """Whether ``value`` visibly holds no GPU tensor."""
        if isinstance(value, (cst.BaseNumber, cst.BaseString)):
            return True
        if isinstance(value, cst.Name):
            return value.value in ("None", "True", "False")
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute):
            return value.func.attr.value in NON_TENSOR_METHODS or (value.func.attr.value == "to" and _moves_to_cpu(value))
        return False

    def is_module(self, node: cst.CSTNode) -> bool:
        return dotted_name(node) in self.modules

    def __call__(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Name):
            return node.value in self.names or node.value in self.modules
        if isinstance(node, cst.Call):
            return self._call(node)
        if isinstance(node, cst.Attribute):
            if node.attr.value in NON_TENSOR_ATTRIBUTES:
                return False
            return self(node.value) or dotted_name(node) in self.modules
        if isinstance(node, cst.Subscript):
            return self(node.value)
        if isinstance(node, cst.BinaryOperation):
            return self(node.left) or self(node.right)
        if isinstance(node, cst.UnaryOperation):
            return self(node.expression)
        if isinstance(node, cst.Comparison):
            return self(node.left) or any(self(target.comparator) for target in node.comparisons)
        if isinstance(node, cst.IfExp):
            return self(node.body) or self(node.orelse)
        return False

    def _call(self, node: cst.Call) -> bool:
        func = node.func
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in NON_TENSOR_METHODS or (method == "to" and _moves_to_cpu(node)):
                return False
            if method in ("cuda", "to"):
                return True
            if self(func.value) and not self.is_module(func.value):
                return True
            if method == "forward" and self.is_module(func.value):
                return True
        if self.is_module(func):
            return True
        return any(is_torch_tensor_function(q) or is_module_constructor(q) for q in self.qualified_names(func))
