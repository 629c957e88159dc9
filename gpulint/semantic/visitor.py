"""``ast.NodeVisitor`` with the same dispatch, made cheaper: the ``visit_*`` method for each node
type is looked up once per visitor class, and children are read from the node's fields directly
(Python's own visitor builds a method name and runs two generators per node), and the
fieldless nodes Python shares between parents are skipped. The semantic
model's walks read every node of a module, so this is where its time goes."""

from __future__ import annotations

import ast
from typing import Any, Callable, ClassVar, Dict, FrozenSet, Tuple

SHARED_LEAVES = frozenset(
    kind for base in (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop) for kind in base.__subclasses__()
)
"""Node types without fields that Python's parser shares between all the nodes that hold one
(every ``Load`` context is the same object): walks skip them, and they have no single parent."""
_TEXT_FIELDS: Dict[type, Tuple[str, ...]] = {
    ast.Name: ("id", "ctx"), ast.Constant: ("value", "kind"), ast.Attribute: ("attr", "ctx"), ast.arg: ("arg", "type_comment"),
    ast.keyword: ("arg",), ast.alias: ("name", "asname"), ast.ImportFrom: ("module", "level"),
    ast.FunctionDef: ("name", "type_comment"), ast.AsyncFunctionDef: ("name", "type_comment"), ast.ClassDef: ("name",),
    ast.Global: ("names",), ast.Nonlocal: ("names",), ast.Subscript: ("ctx",), ast.Starred: ("ctx",),
    ast.List: ("ctx",), ast.Tuple: ("ctx",),
}
"""Fields that never hold a node, by node type: a walk does not read them."""
_CHILD_FIELDS: Dict[type, Tuple[str, ...]] = {}
BARREN = frozenset({ast.Name, ast.Constant, ast.alias, ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal})
"""Node types that hold no node: a visitor without a ``visit_*`` method for one has nothing to do
there, and its walk does not call into it (a third of a module's nodes are names and constants)."""


class Visitor(ast.NodeVisitor):
    """Subclass and define ``visit_<NodeType>`` methods, as with ``ast.NodeVisitor``."""

    _dispatch: ClassVar[Dict[type, Callable[[Any, ast.AST], Any]]] = {}
    _skipped: ClassVar[FrozenSet[type]] = SHARED_LEAVES
    """Node types the walk does not call into: the shared leaves, and the barren nodes the class
    neither visits nor sees in an overridden ``generic_visit``."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._dispatch = {}
        if cls.generic_visit is Visitor.generic_visit:
            unvisited = (kind for kind in BARREN if getattr(cls, "visit_" + kind.__name__, None) in (None, ast.NodeVisitor.visit_Constant))
            cls._skipped = SHARED_LEAVES | frozenset(unvisited)
        else:
            cls._skipped = SHARED_LEAVES

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
        kind = type(node)
        fields = _CHILD_FIELDS.get(kind)
        if fields is None:
            fields = _CHILD_FIELDS[kind] = tuple(name for name in node._fields if name not in _TEXT_FIELDS.get(kind, ()))
        skipped = self._skipped
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, ast.AST) and type(item) not in skipped:
                        self.visit(item)
            elif isinstance(value, ast.AST) and type(value) not in skipped:
                self.visit(value)
