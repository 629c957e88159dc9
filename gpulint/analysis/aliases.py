"""Which names hold the tensors of one object: its alias group, found to a fixed point.

``d = m.state_dict()``, ``sub = m.encoder``, ``x = m``, ``p = list(m.parameters())``,
``{k: v for k, v in d.items()}``, ``md.update(d)``, ``md[k] = v`` and ``lst.append(v)`` all make
the bound (or updated) name hold some of ``m``'s tensors.
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Set

import libcst as cst

from gpulint.semantic.torch_api import TENSOR_METADATA_ATTRIBUTES, TENSOR_SHAPE_METHODS, TENSOR_TO_PYTHON_METHODS

NON_HOLDING_ATTRIBUTES = TENSOR_METADATA_ATTRIBUTES | {"training"}
"""Attributes whose value shares no tensor with the object: a tensor's metadata, a module's ``training``."""
NON_HOLDING_METHODS = TENSOR_SHAPE_METHODS | TENSOR_TO_PYTHON_METHODS | {"keys", "__len__", "__contains__"}
"""Methods whose result shares no tensor with the receiver: a tensor's shape and Python values, and a
mapping's or container's ``keys``, ``len`` and ``in`` (``numpy()`` and ``detach()`` share storage)."""
CONTAINER_FUNCTIONS = frozenset({
    "list", "tuple", "dict", "set", "frozenset", "iter", "sorted", "reversed", "zip", "enumerate", "filter",
    "map", "OrderedDict", "ChainMap",
})
"""Builtins (and ``collections`` types) whose result holds the objects passed in."""
MUTATING_METHODS = frozenset({"update", "append", "extend", "insert", "add", "setdefault", "__setitem__"})


class AliasGroup:
    """The names holding tensors of the objects bound to ``seeds``, over one scope's statements."""

    def __init__(self, seeds: Iterable[str], statements: List[cst.CSTNode]) -> None:
        self.names: Set[str] = set(seeds)
        self.loop_variables: Set[str] = set()
        """Names bound by ``for`` loops over the group: they hold one element at a time, and are
        unbound if the loop never ran, so they are followed but never reported or deleted."""
        changed = True
        while changed:
            changed = False
            for statement in statements:
                for name in self._newly_holding(statement):
                    if name not in self.names:
                        self.names.add(name)
                        changed = True

    def derives(self, node: cst.CSTNode) -> bool:
        """Whether the value of ``node`` may hold tensors of the group."""
        if isinstance(node, cst.Name):
            return node.value in self.names
        if isinstance(node, cst.Attribute):
            return node.attr.value not in NON_HOLDING_ATTRIBUTES and self.derives(node.value)
        if isinstance(node, cst.Subscript):
            return self.derives(node.value)
        if isinstance(node, cst.Call):
            if isinstance(node.func, cst.Attribute):
                return node.func.attr.value not in NON_HOLDING_METHODS and self.derives(node.func.value)
            if isinstance(node.func, cst.Name) and node.func.value in CONTAINER_FUNCTIONS:
                return any(self.derives(arg.value) for arg in node.args)
            return False
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            return self._comprehension_derives(node)
        if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
            return any(self.derives(element.value) for element in node.elements)
        if isinstance(node, cst.Dict):
            return any(isinstance(e, cst.DictElement) and self.derives(e.value) for e in node.elements)
        if isinstance(node, cst.IfExp):
            return self.derives(node.body) or self.derives(node.orelse)
        return False

    def _comprehension_derives(self, node: cst.BaseComp) -> bool:
        """Whether a comprehension's elements hold the group's tensors: its loop variables do when
        they iterate over the group, and then it depends on the element expression."""
        holding = []
        generator: Optional[cst.CompFor] = node.for_in
        while generator is not None:
            if self.derives(generator.iter):
                holding.extend(bound_names(generator.target))
            generator = generator.inner_for_in
        added = [name for name in holding if name not in self.names]
        if not holding:
            return False
        element = node.value if isinstance(node, cst.DictComp) else node.elt if isinstance(
            node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)
        ) else None
        if element is None:
            return False
        self.names.update(added)
        try:
            return self.derives(element)
        finally:
            self.names.difference_update(added)

    def gained_by(self, statement: cst.CSTNode) -> List[str]:
        """Names a statement makes hold the group's tensors without rebinding them:
        ``d.update(x)``, ``lst.append(x)``, ``d[k] = x``."""
        if isinstance(statement, cst.Assign) and self.derives(statement.value):
            return [
                t.target.value.value for t in statement.targets
                if isinstance(t.target, cst.Subscript) and isinstance(t.target.value, cst.Name)
            ]
        if isinstance(statement, cst.Expr) and isinstance(statement.value, cst.Call):
            call = statement.value
            if (
                isinstance(call.func, cst.Attribute) and call.func.attr.value in MUTATING_METHODS
                and isinstance(call.func.value, cst.Name) and any(self.derives(arg.value) for arg in call.args)
            ):
                return [call.func.value.value]
        return []

    def _newly_holding(self, statement: cst.CSTNode) -> List[str]:
        if isinstance(statement, cst.Assign) and self.derives(statement.value):
            return [name for target in statement.targets for name in bound_names(target.target)]
        if isinstance(statement, cst.AnnAssign) and statement.value is not None and self.derives(statement.value):
            return bound_names(statement.target)
        if isinstance(statement, cst.For) and self.derives(statement.iter):
            names = bound_names(statement.target)
            self.loop_variables.update(names)
            return names
        return self.gained_by(statement)


def bound_names(target: cst.CSTNode) -> List[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in bound_names(element.value)]
    if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name):
        return [target.value.value]
    return []
