"""Methods that turn gradients off by their own decorator, called on an instance of their class.

``model = Transformer(config)``, ``model = model.to("cuda")``, then ``model.inference(src)``, where
the project's ``model.py`` defines ``Transformer.inference`` under ``@torch.no_grad()``: the call
runs without gradients whatever the code around it does. The class is the module's own, or one a
project module defines that the file imports
(:func:`~gpulint.semantic.project_modules.imported_classes`); the instance is a place every
assignment of which builds an instance of that one class, or hands back the place itself through
a chain of calls that return the module (``model = model.to(device)``), and which nothing else
binds. The method is defined in the class's own body, under a decorator that turns gradients off:
resolved by the module's imports for its own class, and by spelling (``torch.no_grad()``,
``no_grad()``, ``torch.inference_mode()``) for another file's. Calling the instance itself
(``encoder(points)``) runs ``forward``, so a class whose ``forward`` is so decorated counts too.
"""

from __future__ import annotations

import ast
from typing import Dict, List, Optional, Tuple

from gpulint.semantic.model import Place, SemanticModel
from gpulint.semantic.project_modules import imported_classes
from gpulint.semantic.survey import ast_dotted_name, module_of
from gpulint.semantic.torch_api import GRAD_OFF, MODULE_CALL_METHOD

InstanceClass = Tuple[ast.ClassDef, bool]
"""A class, and whether the module itself defines it."""


def runs_without_grad_by_its_decorator(model: SemanticModel, call: ast.Call) -> bool:
    """Whether ``call`` is ``instance.method(...)`` of a method its class turns gradients off for, or
    ``instance(...)`` where the class so decorates ``forward``."""
    func = call.func
    called = [(func.value, func.attr)] if isinstance(func, ast.Attribute) else []
    return any(_decorated_grad_off(model, receiver, name) for receiver, name in [*called, (func, MODULE_CALL_METHOD)])


def _decorated_grad_off(model: SemanticModel, receiver: ast.expr, name: str) -> bool:
    """Whether ``receiver`` holds an instance of one class whose method ``name``, defined in the
    class's body, turns gradients off by its decorator."""
    place = model.place(receiver)
    if place is None:
        return False
    found = model.derived(_InstanceClasses).of(place)
    if found is None:
        return False
    cls, own = found
    method = next((node for node in cls.body if isinstance(node, ast.FunctionDef) and node.name == name), None)
    return method is not None and any(
        model.turns_grad_off(decorator) if own else _spelled_grad_off(decorator) for decorator in method.decorator_list
    )


def _spelled_grad_off(decorator: ast.expr) -> bool:
    """``@torch.no_grad()``, ``@torch.no_grad``, ``@no_grad()``, ``@torch.inference_mode()``, read by
    spelling (another file's imports are not resolved): a name of :data:`GRAD_OFF`, or its last
    part; not ``inference_mode(False)``."""
    call = decorator if isinstance(decorator, ast.Call) else None
    spelled = ast_dotted_name(call.func if call is not None else decorator)
    if spelled is None or not any(name == spelled or name.endswith("." + spelled) for name in GRAD_OFF):
        return False
    return call is None or not call.args or not (isinstance(call.args[0], ast.Constant) and call.args[0].value is False)


class _InstanceClasses:
    """Per module, the class each place holds an instance of, where that is one class: decided once."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self.values: Dict[Place, List[ast.expr]] = {}
        for assign in model.nodes(ast.Assign):
            for place in map(model.place, assign.targets):
                if place is not None:
                    self.values.setdefault(place, []).append(assign.value)
        self.found: Dict[Place, Optional[InstanceClass]] = {}

    def of(self, place: Place) -> Optional[InstanceClass]:
        """``(class, the module's own)`` for the class every binding of ``place`` builds."""
        if place not in self.found:
            self.found[place] = self._decide(place)
        return self.found[place]

    def _decide(self, place: Place) -> Optional[InstanceClass]:
        assigned = self.values.get(place, [])
        if not assigned or (not place.path and len(self.model.binders(place.binding)) != len(assigned)):
            return None
        classes: List[Optional[InstanceClass]] = []
        for value in assigned:
            built = module_of(value)
            if isinstance(built, (ast.Name, ast.Attribute)) and self.model.place(built) == place:
                continue  # ``model = model.to(device)``
            if not (isinstance(built, ast.Call) and isinstance(built.func, (ast.Name, ast.Attribute))):
                return None
            classes.append(self._class_of(built.func))
        if not classes or any(found is None for found in classes) or len({id(found[0]) for found in classes if found}) != 1:
            return None
        return classes[0]

    def _class_of(self, func: ast.expr) -> Optional[InstanceClass]:
        own = self.model.defined_class(func)
        if own is not None:
            return (own, True)
        path = self.model.path
        imported = imported_classes(self.model, path, func) if path is not None else []
        return (imported[0], False) if len(imported) == 1 else None
