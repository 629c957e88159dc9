"""Forward passes of a small network on tiny images.

A course's MNIST test loop: ``for data, target in test_loader: output = model(data)``, where
``test_loader = DataLoader(datasets.MNIST(...), batch_size=64)`` and ``model = Net()`` is a network
whose layers the code spells with numbers, at most
:data:`~gpulint.semantic.model_size.SMALL_NETWORK` elements (:func:`~gpulint.semantic.model_size.always_at_most`).
Images of at most 32 x 32 pixels, at most :data:`MAX_BATCH` of them, through such a network: the
graph a forward pass keeps is a few megabytes, freed when the next batch takes its place.

Every tensor the call is given must be such a batch (:meth:`_TinyBatches.tiny`): a target of a
``for`` loop over such a loader or dataset (``for data, target in loader``, ``for i, (data,
target) in enumerate(loader)``), the next batch of one (``next(iter(loader))``), an example of
such a dataset (``image, label = test_data[i]``), or any of them moved, cast, reshaped, wrapped in
``Variable`` or indexed, through names every binding of which is one. A loader is a
``DataLoader`` of such a dataset with a ``batch_size`` the code spells (one where it passes none);
a dataset is one of torchvision's datasets of tiny images (``torch_api.TINY_IMAGE_DATASETS``), or
a ``Subset`` of one. The module may resize no image anywhere (``transforms.Resize``,
``F.interpolate``, ``nn.Upsample``: :func:`~gpulint.semantic.torch_api.resizes_images`).
"""

from __future__ import annotations

import ast
from typing import Callable, FrozenSet, List, Optional

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.scopes import Binding
from gpulint.semantic.model_size import SMALL_NETWORK, always_at_most, spelled_value
from gpulint.semantic.torch_api import (
    DATA_LOADER, DATA_SUBSET, TINY_IMAGE_DATASETS, VARIABLE, resizes_images,
)

MAX_BATCH = 1024
"""The largest batch of tiny images counted: 1,024 CIFAR images are 12 MB in float32."""
BATCH_KEEPING_METHODS = frozenset({
    "to", "cuda", "cpu", "float", "double", "half", "bfloat16", "long", "int", "type", "view", "view_as", "reshape",
    "flatten", "squeeze", "unsqueeze", "contiguous", "detach", "clone", "permute", "transpose", "t",
})
"""Tensor methods whose result holds no more elements than the tensor they are called on."""
NEXT_METHODS = frozenset({"next", "__next__"})
"""An iterator's methods that give its next batch (``dataiter.next()`` of older torch)."""
MAX_DEPTH = 12
"""How many names and calls deep a batch is followed."""


def on_tiny_images(model: SemanticModel, call: ast.Call) -> bool:
    """Whether ``call`` runs a small network on tiny images only (see the module's docstring)."""
    network = call.func
    if not isinstance(network, ast.Name) or call.keywords or not call.args or _TinyBatches.resizing(model):
        return False
    if not always_at_most(model, model.scope_at(network).resolve(network.id), SMALL_NETWORK):
        return False
    batches = _TinyBatches(model)
    return all(batches.tiny(argument, frozenset(), 0) for argument in call.args)


class _TinyBatches:
    """What one module's values are: tiny batches, and the loaders and datasets that give them."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model

    @staticmethod
    def resizing(model: SemanticModel) -> bool:
        return any(
            resizes_images(name) for node in model.nodes(ast.Call) for name in model.resolved_names(node.func)
        )

    def tiny(self, node: ast.expr, following: FrozenSet[Binding], depth: int) -> bool:
        """Whether ``node`` holds a tiny batch, an example of a tiny dataset, or a part of one."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(node, ast.Name):
            return self._every_binding(node, following, depth)
        if isinstance(node, ast.Subscript):
            return self.tiny(node.value, following, depth + 1) or self.dataset(node.value, following, depth + 1)
        if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args):
            return False
        function = node.func
        if isinstance(function, ast.Attribute) and function.attr in BATCH_KEEPING_METHODS:
            return self.tiny(function.value, following, depth + 1)
        if self.model.resolved_names(function) == {VARIABLE} and node.args:
            return self.tiny(node.args[0], following, depth + 1)
        return self._next_batch(node, following, depth)

    def _every_binding(self, name: ast.Name, following: FrozenSet[Binding], depth: int) -> bool:
        """Whether every binding of ``name`` (one at least) gives it a tiny batch or a part of one:
        a loop's target over a tiny source, or an assignment of one. A binding met again while
        following its own (``data = data.to(device)``) adds nothing."""
        binding = self._assigned_binding(name)
        if binding is None:
            return False
        if binding in following:
            return True
        following = following | {binding}
        stores = [use for use in self.model.uses(binding) if not isinstance(use.ctx, ast.Load)]
        return bool(stores) and all(self._binds_tiny(store, following, depth + 1) for store in stores)

    def _binds_tiny(self, store: ast.Name, following: FrozenSet[Binding], depth: int) -> bool:
        target: ast.AST = store
        parent = self.model.parent(store)
        while isinstance(parent, (ast.Tuple, ast.List)):
            target, parent = parent, self.model.parent(parent)
        if isinstance(parent, (ast.For, ast.comprehension)) and parent.target is target:
            return self.source(parent.iter, following, depth)
        if isinstance(parent, ast.Assign) and parent.targets == [target]:
            value = parent.value
            if target is not store and isinstance(value, (ast.Tuple, ast.List)) and isinstance(target, (ast.Tuple, ast.List)):
                parts = [part for part, element in zip(value.elts, target.elts) if element is store]
                if len(value.elts) == len(target.elts) and parts:
                    return self.tiny(parts[0], following, depth)
            return self.tiny(value, following, depth)
        return False

    def _next_batch(self, call: ast.Call, following: FrozenSet[Binding], depth: int) -> bool:
        """``next(iter(loader))``, ``next(batches)`` or ``batches.next()`` where ``batches =
        iter(loader)``: a batch of a tiny source."""
        function = call.func
        if isinstance(function, ast.Attribute) and function.attr in NEXT_METHODS and not call.args:
            return self._iterator(function.value, following, depth + 1)
        if isinstance(function, ast.Name) and len(call.args) == 1 and self.model.is_builtin(function, {"next"}):
            return self._iterator(call.args[0], following, depth + 1)
        return False

    def _iterator(self, node: ast.expr, following: FrozenSet[Binding], depth: int) -> bool:
        if isinstance(node, ast.Name):
            return self._assigned(node, lambda value: self._iterator(value, following, depth + 1))
        return (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1
            and self.model.is_builtin(node.func, {"iter"}) and self.source(node.args[0], following, depth + 1)
        )

    def source(self, node: ast.expr, following: FrozenSet[Binding], depth: int) -> bool:
        """Whether iterating ``node`` gives tiny batches or examples: a tiny loader or dataset, or
        ``enumerate`` of one."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and self.model.is_builtin(node.func, {"enumerate"}):
            return len(node.args) >= 1 and not isinstance(node.args[0], ast.Starred) and self.source(node.args[0], following, depth + 1)
        return self.loader(node, following, depth) or self.dataset(node, following, depth)

    def loader(self, node: ast.expr, following: FrozenSet[Binding], depth: int) -> bool:
        """A ``DataLoader`` of a tiny dataset, in batches of a size the code spells, at most
        :data:`MAX_BATCH`."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(node, ast.Name):
            return self._assigned(node, lambda value: self.loader(value, following, depth + 1))
        if not (isinstance(node, ast.Call) and self.model.resolved_names(node.func) == {DATA_LOADER}):
            return False
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None or k.arg == "batch_sampler" for k in node.keywords):
            return False
        dataset = _argument(node, 0, "dataset")
        batch = _argument(node, 1, "batch_size")
        size = 1 if batch is None else spelled_value(self.model, batch)
        return (
            dataset is not None and isinstance(size, int) and not isinstance(size, bool) and 0 < size <= MAX_BATCH
            and self.dataset(dataset, following, depth + 1)
        )

    def dataset(self, node: ast.expr, following: FrozenSet[Binding], depth: int) -> bool:
        """One of torchvision's datasets of tiny images, or a ``Subset`` of one."""
        if depth > MAX_DEPTH:
            return False
        if isinstance(node, ast.Name):
            return self._assigned(node, lambda value: self.dataset(value, following, depth + 1))
        if not isinstance(node, ast.Call):
            return False
        names = self.model.resolved_names(node.func)
        if len(names) == 1 and next(iter(names)) in TINY_IMAGE_DATASETS:
            return True
        inner = _argument(node, 0, "dataset")
        return names == {DATA_SUBSET} and inner is not None and self.dataset(inner, following, depth + 1)

    def _assigned(self, name: ast.Name, counts: Callable[[ast.expr], bool]) -> bool:
        """Whether ``name`` is bound only by plain assignments (one at least), each of a value that
        ``counts``."""
        values = self._assigned_values(name)
        return values is not None and all(counts(value) for value in values)

    def _assigned_values(self, name: ast.Name) -> Optional[List[ast.expr]]:
        binding = self._assigned_binding(name)
        if binding is None:
            return None
        values: List[ast.expr] = []
        for use in self.model.uses(binding):
            if isinstance(use.ctx, ast.Load):
                continue
            statement = self.model.parent(use)
            if not (isinstance(statement, ast.Assign) and statement.targets == [use]):
                return None
            values.append(statement.value)
        return values or None


    def _assigned_binding(self, name: ast.Name) -> Optional[Binding]:
        """The binding ``name`` reads, where it is bound only by ``Name`` targets: not a parameter,
        a global or nonlocal, an import or a ``def``, nor a class body's."""
        binding = self.model.scope_at(name).resolve(name.id)
        scope = binding.scope
        if self.model.bound_otherwise(binding) or name.id in scope.parameters or name.id in scope.globals | scope.nonlocals or scope.is_class:
            return None
        return binding


def _argument(call: ast.Call, index: int, keyword: str) -> Optional[ast.expr]:
    """The argument a call passes for a parameter, by position or keyword."""
    passed = next((k.value for k in call.keywords if k.arg == keyword), None)
    if passed is None and index < len(call.args):
        passed = call.args[index]
    return passed
