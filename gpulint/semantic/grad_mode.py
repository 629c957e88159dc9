"""Where gradients are off: ``torch.no_grad()``, ``torch.inference_mode()`` and
``torch.set_grad_enabled(False)``, as context managers or decorators — under any import form,
``from torch import *`` included — and the project's own decorators that turn them off (a function
of the file whose body uses one of those, such as a ``smart_inference_mode()`` that returns
``torch.inference_mode()``, or an imported decorator named after one)."""

from __future__ import annotations

import ast
from typing import Callable, FrozenSet, List, Optional, Set

import libcst as cst

from gpulint.semantic.survey import Survey
from gpulint.semantic.torch_api import GRAD_OFF, SET_GRAD_ENABLED

QualifiedNames = Callable[[cst.CSTNode], Set[str]]

GRAD_OFF_WORDS = ("no_grad", "inference_mode", "set_grad_enabled")
"""Words in a name that may turn gradients off: a function whose body mentions one may be a
project decorator that does, and an imported decorator named with one (``smart_inference_mode``)
is taken to."""
DECORATOR_WORDS = ("no_grad", "inference_mode")
"""Words that make a decorator of unknown definition count as turning gradients off."""


def turns_grad_off(expression: cst.BaseExpression, qualified_names: QualifiedNames) -> bool:
    """``torch.no_grad()``, ``torch.no_grad`` (as a decorator), ``torch.inference_mode()``,
    ``torch.set_grad_enabled(False)``, under any import form. ``set_grad_enabled(flag)`` with a
    flag only known at run time (``phase == "train"``) counts too: the code manages grad mode."""
    call = expression if isinstance(expression, cst.Call) else None
    names = qualified_names(call.func if call else expression)
    if names and names <= GRAD_OFF:
        return call is None or not call.args or not (
            isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "False"
        )
    if call is not None and names and names <= SET_GRAD_ENABLED and call.args:
        value = call.args[0].value
        return not (isinstance(value, cst.Name) and value.value == "True")
    return False


def grad_off_mentions(survey: Survey) -> List[ast.AST]:
    """Nodes naming something that may turn gradients off (by its name, or imported under another
    one: ``from torch import no_grad as ng``): the functions around them must be read to know the
    project's own grad-off decorators."""
    grad_off = GRAD_OFF | SET_GRAD_ENABLED
    named: List[ast.AST] = [
        *(node for node in survey.nodes(ast.Attribute) if any(word in node.attr for word in GRAD_OFF_WORDS)),
        *(node for node in survey.nodes(ast.Name)
          if any(word in node.id for word in GRAD_OFF_WORDS) or survey.qualified_names(node) & grad_off),
    ]
    return named


class GradMode:
    """Answers whether a ``with`` block or a function turns gradients off, for one file."""

    def __init__(self, module: cst.Module, qualified_names: QualifiedNames, star_modules: Set[str]) -> None:
        self._resolved = qualified_names
        self._torch_star = "torch" in star_modules
        self.helpers = self._project_helpers(module)
        """Names of the file's functions whose body turns gradients off (project decorators)."""

    def qualified_names(self, node: cst.CSTNode) -> Set[str]:
        """Qualified names, with a bare name that nothing resolves taken from ``from torch import *``."""
        names = self._resolved(node)
        if not names and self._torch_star and isinstance(node, cst.Name):
            return {f"torch.{node.value}"}
        return names

    def _project_helpers(self, module: cst.Module) -> FrozenSet[str]:
        helpers: Set[str] = set()
        mode = self

        class Find(cst.CSTVisitor):
            def __init__(self) -> None:
                super().__init__()
                self.functions: List[cst.FunctionDef] = []

            def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
                self.functions.append(node)

            def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
                self.functions.pop()

            def _found(self, node: cst.BaseExpression) -> None:
                if self.functions and turns_grad_off(node, mode.qualified_names):
                    helpers.add(self.functions[0].name.value)

            def visit_Call(self, node: cst.Call) -> None:
                self._found(node)

            def visit_Attribute(self, node: cst.Attribute) -> None:
                self._found(node)

            def visit_Name(self, node: cst.Name) -> None:
                self._found(node)

        module.visit(Find())
        return frozenset(helpers)

    def guarded_with(self, node: cst.With) -> bool:
        return any(turns_grad_off(item.item, self.qualified_names) for item in node.items)

    def guarded_function(self, node: cst.FunctionDef) -> bool:
        return any(self._decorator_turns_grad_off(decorator.decorator, node) for decorator in node.decorators)

    def _decorator_turns_grad_off(self, decorator: cst.BaseExpression, function: cst.FunctionDef) -> bool:
        """A grad-off decorator; a function of this file (called by its bare name, and not the
        decorated function itself) that turns gradients off; or any decorator whose name says it
        does (``smart_inference_mode``)."""
        if turns_grad_off(decorator, self.qualified_names):
            return True
        target = decorator.func if isinstance(decorator, cst.Call) else decorator
        if isinstance(target, cst.Name) and target.value in self.helpers and target.value != function.name.value:
            return True
        name = _last_name(target)
        return name is not None and any(word in name for word in DECORATOR_WORDS)


def _last_name(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    return None
