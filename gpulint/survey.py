"""What the engine can learn about a file from Python's own syntax tree, before LibCST is involved.

A LibCST parse costs many times Python's ``ast`` parse (which the syntax check pays anyway), and
LibCST's scope and qualified-name resolution costs several times the parse. A survey reads the
``ast`` once so that each rule can rule itself out first: its imports (an over-approximating
:class:`ImportTable`) and its nodes grouped by type. Every fact here over-approximates what the
rule's own LibCST analysis would find, so a rule that cannot fire by the survey cannot fire at all;
only files where some rule may fire are parsed with LibCST.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import cached_property
from typing import DefaultDict, Dict, FrozenSet, List, Optional, Set, Tuple, Type, TypeVar

from gpulint.analysis.tensors import MODULE_METHODS, is_module_constructor
from gpulint.import_table import ImportTable

NodeType = TypeVar("NodeType", bound=ast.AST)

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_NAMED_CONSTANTS = {True: "True", False: "False", None: "None"}
_MOVING_METHODS = frozenset({"cuda", "to", "eval", "train", "half", "float", "bfloat16", "requires_grad_"})


def ast_full_name(node: ast.AST) -> Optional[str]:
    """The dotted name LibCST's ``get_full_name_for_node`` gives the same expression
    (``a.b`` for ``a.b``, ``a().b`` and ``a[0].b``; ``None.b`` for ``(x + y).b``)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and type(node.value) in (bool, type(None)):
        return _NAMED_CONSTANTS[node.value]
    if isinstance(node, ast.Attribute):
        return f"{ast_full_name(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return ast_full_name(node.func)
    if isinstance(node, ast.Subscript):
        return ast_full_name(node.value)
    return None


def ast_dotted_name(node: ast.AST) -> Optional[str]:
    """``a.b.c`` for a name or attribute chain, else None (as ``analysis.tensors.dotted_name``)."""
    if isinstance(node, (ast.Name, ast.Attribute)) or (
        isinstance(node, ast.Constant) and type(node.value) in (bool, type(None))
    ):
        return ast_full_name(node)
    return None


def argument_values(call: ast.Call) -> List[ast.expr]:
    """Every argument's value, positional, starred or keyword."""
    values = [arg.value if isinstance(arg, ast.Starred) else arg for arg in call.args]
    return values + [keyword.value for keyword in call.keywords]


def is_false_constant(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


class Survey:
    """Facts about one module's ``ast``, each computed on first use."""

    def __init__(self, tree: ast.Module, source: str) -> None:
        self.tree = tree
        self.source = source

    @cached_property
    def _walk(self) -> Tuple[DefaultDict[type, List[ast.AST]], Set[int], Dict[int, ast.AST]]:
        """In one walk: nodes by type, the ids of the nodes inside a loop of their own scope, and
        each node's scope (the innermost function, lambda, class or module around it)."""
        by_type: DefaultDict[type, List[ast.AST]] = defaultdict(list)
        in_loop: Set[int] = set()
        scope_of: Dict[int, ast.AST] = {}
        stack: List[Tuple[ast.AST, bool, ast.AST]] = [(self.tree, False, self.tree)]
        while stack:
            node, inside_loop, scope = stack.pop()
            by_type[type(node)].append(node)
            scope_of[id(node)] = scope
            if inside_loop:
                in_loop.add(id(node))
            if isinstance(node, _SCOPES):
                children = (False, node)
            else:
                children = (inside_loop or isinstance(node, _LOOPS), scope)
            stack.extend((child, *children) for child in ast.iter_child_nodes(node))
        return by_type, in_loop, scope_of

    def nodes(self, node_type: Type[NodeType]) -> List[NodeType]:
        """Every node of exactly ``node_type``."""
        return self._walk[0].get(node_type, [])  # type: ignore[return-value]

    def in_loop(self, node: ast.AST) -> bool:
        """Whether ``node`` is part of a ``for`` or ``while`` statement of its own function (or
        class body, or module): no ``def``, ``lambda`` or ``class`` lies between them."""
        return id(node) in self._walk[1]

    def scope_of(self, node: ast.AST) -> ast.AST:
        """The innermost ``def``, ``lambda`` or ``class`` around ``node`` (the module if none); a
        scope node's own scope is the one around it."""
        return self._walk[2][id(node)]

    def calls(self) -> List[ast.Call]:
        return self.nodes(ast.Call)

    def method_calls(self, *methods: str) -> List[ast.Call]:
        """Calls of ``x.method(...)`` for the given method names."""
        return [call for call in self.calls() if isinstance(call.func, ast.Attribute) and call.func.attr in methods]

    @cached_property
    def imports(self) -> ImportTable:
        return ImportTable.from_imports([*self.nodes(ast.Import), *self.nodes(ast.ImportFrom)])

    def qualified_names(self, node: ast.AST) -> FrozenSet[str]:
        """Every qualified name an import of this module may give ``node`` (a superset of what
        LibCST's QualifiedNameProvider reports for it where the name comes from an import)."""
        dotted = ast_full_name(node)
        return self.imports.qualified_names(dotted) if dotted else frozenset()

    @cached_property
    def modules(self) -> FrozenSet[str]:
        """A superset of the dotted names ``analysis.tensors.ModuleEvidence`` collects."""
        found = {ast_dotted_name(call.func.value) for call in self.method_calls(*MODULE_METHODS)}
        for assign in self.nodes(ast.Assign):
            if self._constructs_module(assign.value):
                found.update(ast_dotted_name(target) for target in assign.targets)
        found.discard(None)
        return frozenset(found)  # type: ignore[arg-type]

    def _constructs_module(self, value: ast.expr) -> bool:
        moved = False
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _MOVING_METHODS:
            value, moved = value.func.value, True
        if isinstance(value, ast.Call):
            return (moved and isinstance(value.func, (ast.Name, ast.Attribute))) or any(
                is_module_constructor(q) for q in self.qualified_names(value.func)
            )
        return False
