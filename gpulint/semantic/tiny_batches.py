"""Forward passes of a small network on tiny images.

A course's MNIST test loop: ``for data, target in test_loader: output = model(data)``, where
``test_loader = DataLoader(datasets.MNIST(...), batch_size=64)`` and ``model = Net()`` is a network
whose layers the code spells with numbers. Such a pass is left out when what it may compute is
small: the network holds at most :data:`~gpulint.semantic.model_size.SMALL_NETWORK` elements
(:func:`~gpulint.semantic.model_size.always_at_most`), and a batch's pixels times the sum of its
weighted layers' output widths (:func:`~gpulint.semantic.model_size.widest_output`: each layer
running once, none enlarging its input) is at most :data:`MAX_ELEMENTS`.

Every tensor the call is given must be such a batch (:meth:`_TinyBatches.pixels`): a target of a
``for`` statement over such a loader or dataset (``for data, target in loader``, ``for i, (data,
target) in enumerate(loader)``), the next batch of one (``next(iter(loader))``), an example of such
a dataset (``image, label = test_data[i]``), or any of them moved, cast, reshaped, wrapped in
``Variable`` or indexed, through names every other binding of which is one; or a batch of at most
1,024 vectors the code makes with a shape it spells (``torch.randn(25, 128)``, a sample grid's
latent noise), whose rows are the positions a layer runs at. A loader is a
``DataLoader`` of such a dataset with a ``batch_size`` spelled with numbers (one where it passes
none); a dataset is one of torchvision's datasets of tiny images (``torch_api.TINY_IMAGE_DATASETS``)
whose ``transform`` keeps images as small (``torch_api.SIZE_KEEPING_TRANSFORMS``), or a ``Subset`` of
one. The call is in a loop whose values stay in it (:func:`~gpulint.semantic.confined.stays_inside`:
no batch's outputs kept past it, as ``all_logits.append(out)`` would; a pass whose every output
read cuts it from the graph keeps none, in a loop or not) and in no comprehension
(which may keep every batch's outputs at once), and the module has no star import and calls
nothing that resizes (``F.interpolate``, ``nn.Upsample``).
"""

from __future__ import annotations

import ast
import math
from typing import Callable, Dict, List, Optional, Tuple

from gpulint.semantic.confined import CONTAINER_MUTATORS, stays_inside
from gpulint.semantic.model import SemanticModel
from gpulint.semantic.model_size import SMALL_NETWORK, always_at_most, spelled_value, widest_output
from gpulint.semantic.scopes import COMPREHENSIONS, Binding
from gpulint.semantic.torch_api import (
    CROP_TRANSFORMS, DATA_LOADER, DATA_SUBSET, ROTATION_TRANSFORM, SIZE_ARGUMENT_FACTORIES, SIZE_KEEPING_TRANSFORMS,
    TINY_IMAGE_DATASETS, TORCH_PACKAGE, VARIABLE, resizes_images,
)

MAX_BATCH = 1024
"""The largest batch of tiny images counted: 1,024 CIFAR images are 12 MB in float32."""
MAX_ELEMENTS = 64 * 2 ** 20
"""The most elements a batch's forward pass may compute through layers with weights (pixels times
output widths): 256 MB in float32, an upper bound the pooling and flattening of such networks
keep far from."""
BATCH_KEEPING_METHODS = frozenset({
    "to", "cuda", "cpu", "float", "double", "half", "bfloat16", "long", "int", "type", "view", "view_as", "reshape",
    "flatten", "squeeze", "unsqueeze", "contiguous", "detach", "clone", "permute", "transpose", "t",
})
"""Tensor methods whose result holds no more elements than the tensor they are called on."""
NEXT_METHODS = frozenset({"next", "__next__"})
"""An iterator's methods that give its next batch (``dataiter.next()`` of older torch)."""
MAX_DEPTH = 12
"""How many names and calls deep a batch is followed."""
MAX_STEPS = 2000
"""How many expressions one call's batches are followed through before giving up (not tiny)."""
TRANSFORMS = "torchvision.transforms."


class _GiveUp(Exception):
    """Following the batches took more than :data:`MAX_STEPS` steps."""


def on_tiny_images(model: SemanticModel, call: ast.Call, outputs_cut: bool = False) -> bool:
    """Whether ``call`` runs a small network on tiny images only (see the module's docstring);
    ``outputs_cut``: the caller knows every read of its output cuts it from the graph, so no
    graph is kept past it, in a loop or not (else it must be in a loop that keeps nothing of a
    batch: a pass outside one may hand its output on)."""
    network = call.func
    if not isinstance(network, ast.Name) or call.keywords or not call.args or model.imports.star_modules:
        return False
    if any(isinstance(node, COMPREHENSIONS) for node in model.ancestors(call)) or model.derived(_resizes):
        return False
    facts = model.derived(_TinyFacts)
    width = facts.small_network_width(model.scope_at(network).resolve(network.id))
    if width is None:
        return False
    pixels = [facts.pixels(argument) for argument in call.args]
    if not all(count is not None and count * width <= MAX_ELEMENTS for count in pixels):
        return False
    loop = _innermost_loop(model, call)
    return outputs_cut or (loop is not None and facts.stays_inside(loop))  # outputs kept past their batch pile up


class _TinyFacts:
    """Per module, what the calls share, decided once: each network name's width where it is
    small, each batch name's pixels, each loop's confinement."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self._widths: Dict[Binding, Optional[int]] = {}
        self._pixels: Dict[Binding, Optional[int]] = {}
        self._confined: Dict[int, bool] = {}

    def small_network_width(self, binding: Binding) -> Optional[int]:
        if binding not in self._widths:
            width = widest_output(self.model, binding)
            self._widths[binding] = width if width is not None and always_at_most(self.model, binding, SMALL_NETWORK) else None
        return self._widths[binding]

    def pixels(self, argument: ast.expr) -> Optional[int]:
        """The pixels of a batch given to a forward call (:meth:`_TinyBatches.pixels`), a name's
        decided once."""
        binding = self.model.scope_at(argument).resolve(argument.id) if isinstance(argument, ast.Name) else None
        if binding is not None and binding in self._pixels:
            return self._pixels[binding]
        try:
            count = _TinyBatches(self.model).pixels(argument, frozenset(), 0)
        except _GiveUp:
            count = None
        if binding is not None:
            self._pixels[binding] = count
        return count

    def stays_inside(self, loop: ast.stmt) -> bool:
        if id(loop) not in self._confined:
            self._confined[id(loop)] = stays_inside(self.model, loop)
        return self._confined[id(loop)]


def _innermost_loop(model: SemanticModel, call: ast.Call) -> Optional[ast.stmt]:
    """The innermost loop of the call's own function (or module) around it."""
    for node in model.ancestors(call):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            return node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return None
    return None


def _resizes(model: SemanticModel) -> bool:
    """Whether the module calls anything of torch that resizes (``F.interpolate``, ``nn.Upsample``)."""
    return any(resizes_images(name) for node in model.nodes(ast.Call) for name in model.resolved_names(node.func))


class _TinyBatches:
    """How many pixels the batches of one module's values hold: tiny batches, and the loaders and
    datasets that give them."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self.steps = 0

    def _step(self, depth: int) -> bool:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise _GiveUp
        return depth <= MAX_DEPTH

    def pixels(self, node: ast.expr, following: frozenset, depth: int) -> Optional[int]:
        """The most pixels (per channel) the batch ``node`` holds, where it is a tiny batch, an
        example of a tiny dataset, or a part of one; else None."""
        if not self._step(depth):
            return None
        if isinstance(node, ast.Name):
            return self._every_binding(node, following, depth)
        if isinstance(node, ast.Subscript):
            example = self.dataset(node.value, depth + 1)  # ``test_data[i]``: one example, whatever ``i``
            if example is not None or not _plain_index(node.slice):
                return example  # ``data[torch.arange(256).repeat(100)]`` may repeat what it picks
            return self.pixels(node.value, following, depth + 1)
        if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args):
            return None
        function = node.func
        if isinstance(function, ast.Attribute) and function.attr in BATCH_KEEPING_METHODS:
            return self.pixels(function.value, following, depth + 1)
        if self.model.resolved_names(function) == {VARIABLE} and node.args:
            return self.pixels(node.args[0], following, depth + 1)
        vectors = self._made_vectors(node)
        return vectors if vectors is not None else self._next_batch(node, depth)

    def _made_vectors(self, call: ast.Call) -> Optional[int]:
        """``torch.randn(25, 128)``: a batch of vectors (a sample grid's latent noise) the code
        makes with a shape it spells, two dimensions, the first at most :data:`MAX_BATCH`; the
        positions a layer runs at are its rows."""
        factories = {f"{TORCH_PACKAGE}.{factory}" for factory in SIZE_ARGUMENT_FACTORIES}
        if not self.model.resolved_names(call.func) & factories:
            return None
        dimensions = call.args[0].elts if len(call.args) == 1 and isinstance(call.args[0], (ast.Tuple, ast.List)) else call.args
        sizes = [spelled_value(self.model, dimension) for dimension in dimensions]
        if len(sizes) != 2 or not all(isinstance(size, int) and not isinstance(size, bool) and size > 0 for size in sizes):
            return None
        rows = sizes[0]
        return rows if isinstance(rows, int) and rows <= MAX_BATCH else None

    def _every_binding(self, name: ast.Name, following: frozenset, depth: int) -> Optional[int]:
        """The most pixels any binding of ``name`` gives it, where each is a loop's target over a
        tiny source or an assignment of a tiny batch; one that only moves, casts or reshapes the
        name's own value (``data = data.to(device)``) keeps what the others give, and one at least
        must be of another kind."""
        binding = self._assigned_binding(name)
        if binding is None or binding in following:
            return None
        following = following | {binding}
        counts: List[int] = []
        for store in self.model.uses(binding):
            if isinstance(store.ctx, ast.Load):
                continue
            value = self._bound_value(store)
            if value is not None and self._rebinds_itself(value, binding.name):
                continue
            count = self._binds(store, value, following, depth + 1)
            if count is None:
                return None
            counts.append(count)
        return max(counts) if counts else None

    def _bound_value(self, store: ast.Name) -> Optional[ast.expr]:
        """What an assignment binds ``store`` to: its value, or its element of a tuple display."""
        target, parent = self._binding_statement(store)
        if not (isinstance(parent, ast.Assign) and parent.targets == [target]):
            return None
        value = parent.value
        if target is not store and isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
            parts = [part for part, element in zip(value.elts, target.elts) if element is store]
            return parts[0] if len(value.elts) == len(target.elts) and parts else value
        return value

    def _binds(self, store: ast.Name, value: Optional[ast.expr], following: frozenset, depth: int) -> Optional[int]:
        if value is not None:
            return self.pixels(value, following, depth)
        target, parent = self._binding_statement(store)
        if isinstance(parent, ast.For) and parent.target is target:
            return self.source(parent.iter, depth)
        return None

    def _binding_statement(self, store: ast.Name) -> Tuple[ast.AST, Optional[ast.AST]]:
        """The whole target ``store`` is part of (a tuple of targets, or itself) and what holds it."""
        target: ast.AST = store
        parent = self.model.parent(store)
        while isinstance(parent, (ast.Tuple, ast.List)):
            target, parent = parent, self.model.parent(parent)
        return target, parent

    def _next_batch(self, call: ast.Call, depth: int) -> Optional[int]:
        """``next(iter(loader))``, ``next(batches)`` or ``batches.next()`` where ``batches =
        iter(loader)``: a batch of a tiny source."""
        function = call.func
        if isinstance(function, ast.Attribute) and function.attr in NEXT_METHODS and not call.args:
            return self._iterator(function.value, depth + 1)
        if isinstance(function, ast.Name) and len(call.args) == 1 and self.model.is_builtin(function, {"next"}):
            return self._iterator(call.args[0], depth + 1)
        return None

    def _iterator(self, node: ast.expr, depth: int) -> Optional[int]:
        if not self._step(depth):
            return None
        if isinstance(node, ast.Name):
            return self._assigned(node, lambda value: self._iterator(value, depth + 1))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1 and self.model.is_builtin(node.func, {"iter"}):
            return self.source(node.args[0], depth + 1)
        return None

    def source(self, node: ast.expr, depth: int) -> Optional[int]:
        """The most pixels a batch or an example drawn from ``node`` holds: a tiny loader or
        dataset, or ``enumerate`` of one."""
        if not self._step(depth):
            return None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and self.model.is_builtin(node.func, {"enumerate"}):
            if not node.args or isinstance(node.args[0], ast.Starred):
                return None
            return self.source(node.args[0], depth + 1)
        loaded = self.loader(node, depth)
        return loaded if loaded is not None else self.dataset(node, depth)

    def loader(self, node: ast.expr, depth: int) -> Optional[int]:
        """A ``DataLoader`` of a tiny dataset, in batches of a size the code spells, at most
        :data:`MAX_BATCH`: the pixels of a batch."""
        if not self._step(depth):
            return None
        if isinstance(node, ast.Name):
            return self._assigned(node, lambda value: self.loader(value, depth + 1))
        if not (isinstance(node, ast.Call) and self.model.resolved_names(node.func) == {DATA_LOADER}):
            return None
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg in (None, "batch_sampler", "collate_fn") for k in node.keywords):
            return None  # a batch sampler or a collate function may make batches of any size
        dataset = _argument(node, 0, "dataset")
        batch = _argument(node, 1, "batch_size")
        size = 1 if batch is None else self._spelled_count(batch)
        pixels = self.dataset(dataset, depth + 1) if dataset is not None else None
        if size is None or not 0 < size <= MAX_BATCH or pixels is None:
            return None
        return size * pixels

    def _spelled_count(self, node: ast.expr) -> Optional[int]:
        """A count spelled with numbers, names and arithmetic only (no item or attribute, which code
        may change in place)."""
        if any(isinstance(part, (ast.Subscript, ast.Attribute, ast.Call)) for part in ast.walk(node)):
            return None
        value = spelled_value(self.model, node)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def dataset(self, node: ast.expr, depth: int) -> Optional[int]:
        """One of torchvision's datasets of tiny images whose transform keeps them so, or a
        ``Subset`` of one: the pixels of an image."""
        if not self._step(depth):
            return None
        if isinstance(node, ast.Name):
            return self._assigned(node, lambda value: self.dataset(value, depth + 1))
        if not isinstance(node, ast.Call):
            return None
        names = self.model.resolved_names(node.func)
        if len(names) == 1 and next(iter(names)) in TINY_IMAGE_DATASETS:
            transform = next((k.value for k in node.keywords if k.arg == "transform"), None)
            pixels = TINY_IMAGE_DATASETS[next(iter(names))]
            if any(k.arg is None for k in node.keywords) or len(node.args) > 2 or (
                transform is not None and not self._keeps_size(transform, math.isqrt(pixels), depth + 1)
            ):
                return None  # a transform passed by position or unpacked is not read
            return pixels
        inner = _argument(node, 0, "dataset")
        return self.dataset(inner, depth + 1) if names == {DATA_SUBSET} and inner is not None else None

    def _keeps_size(self, node: ast.expr, side: int, depth: int) -> bool:
        """Whether the transform ``node`` gives images no larger than it is given: ``None``, or
        torchvision's size-keeping transforms, composed, through names bound only to them."""
        if not self._step(depth):
            return False
        if isinstance(node, (ast.Constant, ast.UnaryOp)):
            return True  # no transform, or a transform's numbers (``Normalize((0.5,), (0.5,))``)
        if isinstance(node, ast.Name):
            return self._assigned(node, lambda value: 1 if self._keeps_size(value, side, depth + 1) else None) is not None
        if isinstance(node, (ast.List, ast.Tuple)):
            return all(self._keeps_size(element, side, depth + 1) for element in node.elts)
        if not isinstance(node, ast.Call):
            return False
        names = self.model.resolved_names(node.func)
        if len(names) != 1 or not next(iter(names)).startswith(TRANSFORMS):
            return False
        transform = next(iter(names)).rpartition(".")[2]
        if transform in CROP_TRANSFORMS:
            crop = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "size"), None)
            count = self._spelled_count(crop) if crop is not None else None
            padded = any(k.arg == "pad_if_needed" and not (isinstance(k.value, ast.Constant) and k.value.value is False) for k in node.keywords)
            return count is not None and 0 < count <= side and not padded
        if transform == ROTATION_TRANSFORM:
            return not any(k.arg == "expand" for k in node.keywords) and len(node.args) <= 2
        if transform not in SIZE_KEEPING_TRANSFORMS:
            return False
        return all(
            self._keeps_size(argument, side, depth + 1) for argument in [*node.args, *(k.value for k in node.keywords)]
            if isinstance(argument, (ast.List, ast.Tuple, ast.Call, ast.Name))
        )

    def _assigned(self, name: ast.Name, counts: Callable[[ast.expr], Optional[int]]) -> Optional[int]:
        """The most any value ``name`` is bound to gives, where it is bound only by plain
        assignments (one at least), each of which ``counts``; else None."""
        binding = self._assigned_binding(name)
        if binding is None or self._changed(binding):
            return None
        found: List[int] = []
        for use in self.model.uses(binding):
            if isinstance(use.ctx, ast.Load):
                continue
            statement = self.model.parent(use)
            if not (isinstance(statement, ast.Assign) and statement.targets == [use]):
                return None
            count = counts(statement.value)
            if count is None:
                return None
            found.append(count)
        return max(found) if found else None

    def _rebinds_itself(self, value: ast.expr, name: str) -> bool:
        """``data.to(device)``, ``Variable(data).cuda()``, ``data.view(-1, 784)``: the name's own
        value moved, cast or reshaped (an index too: ``data[:, perm]``)."""
        while True:
            if isinstance(value, ast.Name):
                return value.id == name
            if isinstance(value, ast.Subscript) and _plain_index(value.slice):
                value = value.value
            elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in BATCH_KEEPING_METHODS:
                value = value.func.value
            elif isinstance(value, ast.Call) and self.model.resolved_names(value.func) == {VARIABLE} and value.args:
                value = value.args[0]
            else:
                return False

    def _changed(self, binding: Binding) -> bool:
        """Whether code may change the object a name holds in place: an attribute or item stored
        through it (``test_set.transform = ...``, ``loader.dataset.data = ...``), or a mutator or
        in-place method called on it or on a part of it (``transforms_list.insert(...)``)."""
        for use in self.model.uses(binding):
            if not isinstance(use.ctx, ast.Load):
                continue
            node: ast.AST = use
            parent = self.model.parent(use)
            while isinstance(parent, (ast.Attribute, ast.Subscript)) and parent.value is node:
                if not isinstance(parent.ctx, ast.Load):
                    return True
                call = self.model.parent(parent)
                if isinstance(parent, ast.Attribute) and isinstance(call, ast.Call) and call.func is parent and (
                    parent.attr in CONTAINER_MUTATORS or parent.attr.endswith("_")
                ):
                    return True
                node, parent = parent, call
        return False

    def _assigned_binding(self, name: ast.Name) -> Optional[Binding]:
        """The binding ``name`` reads, where it is bound only by ``Name`` targets: not a parameter,
        a global or nonlocal, an import or a ``def``, nor a class body's."""
        binding = self.model.scope_at(name).resolve(name.id)
        scope = binding.scope
        if self.model.bound_otherwise(binding) or name.id in scope.parameters or name.id in scope.globals | scope.nonlocals or scope.is_class:
            return None
        return binding


def _plain_index(index: ast.expr) -> bool:
    """An index that picks each element at most once: constants and slices."""
    parts = index.elts if isinstance(index, ast.Tuple) else [index]
    return all(
        isinstance(part, (ast.Constant, ast.Slice)) or (isinstance(part, ast.UnaryOp) and isinstance(part.operand, ast.Constant))
        for part in parts
    )


def _argument(call: ast.Call, index: int, keyword: str) -> Optional[ast.expr]:
    """The argument a call passes for a parameter, by position or keyword."""
    passed = next((k.value for k in call.keywords if k.arg == keyword), None)
    if passed is None and index < len(call.args):
        passed = call.args[index]
    return passed

