"""Does a value get used only as a mapping of tensors? A data-flow check behind fix applicability.

A loaded checkpoint that is only handed to ``load_state_dict`` (of anything but an instance of a
project class that defines its own: a learning-rate scheduler or an EMA helper of the project may
keep the tensors as they came back, on the device they were loaded onto), indexed with string keys
whose values go the same way, iterated through ``.keys()``, or rebuilt by a dict comprehension over ``.items()``
whose values go the same way, behaves the same wherever its tensors live. Any other use (returned,
called, moved, stored, unpacked) may depend on the device, and so may any use of a module-level
name that other modules may import (see :mod:`gpulint.semantic.module_bindings`). Names are
followed by binding, through every scope of the module that reads them.
"""

from __future__ import annotations

import ast
from typing import FrozenSet, Optional, Set

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.module_bindings import may_be_imported
from gpulint.semantic.project_modules import imported_classes
from gpulint.semantic.scopes import Binding
from gpulint.semantic.survey import is_false_constant, module_of

TENSOR_METADATA = frozenset({"shape", "dtype", "ndim", "size", "dim", "numel"})
"""What a comprehension's filter may read of a value without its device mattering."""
LOAD_STATE_DICT = "load_state_dict"
"""The method that restores a state dict into what it is called on."""


def _is_string(node: Optional[ast.AST]) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


class MappingUse:
    """Answers ``only_as_mapping(expr)`` for the module of ``model``, read from the file ``path``."""

    def __init__(self, model: SemanticModel, path: str) -> None:
        self.model = model
        self.path = path
        self._following: Set[Binding] = set()
        self.importable: Optional[str] = None
        """Set when the answer is no because the value is bound to this importable module-level name."""

    def only_as_mapping(self, expr: ast.expr) -> bool:
        parent = self.model.parent(expr)
        if isinstance(parent, ast.Expr):
            return True
        if isinstance(parent, ast.Call) and any(argument is expr for argument in parent.args):
            return self._is_state_dict_argument(parent, expr, None)
        if isinstance(parent, ast.keyword) and parent.arg is not None:
            call = self.model.parent(parent)
            return isinstance(call, ast.Call) and self._is_state_dict_argument(call, expr, parent.arg)
        if isinstance(parent, ast.Subscript) and parent.value is expr:
            return _is_string(parent.slice) and self.only_as_mapping(parent)
        if isinstance(parent, ast.Attribute) and parent.value is expr:
            return self._mapping_method_use(parent)
        if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is expr:
            return self._binding_used_as_mapping(parent)
        return False

    def _is_state_dict_argument(self, call: ast.Call, expr: ast.expr, keyword: Optional[str]) -> bool:
        """``x.load_state_dict(value)``, which copies each tensor into the device of the parameter
        it belongs to; not with ``assign=True`` (possibly passed positionally or through ``**``),
        which makes the loaded tensors themselves the parameters, nor on an instance of a project
        class with a ``load_state_dict`` of its own (:meth:`_restores_its_own_way`)."""
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == LOAD_STATE_DICT):
            return False
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return False
        if len(call.args) > 2:
            return False
        if any(k.arg == "assign" and not is_false_constant(k.value) for k in call.keywords):
            return False
        if self._restores_its_own_way(call.func.value):
            return False
        if keyword is not None:
            return keyword == "state_dict"
        return call.args[0] is expr

    def _restores_its_own_way(self, receiver: ast.expr) -> bool:
        """Whether ``receiver`` (of ``receiver.load_state_dict(...)``) may be an instance of a class
        of the module, or of a project module it imports, that defines ``load_state_dict`` itself:
        an assignment binds it to such a class's instance (``self.scheduler =
        PlateauLRScheduler(...)``, through moving and switching methods)."""
        place = self.model.place(receiver)
        if place is None:
            return False
        for assign in self.model.nodes(ast.Assign):
            if not any(self.model.place(target) == place for target in assign.targets):
                continue
            built = module_of(assign.value)
            if not isinstance(built, ast.Call):
                continue
            own = self.model.defined_class(built.func)
            classes = [own] if own is not None else imported_classes(self.model, self.path, built.func)
            if any(_defines(cls, LOAD_STATE_DICT) for cls in classes):
                return True
        return False

    def _mapping_method_use(self, attribute: ast.Attribute) -> bool:
        call = self.model.parent(attribute)
        if not (isinstance(call, ast.Call) and call.func is attribute):
            return False
        method = attribute.attr
        if method == "keys":
            return not call.args and not call.keywords
        if method == "items" and not call.args and not call.keywords:
            return self._rebuilt_as_mapping(call)
        if method == "get" and call.args:
            return _is_string(call.args[0]) and self.only_as_mapping(call)
        return False

    def _rebuilt_as_mapping(self, items: ast.Call) -> bool:
        """``{rename(k): v for k, v in state.items() if ...}`` used as a mapping in turn: each value
        goes into the new mapping untouched, and the filter reads at most its shape or dtype. A
        loop or any other use of the values (``v.numpy()``, ``param.add_(v)``) depends on the device."""
        generator = self.model.parent(items)
        comprehension = self.model.parent(generator) if isinstance(generator, ast.comprehension) else None
        if not (
            isinstance(comprehension, ast.DictComp) and isinstance(generator, ast.comprehension)
            and len(comprehension.generators) == 1 and generator.iter is items
        ):
            return False
        target = generator.target
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2):
            return False
        value = target.elts[1]
        if not (isinstance(value, ast.Name) and isinstance(comprehension.value, ast.Name) and comprehension.value.id == value.id):
            return False
        if _reads_name(comprehension.key, value.id):
            return False
        if any(_reads_name(condition, value.id, allowed=TENSOR_METADATA) for condition in generator.ifs):
            return False
        return self.only_as_mapping(comprehension)

    def _binding_used_as_mapping(self, statement: ast.stmt) -> bool:
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]  # type: ignore[attr-defined]
        if len(targets) != 1 or not isinstance(targets[0], ast.Name):
            return False
        name = targets[0]
        binding = self.model.scope_at(name).resolve(name.id)
        if not (binding.scope.is_function or binding.scope.parent is None):
            return False
        uses = self.model.uses(binding)
        if any(isinstance(use.ctx, ast.Store) and isinstance(self.model.parent(use), ast.AugAssign) for use in uses):
            return False
        if binding in self._following:
            return True
        self._following.add(binding)
        for use in uses:
            if isinstance(use.ctx, ast.Load) and not self.only_as_mapping(use):
                return False
        if binding.scope.parent is None and may_be_imported(self.model, name, self.path):
            self.importable = name.id
            return False
        return True


def _defines(cls: ast.ClassDef, method: str) -> bool:
    """Whether the body of ``cls`` defines ``method``."""
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == method for node in cls.body)


def _reads_name(expression: ast.AST, name: str, allowed: FrozenSet[str] = frozenset()) -> bool:
    """Whether ``expression`` reads ``name`` other than through one of the ``allowed`` attributes
    (``v.shape``, ``v.size()``)."""
    if isinstance(expression, ast.Attribute) and isinstance(expression.value, ast.Name):
        if expression.value.id == name and expression.attr in allowed:
            return False
    if isinstance(expression, ast.Name):
        return expression.id == name
    return any(_reads_name(child, name, allowed) for child in ast.iter_child_nodes(expression))
