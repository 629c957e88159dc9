"""Does a value get used only as a mapping of tensors? A data-flow check behind fix applicability.

A loaded checkpoint that is only handed to ``load_state_dict``, indexed with string keys whose values
go the same way, iterated through ``.keys()``, or rebuilt by a dict comprehension over ``.items()``
whose values go the same way, behaves the same wherever its tensors live. Any other use (returned,
called, moved, stored, unpacked) may depend on the device, and so may any use of a module-level
name that other modules may import (see :mod:`gpulint.semantic.module_bindings`).
"""

from __future__ import annotations

from typing import Optional, Sequence, Set, Tuple, Union

import libcst as cst
from libcst import MetadataDependent
from libcst.metadata import Assignment, FunctionScope, GlobalScope, ParentNodeProvider, ScopeProvider

from gpulint.semantic.module_bindings import may_be_imported

METADATA_DEPENDENCIES = (ParentNodeProvider, ScopeProvider)

TENSOR_METADATA = frozenset({"shape", "dtype", "ndim", "size", "dim", "numel"})
"""What a comprehension's filter may read of a value without its device mattering."""
_STRING_KEY = (cst.SimpleString, cst.ConcatenatedString)


def _is_false(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "False"


class MappingUse:
    """Answers ``only_as_mapping(expr)`` with the metadata of the visitor that asks, for the file
    ``path`` whose source and module these are."""

    def __init__(self, visitor: MetadataDependent, path: str, source: str, module: cst.Module) -> None:
        self.visitor = visitor
        self.path, self.source, self.module = path, source, module
        self._following: Set[Tuple[int, str]] = set()
        self.importable: Optional[str] = None
        """Set when the answer is no because the value is bound to this importable module-level name."""

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
        if method == "keys":
            return not call.args
        if method == "items" and not call.args:
            return self._rebuilt_as_mapping(call)
        if method == "get" and call.args:
            key = call.args[0]
            plain = key.keyword is None and key.star == "" and isinstance(key.value, _STRING_KEY)
            return plain and self.only_as_mapping(call)
        return False

    def _rebuilt_as_mapping(self, items: cst.Call) -> bool:
        """``{rename(k): v for k, v in state.items() if ...}`` used as a mapping in turn: each value
        goes into the new mapping untouched, and the filter reads at most its shape or dtype. A
        loop or any other use of the values (``v.numpy()``, ``param.add_(v)``) depends on the device."""
        comp_for = self._parent(items)
        comprehension = self._parent(comp_for) if isinstance(comp_for, cst.CompFor) else None
        if not (isinstance(comprehension, cst.DictComp) and comprehension.for_in is comp_for and comp_for.iter is items):
            return False
        target = comp_for.target
        if comp_for.inner_for_in is not None or not (isinstance(target, cst.Tuple) and len(target.elements) == 2):
            return False
        value = target.elements[1].value
        if not (isinstance(value, cst.Name) and isinstance(comprehension.value, cst.Name) and comprehension.value.value == value.value):
            return False
        if _reads_name(comprehension.key, value.value):
            return False
        if any(_reads_name(condition.test, value.value, allowed=TENSOR_METADATA) for condition in comp_for.ifs):
            return False
        return self.only_as_mapping(comprehension)

    def _binding_used_as_mapping(self, statement: Union[cst.Assign, cst.AnnAssign]) -> bool:
        targets: Sequence[Union[cst.AssignTarget, cst.AnnAssign]] = (
            statement.targets if isinstance(statement, cst.Assign) else [statement]
        )
        if len(targets) != 1 or not isinstance(targets[0].target, cst.Name):
            return False
        name = targets[0].target
        scope = self.visitor.get_metadata(ScopeProvider, name, None)
        if not isinstance(scope, (FunctionScope, GlobalScope)):
            return False
        assignments = scope.assignments[name.value]
        nodes = [assignment.node for assignment in assignments if isinstance(assignment, Assignment)]
        if not any(node is name for node in nodes):
            return False
        if any(isinstance(self._parent(node), cst.AugAssign) for node in nodes):
            return False
        key = (id(scope), name.value)
        if key in self._following:
            return True
        self._following.add(key)
        for assignment in assignments:
            for access in assignment.references:
                if not self._access_used_as_mapping(access.node):
                    return False
        if isinstance(scope, GlobalScope) and may_be_imported(name, self.path, self.source, self.module, self._parent):
            self.importable = name.value
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


def _reads_name(expression: cst.CSTNode, name: str, allowed: frozenset = frozenset()) -> bool:
    """Whether ``expression`` reads ``name`` other than through one of the ``allowed`` attributes
    (``v.shape``, ``v.size()``)."""
    found: list = []

    class Reads(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            return not (isinstance(node.value, cst.Name) and node.value.value == name and node.attr.value in allowed)

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == name:
                found.append(node)

    expression.visit(Reads())
    return bool(found)
