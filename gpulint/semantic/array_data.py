"""Values the module shows to be array data: parts of a value that reach a consumer of numpy arrays.

``torch.from_numpy(data[3:])``, ``np.hstack((box[0:2] - r, box[0:2] + r))``, ``cv2.filter2D(img, -1, k)``,
``ax.plot(recall, precision.mean(1))`` with ``ax`` from ``plt.subplots()``, and ``x.numpy()`` all raise
for a tensor on an accelerator, so a value that reaches one, as the program runs, holds none there. A
value is followed by binding (:class:`~gpulint.semantic.model.Place`, ``self.<attr>`` by class) through
subscripts, ``.get(...)``, attributes other than a tensor's metadata, and methods that keep a tensor
where it is (``.mean(1)``); a name counts as a part only if every assignment to it assigns a part.
Nothing is followed through ``.cpu()``, ``.to(...)``, calls of functions, or a metadata attribute
(``np.array(x.shape)`` says nothing of ``x``).
"""

from __future__ import annotations

import ast
from functools import cached_property
from typing import Dict, Iterator, List, Optional, Set

from gpulint.semantic import torch_api
from gpulint.semantic.model import Place, SemanticModel

ARRAY_LIBRARIES = ("numpy.", "cv2.", "scipy.", "matplotlib.", "PIL.", "skimage.")
"""Libraries whose functions convert what they are given to numpy arrays."""
NOT_CONVERTING = frozenset({
    "numpy.shape", "numpy.ndim", "numpy.size", "numpy.isscalar", "numpy.iterable", "numpy.result_type",
})
"""numpy functions that read an object without converting it (``np.shape(x)`` reads ``x.shape``)."""
PLOTTING_METHODS = frozenset({
    "plot", "imshow", "scatter", "hist", "bar", "barh", "errorbar", "fill_between", "contour", "contourf",
    "pcolormesh", "semilogx", "semilogy", "loglog", "step", "stem", "matshow", "boxplot", "violinplot",
})
"""Methods of matplotlib's axes and figures that convert their data to numpy arrays."""
MAPPING_READS = frozenset({"get", "pop"})
"""Methods that read a value out of a mapping."""
METADATA_ATTRIBUTES = torch_api.NON_TENSOR_ATTRIBUTES | torch_api.TENSOR_SHAPE_METHODS | {"size", "itemsize", "nbytes"}
"""Attributes whose value describes an array or tensor without holding its data."""
_ASSIGNMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)


class ArrayData:
    """Which values of one module reach a consumer of numpy arrays (build with ``model.derived``)."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model

    def reaches_array_consumer(self, value: ast.expr) -> bool:
        """Whether a part of what ``value`` evaluates to (a call, typically a load) reaches a
        consumer of numpy arrays, through the names and ``self.<attr>`` it is assigned to."""
        parts = self._parts(value)
        return any(self._root(argument) in parts or self._root(argument) is value for argument in self._consumed)

    def _parts(self, value: ast.expr) -> Set[Place]:
        """The places that hold ``value`` or a part of it: every assignment to them assigns one (the
        greatest such set, so ``x = x[0]`` keeps ``x`` a part)."""
        candidates: Set[Place] = set()
        frontier = [place for place, roots in self._roots.items() if any(root is value for root in roots)]
        while frontier:
            place = frontier.pop()
            if place not in candidates:
                candidates.add(place)
                frontier.extend(self._dependents.get(place, ()))
        changed = True
        while changed:
            changed = False
            for held in list(candidates):
                if not all(root is value or root in candidates for root in self._roots[held]):
                    candidates.discard(held)
                    changed = True
        return candidates

    @cached_property
    def _roots(self) -> Dict[Place, List[object]]:
        """For each place, the root of what each of its assignments assigns (see :meth:`_root`)."""
        return {place: [self._root(value) if value is not None else None for value in values] for place, values in self._sites.items()}

    @cached_property
    def _dependents(self) -> Dict[Place, Set[Place]]:
        """For each place, the places assigned a part of it."""
        dependents: Dict[Place, Set[Place]] = {}
        for place, roots in self._roots.items():
            for root in roots:
                if isinstance(root, Place):
                    dependents.setdefault(root, set()).add(place)
        return dependents

    def _root(self, expression: ast.expr) -> object:
        """What ``expression`` is a part of: a place of the module, or the expression it is read out
        of when that is not a place (a call); None when it is computed rather than read."""
        while True:
            if isinstance(expression, (ast.Name, ast.Attribute)):
                place = self.model.place(expression)
                if place is not None and place in self._sites:
                    return place
            if isinstance(expression, ast.Subscript):
                expression = expression.value
            elif isinstance(expression, ast.Attribute) and expression.attr not in METADATA_ATTRIBUTES:
                expression = expression.value
            elif isinstance(expression, ast.Call) and isinstance(expression.func, ast.Attribute) and (
                expression.func.attr in MAPPING_READS or expression.func.attr in torch_api.DEVICE_KEEPING_TENSOR_METHODS
            ):
                expression = expression.func.value
            elif isinstance(expression, (ast.Name, ast.Attribute)):
                return None
            else:
                return expression

    @cached_property
    def _sites(self) -> Dict[Place, List[Optional[ast.expr]]]:
        """For each place, what each of its assignments assigns, or a value it is a part of (an
        element of an unpacked tuple, a loop variable); None for a binding whose value is not an
        expression of the module (a parameter, ``with ... as``, an import, ``+=``)."""
        sites: Dict[Place, List[Optional[ast.expr]]] = {}

        def record(target: ast.expr, value: Optional[ast.expr]) -> None:
            if isinstance(target, (ast.Tuple, ast.List)):
                pairs = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) else None
                for index, element in enumerate(target.elts):
                    record(element, pairs[index] if pairs is not None else value)
                return
            if isinstance(target, ast.Starred):
                record(target.value, value)
                return
            if isinstance(target, (ast.Name, ast.Attribute)):
                place = self.model.place(target)
                if place is not None:
                    sites.setdefault(place, []).append(value)

        for node in self._all(_ASSIGNMENTS):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    record(target, node.value)
            elif isinstance(node, ast.AugAssign):
                record(node.target, None)
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)):
                if node.value is not None:
                    record(node.target, node.value)
        for node in self._all((ast.For, ast.AsyncFor, ast.comprehension)):
            record(node.target, node.iter)  # type: ignore[attr-defined]
        for node in self._all((ast.With, ast.AsyncWith)):
            for item in node.items:  # type: ignore[attr-defined]
                if item.optional_vars is not None:
                    record(item.optional_vars, None)
        for scope in self.model.root.walk():
            for name in scope.parameters:
                sites.setdefault(Place(scope.resolve(name)), []).append(None)
        return sites

    def _all(self, types: tuple) -> Iterator[ast.AST]:
        for node_type in types:
            yield from self.model.nodes(node_type)

    @cached_property
    def _consumed(self) -> List[ast.expr]:
        """Every expression a consumer of numpy arrays converts: the arguments of a numpy, OpenCV,
        SciPy or plotting function (and of ``torch.from_numpy``), of a plotting method of an object a
        matplotlib call returned, and the receiver of ``.numpy()``."""
        consumed: List[ast.expr] = []
        for call in self.model.calls():
            if self._consumes(call):
                for argument in [*call.args, *(keyword.value for keyword in call.keywords)]:
                    consumed.extend(_operands(argument))
            elif isinstance(call.func, ast.Attribute) and call.func.attr in torch_api.FAILS_ON_DEVICE_TENSOR_METHODS:
                consumed.append(call.func.value)
        return consumed

    def _consumes(self, call: ast.Call) -> bool:
        names = self.model.resolved_names(call.func)
        if names and all(
            name in torch_api.ARRAY_ONLY_FUNCTIONS or (name.startswith(ARRAY_LIBRARIES) and name not in NOT_CONVERTING)
            for name in names
        ):
            return True
        if isinstance(call.func, ast.Attribute) and call.func.attr in PLOTTING_METHODS:
            return self._from_matplotlib(call.func.value, set())
        return False

    def _from_matplotlib(self, receiver: ast.expr, seen: Set[Place]) -> bool:
        """Whether ``receiver`` (``axs[0]``, ``fig.axes[1]``) is, or is a part of, what a matplotlib
        call returned."""
        while isinstance(receiver, (ast.Subscript, ast.Attribute)) and self.model.place(receiver) is None:
            receiver = receiver.value
        if isinstance(receiver, ast.Call):
            names = self.model.resolved_names(receiver.func)
            return bool(names) and all(name.startswith("matplotlib.") for name in names)
        place = self.model.place(receiver)
        if place is None or place in seen:
            return False
        values = self._sites.get(place, [])
        return bool(values) and all(
            value is not None and self._from_matplotlib(value, seen | {place}) for value in values
        )


def _operands(expression: ast.expr) -> Iterator[ast.expr]:
    """The values an argument is computed from by arithmetic and displays: ``(a - r, b + r)`` gives
    ``a``, ``r``, ``b`` and ``r``."""
    if isinstance(expression, (ast.Tuple, ast.List)):
        for element in expression.elts:
            yield from _operands(element)
    elif isinstance(expression, ast.Starred):
        yield from _operands(expression.value)
    elif isinstance(expression, ast.BinOp):
        yield from _operands(expression.left)
        yield from _operands(expression.right)
    elif isinstance(expression, ast.UnaryOp):
        yield from _operands(expression.operand)
    else:
        yield expression

