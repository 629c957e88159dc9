"""``ast.NodeVisitor`` with the same dispatch, made cheaper: the ``visit_*`` method for each node
type is looked up once per visitor class, and children are read from the node's fields directly
(Python's own visitor builds a method name and runs two generators per node). The semantic
model's walks read every node of a module, so this is where its time goes."""

from __future__ import annotations

import ast
from typing import Any, Callable, ClassVar, Dict


class Visitor(ast.NodeVisitor):
    """Subclass and define ``visit_<NodeType>`` methods, as with ``ast.NodeVisitor``."""

    _dispatch: ClassVar[Dict[type, Callable[[Any, ast.AST], Any]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._dispatch = {}

    def visit(self, node: ast.AST) -> Any:
        kind = type(node)
        method = self._dispatch.get(kind)
        if method is None:
            found = getattr(type(self), "visit_" + kind.__name__, None)
            if found is None or found is ast.NodeVisitor.visit_Constant:
                found = type(self).generic_visit
            method = self._dispatch[kind] = found
        return method(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        self.visit(item)
            elif isinstance(value, ast.AST):
                self.visit(value)
