"""Payloads the module shows to hold no tensor: every use of them is one that only numpy arrays, or
only strings, allow.

``torch.from_numpy(data[3:, :-1])`` and ``labels["classes"].astype(int)`` raise for anything but a
numpy array (a tensor, on the CPU or not, a number, a string), so a value that reaches one, as the
program runs, is an array; so is one written into a slice of a numpy array of numbers the module
makes (``self.obses[start:end] = payload[0]`` where ``self.obses = np.empty(...)``), which converts
it to numpy and raises for a tensor on an accelerator. A string's own methods (``caption.lower()``,
``caption.split(" ")``: a tensor's ``split`` needs a size) raise for a tensor and an array alike, so
a value they are called on is text. A payload counts as holding no tensor only when
every use of it reaches one (a checkpoint with one numpy entry beside its state dict does not): the
value is followed by binding
(:class:`~gpulint.semantic.model.Place`, ``self.<attr>`` by class) through subscripts, ``.get(...)``,
``.values()``, attributes other than a tensor's metadata, methods that keep a tensor where it is
(``.mean(1)``), copies into a list (``list(obj.values())[0]``), assignments to names whose every
assignment assigns a part, and loops over it, where a counted or paired loop (``for j, (frame,
feature) in enumerate(video.items())``) binds only the element a part (the count and the key are
none); ``len(...)`` reads only a length, and a tensor's or an array's description (``.shape``,
``.dtype``, ``.size(0)``) only that, so neither counts; any other use
(passed to a function, written into, returned) ends the case. Consumers that take CPU tensors too
(numpy's functions, matplotlib, ``.numpy()``) or other values too (OpenCV's functions take numbers
and strings) are no such sign.
"""

from __future__ import annotations

import ast
from functools import cached_property
from typing import Dict, Iterator, List, Optional, Set, Tuple, Union

from gpulint.semantic import torch_api
from gpulint.semantic.model import Place, SemanticModel

MAPPING_READS = frozenset({"get", "pop", "values"})
"""Methods that read a value, or all of them, out of a mapping."""
PAIRS_METHOD = "items"
"""The mapping method whose pairs hold a key and a value: a loop over it binds the value a part."""
COUNTER = "enumerate"
"""The builtin whose pairs hold a count and an element: a loop over it binds the element a part."""
COPIES = frozenset({"list", "tuple"})
"""Builtins that make a sequence of the elements they are given, as they are."""
LENGTH = "len"
"""A builtin that reads only how many elements a value holds."""
METADATA_ATTRIBUTES = torch_api.NON_TENSOR_ATTRIBUTES | torch_api.TENSOR_SHAPE_METHODS | {"size", "itemsize", "nbytes"}
"""Attributes whose value describes an array or tensor without holding its data."""
ARRAY_ONLY_FUNCTION_WORDS = frozenset(name.rpartition(".")[2] for name in torch_api.ARRAY_ONLY_FUNCTIONS)
"""The last word of each function that takes only numpy arrays: its name or the import that binds it
spells it (``from_numpy``)."""
CONSUMING_METHODS = torch_api.ARRAY_ONLY_METHODS | torch_api.TEXT_ONLY_METHODS | {torch_api.TEXT_SPLIT}
"""Methods one of whose calls may show that their value is no tensor."""
_ASSIGNMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)


class ArrayData:
    """Which values of one module reach a consumer that takes only numpy arrays (build with
    ``model.derived``)."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model

    def is_array_data(self, value: ast.expr) -> bool:
        """Whether every use of what ``value`` evaluates to (a load, typically), through the names
        and ``self.<attr>`` it is assigned to, is one that only numpy arrays allow (and there is one)."""
        if not self._consumers:
            return False
        parts = self._parts(value)
        occurrences: List[ast.expr] = [value, *(node for place in parts for node in self._occurrences.get(place, ()))]
        consumed = False
        for node in occurrences:
            use = self._use(self._outermost_part(node), parts)
            if use is None:
                return False
            consumed = consumed or use
        return consumed

    @cached_property
    def _consumers(self) -> bool:
        """Whether the module has a use that only numpy arrays allow at all (most have none; every
        such use spells one of the words in the source, or writes into an array the module makes)."""
        if self._numpy_arrays:
            return True
        if not any(word in self.model.source for word in (*CONSUMING_METHODS, *ARRAY_ONLY_FUNCTION_WORDS)):
            return False
        return any(attribute.attr in CONSUMING_METHODS for attribute in self.model.nodes(ast.Attribute)) or any(
            self.model.qualified_names(call.func) & torch_api.ARRAY_ONLY_FUNCTIONS for call in self.model.calls()
        )

    @cached_property
    def _numpy_arrays(self) -> Set[Place]:
        """Places every assignment of which makes a new numpy array of numbers (``self.obses =
        np.empty((capacity, *shape))``, no ``dtype=object``): a value written into a slice of one
        becomes numpy data."""
        if not any(word in self.model.source for word in ("numpy", "np.")):
            return set()
        return {
            place for place, values in self._sites.items()
            if values and all(isinstance(value, ast.Call) and self._makes_a_numeric_array(value) for value in values)
        }

    def _makes_a_numeric_array(self, call: ast.Call) -> bool:
        """A numpy constructor's call whose ``dtype`` is not ``object`` (an object array stores a
        tensor as it is, on whatever device)."""
        names = self.model.resolved_names(call.func)
        if not names or not names <= torch_api.NUMPY_ARRAY_CONSTRUCTORS:
            return False
        dtype = next((keyword.value for keyword in call.keywords if keyword.arg == "dtype"), None)
        if dtype is None:
            return True
        if isinstance(dtype, ast.Constant):
            return isinstance(dtype.value, str) and not dtype.value.lstrip("|").lower().startswith("o")
        return not (self.model.is_builtin(dtype, {"object"}) or "numpy.object_" in self.model.resolved_names(dtype))

    def _outermost_part(self, node: ast.expr) -> ast.expr:
        """The largest expression around ``node`` that reads a part of it (``data[0].mean(1)``,
        ``list(frames.values())[0]``)."""
        while True:
            parent = self.model.parent(node)
            if isinstance(parent, ast.Subscript) and parent.value is node:
                node = parent
            elif isinstance(parent, ast.Call) and parent.args == [node] and not parent.keywords and self.model.is_builtin(
                parent.func, COPIES
            ):
                node = parent
            elif isinstance(parent, ast.Attribute) and parent.value is node and parent.attr not in METADATA_ATTRIBUTES:
                call = self.model.parent(parent)
                if parent.attr in torch_api.ARRAY_ONLY_METHODS:
                    return node
                if isinstance(call, ast.Call) and call.func is parent and (
                    parent.attr in MAPPING_READS or parent.attr in torch_api.DEVICE_KEEPING_TENSOR_METHODS
                ):
                    node = call
                elif isinstance(call, ast.Call) and call.func is parent:
                    return node
                else:
                    node = parent
            else:
                return node

    def _use(self, part: ast.expr, parts: Set[Place]) -> Optional[bool]:
        """What the program does with ``part``: True, a use only numpy arrays allow; False, it
        assigns or iterates it into a part; None, anything else."""
        parent = self.model.parent(part)
        if isinstance(parent, ast.Call) and parent.args == [part] and not parent.keywords and self.model.is_builtin(
            parent.func, {LENGTH}
        ) or (isinstance(parent, ast.Attribute) and parent.value is part and parent.attr in METADATA_ATTRIBUTES):
            return False
        iterated: ast.expr = part
        while True:
            around = self.model.parent(iterated)
            if isinstance(around, ast.Attribute) and around.attr == PAIRS_METHOD:
                around = self.model.parent(around)
            if not (isinstance(around, ast.Call) and self._pairs_of(around) is iterated):
                break
            iterated = around
        loop = self.model.parent(iterated)
        if isinstance(loop, (ast.For, ast.AsyncFor, ast.comprehension)) and loop.iter is iterated:
            target, _, _ = self._unpaired(loop.target, iterated)
            return False if self.model.place(target) in parts else None
        if isinstance(parent, ast.Call) and parent.args == [part] and not parent.keywords:
            names = self.model.resolved_names(parent.func)
            return True if names and names <= torch_api.ARRAY_ONLY_FUNCTIONS else None
        if isinstance(parent, ast.Attribute) and parent.value is part and (
            parent.attr in torch_api.ARRAY_ONLY_METHODS or self._called_as_text(parent)
        ):
            return True
        if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is part:
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            if all(
                isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Slice)
                and self.model.place(target.value) in self._numpy_arrays
                for target in targets
            ):
                return True
            return False if all(self.model.place(target) in parts for target in targets) else None
        return None

    def _called_as_text(self, method: ast.Attribute) -> bool:
        """Whether ``method`` is called as only a string allows: one of its own methods
        (``caption.strip()``), or ``split`` with no argument or a string (``caption.split(" ")``)."""
        call = self.model.parent(method)
        if not (isinstance(call, ast.Call) and call.func is method):
            return False
        if method.attr in torch_api.TEXT_ONLY_METHODS:
            return True
        if method.attr != torch_api.TEXT_SPLIT or call.keywords:
            return False
        return not call.args or (isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str))

    def _pairs_of(self, call: ast.Call) -> Optional[ast.expr]:
        """What ``enumerate(x)`` counts or ``x.items()`` pairs with its keys: ``x``; None for any other call."""
        if isinstance(call.func, ast.Attribute) and call.func.attr == PAIRS_METHOD and not call.args and not call.keywords:
            return call.func.value
        if len(call.args) == 1 and not call.keywords and self.model.is_builtin(call.func, {COUNTER}):
            return call.args[0]
        return None

    def _unpaired(self, target: ast.expr, iterated: ast.expr) -> Tuple[ast.expr, ast.expr, List[ast.expr]]:
        """A loop's target and what it iterates, with ``enumerate(...)`` and ``.items()`` taken off
        while the target unpacks their pairs (``for i, (key, frame) in enumerate(video.items())``:
        ``frame`` and ``video``), and the counts and keys bound beside the element (``i``, ``key``)."""
        beside: List[ast.expr] = []
        while isinstance(iterated, ast.Call) and isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2:
            inner = self._pairs_of(iterated)
            if inner is None:
                break
            beside.append(target.elts[0])
            target, iterated = target.elts[1], inner
        return target, iterated, beside

    @cached_property
    def _occurrences(self) -> Dict[Place, List[ast.expr]]:
        """Where the module reads each place (names and attribute chains in a load context)."""
        found: Dict[Place, List[ast.expr]] = {}
        names: List[Union[ast.Name, ast.Attribute]] = [*self.model.nodes(ast.Name), *self.model.nodes(ast.Attribute)]
        for node in names:
            if isinstance(node.ctx, ast.Load):
                place = self.model.place(node)
                if place is not None and place in self._sites:
                    found.setdefault(place, []).append(node)
        return found

    def _parts(self, value: ast.expr) -> Set[Place]:
        """The places that hold ``value`` or a part of it: every assignment to them assigns one (the
        greatest such set, so ``x = x[0]`` keeps ``x`` a part)."""
        same = self._alternatives(value)
        candidates: Set[Place] = set()
        frontier = [place for place, roots in self._roots.items() if any(root in same for root in roots)]
        while frontier:
            place = frontier.pop()
            if place not in candidates:
                candidates.add(place)
                frontier.extend(self._dependents.get(place, ()))
        changed = True
        while changed:
            changed = False
            for held in list(candidates):
                if not all(root in same or root in candidates for root in self._roots[held]):
                    candidates.discard(held)
                    changed = True
        return candidates

    def _alternatives(self, value: ast.expr) -> List[object]:
        """``value`` and what the other branch of the ``if`` around its assignment assigns the same
        name by the same call instead (``if train: cap = torch.load(a)`` ``else: cap = torch.load(b)``):
        every later read of the name reads one of them, so they are followed as one value."""
        statement = self.model.parent(value)
        if not (
            isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name)
            and isinstance(value, ast.Call)
        ):
            return [value]
        branches = self.model.parent(statement)
        if not isinstance(branches, ast.If):
            return [value]
        other = branches.orelse if statement in branches.body else branches.body
        calling = self.model.resolved_names(value.func)
        return [value, *(
            alternative.value for alternative in other
            if isinstance(alternative, ast.Assign) and len(alternative.targets) == 1
            and isinstance(alternative.targets[0], ast.Name) and alternative.targets[0].id == statement.targets[0].id
            and isinstance(alternative.value, ast.Call) and calling and self.model.resolved_names(alternative.value.func) == calling
        )]

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
            elif isinstance(expression, ast.Call) and len(expression.args) == 1 and not expression.keywords and (
                self.model.is_builtin(expression.func, COPIES)
            ):
                expression = expression.args[0]
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
            target, iterated, beside = self._unpaired(node.target, node.iter)  # type: ignore[attr-defined]
            for count_or_key in beside:
                record(count_or_key, None)
            record(target, iterated)
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
