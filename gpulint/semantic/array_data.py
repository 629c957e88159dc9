"""Values the module shows to be numpy arrays: parts of a value that reach a consumer that takes
numpy arrays and never tensors.

``torch.from_numpy(data[3:, :-1])``, ``cv2.filter2D(image, -1, kernels[k])`` and
``labels["classes"].astype(int)`` raise for any tensor, on the CPU or not, so a value that reaches
one, as the program runs, is no tensor: a payload read this way is array data. (A consumer that takes
CPU tensors too, such as ``np.stack``, matplotlib or ``.numpy()``, shows only that the program needs
the value on the CPU, which for a loaded tensor rests on where it was saved.) A value is followed by
binding (:class:`~gpulint.semantic.model.Place`, ``self.<attr>`` by class) through subscripts,
``.get(...)``, attributes other than a tensor's metadata, methods that keep a tensor where it is
(``.mean(1)``), and arithmetic in the consumer's arguments; a name counts as a part only if every
assignment to it assigns a part. Nothing is followed through ``.cpu()``, ``.to(...)``, calls of
functions, or a metadata attribute (``x.shape`` says nothing of ``x``).
"""

from __future__ import annotations

import ast
from functools import cached_property
from typing import Dict, Iterator, List, Optional, Set

from gpulint.semantic import torch_api
from gpulint.semantic.model import Place, SemanticModel

ARRAY_ONLY_LIBRARIES = ("cv2.",)
"""Libraries whose functions take numpy arrays and reject tensors (OpenCV)."""
MAPPING_READS = frozenset({"get", "pop"})
"""Methods that read a value out of a mapping."""
METADATA_ATTRIBUTES = torch_api.NON_TENSOR_ATTRIBUTES | torch_api.TENSOR_SHAPE_METHODS | {"size", "itemsize", "nbytes"}
"""Attributes whose value describes an array or tensor without holding its data."""
_ASSIGNMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)


class ArrayData:
    """Which values of one module reach a consumer that takes only numpy arrays (build with
    ``model.derived``)."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model

    def reaches_array_consumer(self, value: ast.expr) -> bool:
        """Whether a part of what ``value`` evaluates to (a call, typically a load) reaches a
        consumer that takes only numpy arrays, through the names and ``self.<attr>`` it is
        assigned to."""
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
        """Every expression a consumer that rejects tensors is given: the arguments of
        ``torch.from_numpy`` and of OpenCV's functions (and what they are computed from by arithmetic),
        and the receiver of a method tensors lack (``.astype``)."""
        consumed: List[ast.expr] = []
        for call in self.model.calls():
            names = self.model.resolved_names(call.func)
            if names and all(n in torch_api.ARRAY_ONLY_FUNCTIONS or n.startswith(ARRAY_ONLY_LIBRARIES) for n in names):
                for argument in [*call.args, *(keyword.value for keyword in call.keywords)]:
                    consumed.extend(_operands(argument))
            elif isinstance(call.func, ast.Attribute) and call.func.attr in torch_api.ARRAY_ONLY_METHODS:
                consumed.append(call.func.value)
        return consumed


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

