"""Does a value get used only as a mapping of tensors? A data-flow check behind fix applicability.

A loaded checkpoint that is only handed to ``load_state_dict``, indexed with string keys whose values
go the same way, or iterated through ``.keys()/.items()/.values()``, behaves the same wherever its
tensors live. Any other use (returned, called, moved, stored, unpacked) may depend on the device, and so may any
use of a name bound outside a function body: other modules can import a module-level name.
"""

from __future__ import annotations

from typing import Set, Tuple

import libcst as cst
from libcst import MetadataDependent
from libcst.metadata import FunctionScope, ParentNodeProvider, ScopeProvider

METADATA_DEPENDENCIES = (ParentNodeProvider, ScopeProvider)

_ITERATION_METHODS = frozenset({"keys", "items", "values"})
_STRING_KEY = (cst.SimpleString, cst.ConcatenatedString)


def _is_false(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "False"


class MappingUse:
    """Answers ``only_as_mapping(expr)`` with the metadata of the visitor that asks."""

    def __init__(self, visitor: MetadataDependent) -> None:
        self.visitor = visitor
        self._following: Set[Tuple[int, str]] = set()

    def _parent(self, node: cst.CSTNode) -> cst.CSTNode:
        return self.visitor.get_metadata(ParentNodeProvider, node)

    def only_as_mapping(self, expr: cst.BaseExpression) -> bool:
        parent = self._parent(expr)
        if isinstance(parent, cst.Expr):
            return True
        if isinstance(parent, cst.Arg):
            return self._is_state_dict_argument(parent)
        if isinstance(parent, cst.Subscript) and parent.value is expr:
            return self._is_string_key(parent) and self.only_as_mapping(parent)
        if isinstance(parent, cst.Attribute) and parent.value is expr:
            return self._mapping_method_use(parent)
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is expr:
            return self._binding_used_as_mapping(parent)
        return False

    def _is_state_dict_argument(self, arg: cst.Arg) -> bool:
        """``x.load_state_dict(value)``, which copies each tensor into the device of the parameter
        it belongs to; not with ``assign=True`` (possibly passed positionally or through ``**``),
        which makes the loaded tensors themselves the parameters."""
        call = self._parent(arg)
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "load_state_dict"):
            return False
        positional = [a for a in call.args if a.keyword is None]
        if any(a.star for a in call.args) or len(positional) > 2:
            return False
        if any(a.keyword is not None and a.keyword.value == "assign" and not _is_false(a.value) for a in call.args):
            return False
        if arg.keyword is not None:
            return arg.keyword.value == "state_dict"
        return call.args[0] is arg

    @staticmethod
    def _is_string_key(subscript: cst.Subscript) -> bool:
        key = subscript.slice[0].slice if len(subscript.slice) == 1 else None
        return isinstance(key, cst.Index) and isinstance(key.value, _STRING_KEY)

    def _mapping_method_use(self, attribute: cst.Attribute) -> bool:
        call = self._parent(attribute)
        if not (isinstance(call, cst.Call) and call.func is attribute):
            return False
        method = attribute.attr.value
        if method in _ITERATION_METHODS:
            return not call.args
        if method == "get" and call.args:
            key = call.args[0]
            plain = key.keyword is None and key.star == "" and isinstance(key.value, _STRING_KEY)
            return plain and self.only_as_mapping(call)
        return False

    def _binding_used_as_mapping(self, statement: cst.CSTNode) -> bool:
        targets = statement.targets if isinstance(statement, cst.Assign) else [statement]
        if len(targets) != 1 or not isinstance(targets[0].target, cst.Name):
            return False
        name = targets[0].target
        scope = self.visitor.get_metadata(ScopeProvider, name, None)
        if not isinstance(scope, FunctionScope):
            return False
        assignments = scope.assignments[name.value]
        if not any(assignment.node is name for assignment in assignments):
            return False
        if any(isinstance(self._parent(assignment.node), cst.AugAssign) for assignment in assignments):
            return False
        key = (id(scope), name.value)
        if key in self._following:
            return True
        self._following.add(key)
        for assignment in assignments:
            for access in assignment.references:
                if not self._access_used_as_mapping(access.node):
                    return False
        return True

    def _access_used_as_mapping(self, node: cst.CSTNode) -> bool:
        if not isinstance(node, cst.Name):
            return False
        parent = self._parent(node)
        if isinstance(parent, cst.Element):
            parent = self._parent(self._parent(parent))
        if isinstance(parent, cst.Del):
            return True
        return self.only_as_mapping(node)
