"""Scopes and bindings of one module, by Python's own rules, on its ``ast``.

Every module, class, function, lambda and comprehension is a :class:`Scope`; a name read in a scope
resolves to the :class:`Binding` that holds it: the scope's own if it binds the name (and does not
declare it ``global`` or ``nonlocal``), else the nearest enclosing function's, else the module's.
Class bodies are skipped on the way out, as Python skips them. Facts about values are keyed by
binding, so that ``model`` in one function is never ``model`` in another.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Set, Union

from gpulint.semantic.visitor import Visitor

ScopeNode = Union[
    ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
    ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
]
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
SCOPE_NODES = (ast.Module, *FUNCTIONS, ast.ClassDef, ast.Lambda, *COMPREHENSIONS)


@dataclass(eq=False)
class Scope:
    """One scope: the names it binds and those it declares ``global`` or ``nonlocal``."""

    node: ScopeNode
    parent: Optional["Scope"]
    bound: Set[str] = field(default_factory=set)
    parameters: List[str] = field(default_factory=list)
    """Parameter names in order: positional-only, positional, ``*args``, keyword-only, ``**kwargs``."""
    positional: List[str] = field(default_factory=list)
    """The parameters a positional argument can fill, in order."""
    globals: Set[str] = field(default_factory=set)
    nonlocals: Set[str] = field(default_factory=set)
    children: List["Scope"] = field(default_factory=list)

    @property
    def is_function(self) -> bool:
        return isinstance(self.node, (*FUNCTIONS, ast.Lambda))

    @property
    def is_class(self) -> bool:
        return isinstance(self.node, ast.ClassDef)

    @property
    def module(self) -> "Scope":
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope

    def locals(self) -> Set[str]:
        """The names this scope's own binding holds (as ``symtable``'s ``is_local``)."""
        return self.bound - self.globals - self.nonlocals

    def resolve(self, name: str) -> "Binding":
        """The binding ``name`` read in this scope refers to; an unbound name is the module's."""
        if name in self.globals:
            return Binding(self.module, name)
        if name in self.locals():
            return Binding(self, name)
        scope = self.parent
        while scope is not None and scope.parent is not None:
            if not scope.is_class and name in scope.locals():
                return Binding(scope, name)
            scope = scope.parent
        return Binding(self.module, name)

    def walk(self) -> Iterator["Scope"]:
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(frozen=True)
class Binding:
    """A name as held by one scope."""

    scope: Scope
    name: str

    def __repr__(self) -> str:
        return f"Binding({type(self.scope.node).__name__}:{getattr(self.scope.node, 'name', '')}, {self.name!r})"


class _Builder(Visitor):
    """Builds the scope tree and records, for every node, the scope it is evaluated in."""

    def __init__(self, module: ast.Module) -> None:
        self.root = Scope(module, None)
        self.current = self.root
        self.scope_of: Dict[int, Scope] = {}

    def _enter(self, node: ScopeNode) -> Scope:
        scope = Scope(node, self.current)
        self.current.children.append(scope)
        return scope

    def generic_visit(self, node: ast.AST) -> None:
        self.scope_of[id(node)] = self.current
        super().generic_visit(node)

    def _visit_in(self, scope: Scope, nodes: List[ast.AST]) -> None:
        outer, self.current = self.current, scope
        for node in nodes:
            self.visit(node)
        self.current = outer

    def _visit_all(self, nodes: List[ast.AST]) -> None:
        for node in nodes:
            self.visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        self.scope_of[id(node)] = self.current
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.current.bound.add(node.id)

    def _function(self, node: Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda]) -> None:
        self.scope_of[id(node)] = self.current
        if not isinstance(node, ast.Lambda):
            self.current.bound.add(node.name)
            self._visit_all(list(node.decorator_list))
            if node.returns is not None:
                self.visit(node.returns)
        arguments = node.args
        self._visit_all([d for d in (*arguments.defaults, *arguments.kw_defaults) if d is not None])
        annotations = [a.annotation for a in _arguments(arguments) if a.annotation is not None]
        self._visit_all(list(annotations))
        scope = self._enter(node)
        scope.parameters = [a.arg for a in _arguments(arguments)]
        scope.positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
        scope.bound.update(scope.parameters)
        body: List[ast.AST] = [node.body] if isinstance(node, ast.Lambda) else list(node.body)
        self._visit_in(scope, body)

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function
    visit_Lambda = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scope_of[id(node)] = self.current
        self.current.bound.add(node.name)
        self._visit_all([*node.decorator_list, *node.bases, *node.keywords])
        self._visit_in(self._enter(node), list(node.body))

    def _comprehension(self, node: Union[ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp]) -> None:
        self.scope_of[id(node)] = self.current
        first, *others = node.generators
        self.visit(first.iter)
        scope = self._enter(node)
        elements: List[ast.AST] = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        rest: List[ast.AST] = [first.target, *first.ifs]
        for generator in others:
            rest += [generator.target, generator.iter, *generator.ifs]
        self._visit_in(scope, [*rest, *elements])

    visit_ListComp = _comprehension
    visit_SetComp = _comprehension
    visit_DictComp = _comprehension
    visit_GeneratorExp = _comprehension

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.scope_of[id(node)] = self.current
        self.visit(node.value)
        target = self.current
        while isinstance(target.node, COMPREHENSIONS) and target.parent is not None:
            target = target.parent
        target.bound.add(node.target.id)
        self.scope_of[id(node.target)] = self.current
        if target is not self.current:
            self.current.nonlocals.add(node.target.id) if target.is_function else self.current.globals.add(node.target.id)

    def _import(self, node: Union[ast.Import, ast.ImportFrom]) -> None:
        self.scope_of[id(node)] = self.current
        for alias in node.names:
            if alias.name != "*":
                self.current.bound.add(alias.asname or alias.name.split(".")[0])

    visit_Import = _import
    visit_ImportFrom = _import

    def visit_Global(self, node: ast.Global) -> None:
        self.scope_of[id(node)] = self.current
        self.current.globals.update(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.scope_of[id(node)] = self.current
        self.current.nonlocals.update(node.names)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self.current.bound.add(node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name:
            self.current.bound.add(node.name)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self.current.bound.add(node.name)
        self.generic_visit(node)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        if node.rest:
            self.current.bound.add(node.rest)
        self.generic_visit(node)


def _arguments(arguments: ast.arguments) -> List[ast.arg]:
    found = [*arguments.posonlyargs, *arguments.args]
    if arguments.vararg is not None:
        found.append(arguments.vararg)
    found += arguments.kwonlyargs
    if arguments.kwarg is not None:
        found.append(arguments.kwarg)
    return found


def build_scopes(module: ast.Module) -> "tuple[Scope, Dict[int, Scope]]":
    """The module's scope tree, and for each node (by ``id``) the scope it is evaluated in."""
    builder = _Builder(module)
    builder.scope_of[id(module)] = builder.root
    builder._visit_all(list(module.body))
    return builder.root, builder.scope_of
