"""The semantic model of one module: built once on Python's ``ast`` before any rule runs.

On top of the survey (nodes by type, imports, qualified names) it holds the scopes and bindings
(:mod:`gpulint.semantic.scopes`), the module's functions and classes with their methods, the call
graph inside the module (calls resolved by binding: ``f(x)`` to the ``def f`` that name holds,
``self.m(x)`` to the method of the class), where gradients are off (grad-off contexts and
decorators, project-defined wrappers resolved through their own definitions), and per-function
summaries computed to a fixed point over the call graph. Rules read these facts; nothing here
knows of rules.
"""

from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Dict, FrozenSet, Iterable, Iterator, List, Optional, Sequence, Set, Tuple, TypeVar, Union, cast

from gpulint.semantic import torch_api
from gpulint.semantic.scopes import FUNCTIONS, Binding, Scope, build_scopes
from gpulint.semantic.import_table import ImportTable
from gpulint.semantic.visitor import Visitor
from gpulint.semantic.survey import STATEMENT_BLOCKS, Survey, ast_dotted_name, ast_full_name, is_false_constant, module_of, own_nodes, position

FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]
Derived = TypeVar("Derived")
BUILTIN_NAMES = frozenset(dir(builtins))
"""The names Python binds in every module without an import."""
_LINE_BREAK = re.compile(r"\r\n|\r|\n")

GRAD_OFF_WORDS = ("no_grad", "inference_mode")
"""Words that make an imported decorator of unknown definition count as turning gradients off
(``smart_inference_mode``)."""
TRAINING_METHODS = frozenset({"backward", "step"})
"""Methods whose call shows a function needs gradients (``loss.backward()``, ``optimizer.step()``)."""
def called_unseen(name: str) -> bool:
    """Whether Python or torch calls a method of this name without spelling it: a special method
    (``__call__``, ``__iter__``), or a module's ``forward`` that ``model(x)`` runs."""
    return name == torch_api.MODULE_CALL_METHOD or (name.startswith("__") and name.endswith("__"))


SPELLING_NODES = (ast.Attribute, ast.Name, ast.arg, ast.keyword, ast.alias, ast.ImportFrom, ast.Constant)
"""The kinds of node whose text :meth:`SemanticModel.spells` reads."""


@dataclass(eq=False)
class Function:
    """A ``def`` of the module."""

    node: FunctionNode
    scope: Scope
    owner: Optional["Class"] = None
    """The class whose body defines it (a method)."""
    calls: List["CallSite"] = field(default_factory=list)
    """The calls of this function in the module that resolve to it by binding."""

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def receiver(self) -> Optional[str]:
        """The name of ``self`` in a method (its first positional parameter), else None."""
        if self.owner is None or not self.scope.positional:
            return None
        if any(ast_dotted_name(d) in ("staticmethod", "classmethod") for d in self.node.decorator_list):
            return None
        return self.scope.positional[0]

    @property
    def positional(self) -> List[str]:
        """The parameters a caller fills positionally (``self`` left out of a method, ``cls`` of a
        class method)."""
        class_method = self.owner is not None and any(ast_dotted_name(d) == "classmethod" for d in self.node.decorator_list)
        return self.scope.positional[1:] if self.receiver is not None or class_method else self.scope.positional


@dataclass(eq=False)
class Class:
    node: ast.ClassDef
    scope: Scope
    methods: Dict[str, Function] = field(default_factory=dict)


@dataclass(frozen=True)
class Place:
    """A value by binding: a name's binding and an attribute path below it (``model.encoder``:
    the binding of ``model`` and ``.encoder``). ``self.<attr>`` in a method is keyed by the class."""

    binding: Binding
    path: str = ""


@dataclass(eq=False)
class CallSite:
    """One call of the module: where it is, whether gradients are off around it, what it calls."""

    node: ast.Call
    caller: Optional[Function]
    """The innermost function around the call; None at module level or in a class body."""
    guarded: bool
    """Inside a grad-off ``with`` block or a function with a grad-off decorator, or after a
    ``torch.set_grad_enabled(False)`` statement around it (a runtime flag's only in a function's
    or the module's own body: :meth:`SemanticModel.switched_off_at`)."""
    callee: Optional[Function] = None


THREAD_WORDS = ("thread", "concurrent", "executor", "flask", "fastapi", "uvicorn", "gradio", "streamlit", "asyncio")
"""Words of a module that may run code in other threads, where a grad-mode switch made in one does
not hold (``threading``, ``concurrent.futures``, web servers and demo frameworks)."""

LIGHTNING_PACKAGES = frozenset({"pytorch_lightning", "lightning"})
LIGHTNING_MODULE = "LightningModule"


def is_lightning_module(qualified: str) -> bool:
    """Whether ``qualified`` names Lightning's model base class, under any path it is imported by
    (``pytorch_lightning.LightningModule``, ``pytorch_lightning.core.lightning.LightningModule``,
    ``lightning.pytorch.core.LightningModule``); ``torch.nn`` classes are
    :func:`torch_api.is_module_constructor`'s."""
    parts = qualified.split(".")
    return len(parts) > 1 and parts[0] in LIGHTNING_PACKAGES and parts[-1] == LIGHTNING_MODULE


OTHER_BINDINGS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.alias, ast.ExceptHandler, ast.MatchAs,
                  ast.MatchStar, ast.MatchMapping)
"""Statements and patterns that bind a name other than by assigning it."""


class SemanticModel(Survey):
    """Every fact about one module that rules share, each computed on first use."""

    def __init__(self, tree: ast.Module, source: str, path: Optional[str] = None) -> None:
        super().__init__(tree, source)
        self.path = path
        """Where the module's file is, for facts read from the project's other files (None: not on disk)."""
        self._derived: Dict[object, object] = {}

    def derived(self, kind: Callable[["SemanticModel"], Derived]) -> Derived:
        """The analysis ``kind(model)`` of this module, built on first request and shared."""
        if kind not in self._derived:
            self._derived[kind] = kind(self)
        return cast(Derived, self._derived[kind])

    @cached_property
    def _lines(self) -> List[str]:
        return _LINE_BREAK.split(self.source)

    def _column(self, line: int, byte_column: int) -> int:
        text = self._lines[line - 1] if line <= len(self._lines) else ""
        return byte_column if text.isascii() else len(text.encode("utf-8")[:byte_column].decode("utf-8", "replace"))

    def span(self, node: ast.AST) -> Tuple[int, int, int, int]:
        """Where a node starts and ends: lines from 1, columns in characters from 0 (as LibCST's
        ``PositionProvider`` gives them for the same node, unparenthesised)."""
        line, column = node.lineno, node.col_offset  # type: ignore[attr-defined]
        end_line, end_column = node.end_lineno, node.end_col_offset  # type: ignore[attr-defined]
        return line, self._column(line, column), end_line, self._column(end_line, end_column)

    @cached_property
    def _line_offsets(self) -> List[int]:
        """The character offset where each line starts (index 0: line 1)."""
        return [0, *(match.end() for match in _LINE_BREAK.finditer(self.source))]

    def offset(self, line: int, column: int) -> int:
        """The character offset of a line (from 1) and column (in characters, from 0)."""
        return self._line_offsets[line - 1] + column

    # Scopes, bindings and places.

    @cached_property
    def _scopes(self) -> Tuple[Scope, Dict[int, Scope]]:
        return build_scopes(self.tree)

    @property
    def root(self) -> Scope:
        """The module's scope."""
        return self._scopes[0]

    def scope_at(self, node: ast.AST) -> Scope:
        """The scope ``node`` is evaluated in."""
        return self._scopes[1].get(id(node), self.root)

    def place(self, node: ast.AST) -> Optional[Place]:
        """The value a name or attribute chain denotes, by binding; None for anything else."""
        dotted = ast_dotted_name(node)
        if dotted is None:
            return None
        base, _, rest = dotted.partition(".")
        scope = self.scope_at(node)
        binding = scope.resolve(base)
        method = self.function_of_scope(binding.scope)
        if method is not None and method.owner is not None and base == method.receiver and binding.scope is method.scope:
            return Place(Binding(method.owner.scope, "self"), "." + rest if rest else "")
        return Place(binding, "." + rest if rest else "")

    def plain_assignments(self, binding: Binding, deletions: bool = False) -> Optional[List[ast.expr]]:
        """What each store of ``binding`` assigns, where every one is a plain assignment to the name
        alone (``name = value``); None where one binds it otherwise (a loop, ``with``, an unpacking,
        ``+=``, a ``del`` unless ``deletions`` allows it). Bindings made without a ``Name`` node (a
        parameter, an import, a ``def``) are not stores: callers that care check them."""
        values = []
        for use in self.uses(binding):
            if isinstance(use.ctx, ast.Load) or (deletions and isinstance(use.ctx, ast.Del)):
                continue
            statement = self.parent(use)
            if not (isinstance(statement, ast.Assign) and statement.targets == [use]):
                return None
            values.append(statement.value)
        return values

    def local_assignments(self, binding: Binding) -> Optional[List[ast.expr]]:
        """:meth:`plain_assignments` of a name the scope owns: None for a parameter, or a name a
        ``global`` or ``nonlocal`` statement shares, which code elsewhere may bind."""
        scope = binding.scope
        if binding.name in scope.parameters or binding.name in scope.globals | scope.nonlocals:
            return None
        return self.plain_assignments(binding)

    def called_only(self, function: Function) -> bool:
        """Every use of ``function``'s name in the module (as a name, or an attribute by any
        receiver) is the callee of one of its calls resolved by binding: nothing hands it on."""
        calls = {id(site.node.func) for site in function.calls}
        spelled: List[Union[ast.Name, ast.Attribute]] = [*self.nodes(ast.Name), *self.nodes(ast.Attribute)]
        return all(
            id(node) in calls for node in spelled
            if (node.id if isinstance(node, ast.Name) else node.attr) == function.name and not isinstance(node.ctx, ast.Store)
        )

    def assigned_name(self, value: ast.expr) -> Optional[Tuple[ast.Name, Place]]:
        """The plain name, and its place, that ``name = value`` binds, where ``value`` is the whole
        right-hand side of an assignment to that one target; None for any other use of ``value``."""
        statement = self.parent(value)
        if not (isinstance(statement, ast.Assign) and statement.value is value and len(statement.targets) == 1):
            return None
        target = statement.targets[0]
        place = self.place(target) if isinstance(target, ast.Name) else None
        return (target, place) if isinstance(target, ast.Name) and place is not None else None

    def target_reads(self, target: ast.expr) -> Optional[List[ast.expr]]:
        """Every read of what ``target`` (a name, or an attribute of ``self``) holds; None where
        another receiver may read the attribute (``other.model`` spelt like ``self.model``) or the
        target is neither."""
        place = self.place(target)
        if place is None:
            return None
        if isinstance(target, ast.Name):
            return [use for use in self.uses(place.binding) if isinstance(use.ctx, ast.Load)]
        if not (isinstance(target, ast.Attribute) and place.binding.name == "self" and place.path == "." + target.attr):
            return None
        reads: List[ast.expr] = []
        for node in self.nodes(ast.Attribute):
            if node.attr != target.attr or node is target:
                continue
            if self.place(node) != place:
                return None
            if isinstance(node.ctx, ast.Load):
                reads.append(node)
        return reads

    def defined_once(self, func: ast.expr) -> bool:
        """Whether ``func`` is a plain name that one ``def`` binds and nothing rebinds (not a
        method, which a subclass may override)."""
        place = self.place(func) if isinstance(func, ast.Name) else None
        if place is None or any(not isinstance(use.ctx, ast.Load) for use in self.uses(place.binding)):
            return False
        definitions: List[Union[ast.FunctionDef, ast.AsyncFunctionDef]] = [*self.nodes(ast.FunctionDef), *self.nodes(ast.AsyncFunctionDef)]
        same = [node for node in definitions if node.name == place.binding.name and self.scope_at(node) is place.binding.scope]
        return len(same) == 1

    def bound_once(self, target: ast.Name, place: Place) -> bool:
        """Whether ``target`` is the only assignment of its binding (a ``del`` aside)."""
        return [use for use in self.uses(place.binding) if isinstance(use.ctx, ast.Store)] == [target]

    @cached_property
    def _names_by_id(self) -> Dict[str, List[ast.Name]]:
        found: Dict[str, List[ast.Name]] = {}
        for name in self.nodes(ast.Name):
            found.setdefault(name.id, []).append(name)
        return found

    def uses(self, binding: Binding) -> List[ast.Name]:
        """Every occurrence of a name that refers to ``binding`` (read, assigned or deleted), in any
        scope of the module (only the names spelt like it are resolved)."""
        known = self._uses.get(binding)
        if known is None:
            known = self._uses[binding] = [
                name for name in self._names_by_id.get(binding.name, ()) if self.scope_at(name).resolve(name.id) == binding
            ]
        return known

    @cached_property
    def _uses(self) -> Dict[Binding, List[ast.Name]]:
        """:meth:`uses` by binding, filled as bindings are asked about."""
        return {}

    # Functions, classes and the call graph.

    @cached_property
    def _definitions(self) -> Tuple[Dict[int, Function], Dict[int, Class]]:
        functions: Dict[int, Function] = {}
        classes: Dict[int, Class] = {}
        for scope in self.root.walk():
            if isinstance(scope.node, ast.ClassDef):
                classes[id(scope.node)] = Class(scope.node, scope)
        for scope in self.root.walk():
            if isinstance(scope.node, FUNCTIONS):
                parent = scope.parent
                owner = classes.get(id(parent.node)) if parent is not None else None
                function = Function(scope.node, scope, owner)
                functions[id(scope.node)] = function
                if owner is not None:
                    owner.methods[function.name] = function
        return functions, classes

    @cached_property
    def module_classes(self) -> FrozenSet[ast.ClassDef]:
        """Classes of the module that are models: a base is ``torch.nn.Module`` or another class of
        ``torch.nn``, a Lightning module, or such a class of the module (by binding)."""
        classes = list(self._definitions[1].values())
        found: Set[ast.ClassDef] = set()
        changed = True
        while changed:
            changed = False
            for cls in classes:
                if cls.node not in found and any(
                    self.defined_class(base) in found
                    or any(torch_api.is_module_constructor(q) or is_lightning_module(q) for q in self.qualified_names(base))
                    for base in cls.node.bases
                ):
                    found.add(cls.node)
                    changed = True
        return frozenset(found)

    def defined_class(self, node: ast.expr) -> Optional[ast.ClassDef]:
        """The class of the module a name refers to, by binding: of the ``class`` statements of that
        name in the binding's scope, the last one before the name where the scope itself reads it
        (a base is read when its subclass is defined), else the last one, as :meth:`definition`
        takes the last ``def`` (a function's body runs later)."""
        if not isinstance(node, ast.Name):
            return None
        scope = self.scope_at(node)
        definition = scope.resolve(node.id)
        classes = [
            child.node for child in definition.scope.children
            if isinstance(child.node, ast.ClassDef) and child.node.name == node.id
        ]
        if scope is definition.scope or scope.is_class:
            before = [cls for cls in classes if (cls.lineno, cls.col_offset) < (node.lineno, node.col_offset)]
            return before[-1] if before else None
        return classes[-1] if classes else None

    @property
    def all_functions(self) -> List[Function]:
        return list(self._definitions[0].values())

    def function(self, node: ast.AST) -> Optional[Function]:
        return self._definitions[0].get(id(node))

    def function_of_scope(self, scope: Scope) -> Optional[Function]:
        return self._definitions[0].get(id(scope.node))

    def innermost_function(self, node: ast.AST) -> Optional[Function]:
        """The function whose body ``node`` is in (through lambdas, comprehensions and class bodies)."""
        scope: Optional[Scope] = self.scope_at(node)
        while scope is not None:
            found = self.function_of_scope(scope)
            if found is not None:
                return found
            scope = scope.parent
        return None

    def definition(self, binding: Binding) -> Optional[Function]:
        """The ``def`` that binds this name in its scope, if one does (the last one)."""
        return self._definitions_by_scope.get(id(binding.scope), {}).get(binding.name)

    @cached_property
    def _definitions_by_scope(self) -> Dict[int, Dict[str, Function]]:
        """For each scope (by ``id``), the last ``def`` of each name among its children."""
        found: Dict[int, Dict[str, Function]] = {}
        for function in self._definitions[0].values():
            parent = function.scope.parent
            if parent is not None and isinstance(function.node, FUNCTIONS):
                found.setdefault(id(parent), {})[function.name] = function
        return found

    def called_definition(self, name: ast.Name) -> Optional[Function]:
        """The ``def`` a read of ``name`` reaches, by binding. Where the scope that binds it reads it
        itself (module-level code, a notebook's cells one after another), the last ``def`` of that
        name before the read, as the code runs top to bottom; read from another scope (a function's
        body runs later), the last one, as :meth:`definition` takes it."""
        binding = self.scope_at(name).resolve(name.id)
        if self.scope_at(name) is not binding.scope:
            return self.definition(binding)
        before = [
            function for function in self._every_definition_by_scope.get(id(binding.scope), {}).get(binding.name, [])
            if position(function.node) < position(name)
        ]
        return before[-1] if before else None

    @cached_property
    def _every_definition_by_scope(self) -> Dict[int, Dict[str, List[Function]]]:
        """For each scope (by ``id``), every ``def`` of each name among its children, in source order."""
        found: Dict[int, Dict[str, List[Function]]] = {}
        for function in sorted(self._definitions[0].values(), key=lambda f: position(f.node)):
            parent = function.scope.parent
            if parent is not None and isinstance(function.node, FUNCTIONS):
                found.setdefault(id(parent), {}).setdefault(function.name, []).append(function)
        return found

    def callee(self, call: ast.Call) -> Optional[Function]:
        """The function of this module a call calls, by binding: ``f(x)`` (the ``def`` it reaches:
        :meth:`called_definition`), and ``self.m(x)`` in a method of the class (or of a class of the
        module it derives from)."""
        func = call.func
        if isinstance(func, ast.Name):
            return self.called_definition(func)
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            place = self.place(func.value)
            if place is not None and place.binding.name == "self" and not place.path and place.binding.scope.is_class:
                return self._method(place.binding.scope.node, func.attr)
        return None

    def _method(self, node: ast.AST, name: str, seen: FrozenSet[int] = frozenset()) -> Optional[Function]:
        owner = self._definitions[1].get(id(node))
        if owner is None or id(node) in seen:
            return None
        if name in owner.methods:
            return owner.methods[name]
        for base in owner.node.bases:
            defined = self.defined_class(base)
            if defined is not None:
                found = self._method(defined, name, seen | {id(node)})
                if found is not None:
                    return found
        return None

    @cached_property
    def call_sites(self) -> List[CallSite]:
        """Every call of the module, in source order, with its callee resolved by binding."""
        sites: List[CallSite] = []
        walker = _CallWalker(self, sites)
        walker.visit(self.tree)
        for site in sites:
            site.callee = self.callee(site.node)
            if site.callee is not None:
                site.callee.calls.append(site)
        return sites

    @cached_property
    def site_of(self) -> Dict[int, CallSite]:
        return {id(site.node): site for site in self.call_sites}

    # Where gradients are off.

    @cached_property
    def _imported(self) -> Dict[Binding, Set[str]]:
        """Each binding an import makes, and the dotted names it binds."""
        found: Dict[Binding, Set[str]] = {}
        statements: List[Union[ast.Import, ast.ImportFrom]] = [*self.nodes(ast.Import), *self.nodes(ast.ImportFrom)]
        for statement in statements:
            scope = self.scope_at(statement)
            table = ImportTable.from_imports([statement])
            for local, names in table.bindings.items():
                found.setdefault(scope.resolve(local), set()).update(names)
        return found

    @cached_property
    def _other_bindings(self) -> List[Tuple[str, ast.AST]]:
        """Each name the module binds other than by assigning it, with the node it is bound at (an
        import's statement, for an alias)."""
        found: List[Tuple[str, ast.AST]] = []
        for node in ast.walk(self.tree):
            if isinstance(node, OTHER_BINDINGS):
                bound = getattr(node, "asname", None) or getattr(node, "name", None) or getattr(node, "rest", None)
                if bound is not None:
                    found.append((str(bound), (self.parent(node) or node) if isinstance(node, ast.alias) else node))
        return found

    @cached_property
    def names_bound_otherwise(self) -> FrozenSet[str]:
        """The names the module binds anywhere other than by assigning them: by a ``def``, a class,
        an import, an ``except ... as`` or a ``match`` pattern (which bind no ``Name`` node)."""
        return frozenset(spelled for name, _ in self._other_bindings for spelled in (name, name.split(".")[0]))

    @cached_property
    def _bindings_made_otherwise(self) -> FrozenSet[Binding]:
        return frozenset(self.scope_at(where).resolve(name.split(".")[0]) for name, where in self._other_bindings)

    def bound_otherwise(self, binding: Binding) -> bool:
        """Whether ``binding`` is also made other than by assigning its name (see
        :attr:`names_bound_otherwise`, which goes by spelling): a function's local ``data`` is not
        the module's ``from torch.utils import data``."""
        return binding in self._bindings_made_otherwise

    def binders(self, binding: Binding) -> List[ast.AST]:
        """Every node that makes ``binding``: a name stored or deleted (by an assignment, a loop, a
        ``with``, a walrus, a ``del``), and each ``def``, class, import statement, ``except ... as``
        or ``match`` pattern binding it."""
        found: List[ast.AST] = [name for name in self.uses(binding) if not isinstance(name.ctx, ast.Load)]
        found.extend(
            where for name, where in self._other_bindings
            if name.split(".")[0] == binding.name and self.scope_at(where).resolve(binding.name) == binding
        )
        return found

    def is_builtin(self, node: ast.AST, names: Iterable[str]) -> bool:
        """Whether ``node`` is a name of one of the builtins ``names`` that no scope of the module
        rebinds (``print``, ``len``: not a local ``len = torch.sum``, nor a module's ``def len``)."""
        if not (isinstance(node, ast.Name) and node.id in names):
            return False
        binding = self.scope_at(node).resolve(node.id)
        return node.id not in binding.scope.bound and node.id not in self.names_bound_otherwise

    @cached_property
    def _bound_otherwise(self) -> Set[Binding]:
        """Bindings that something other than an import also binds (an assignment, a ``def``)."""
        found: Set[Binding] = set()
        imported = {binding.name for binding in self._imported}
        for name in self.nodes(ast.Name):
            if name.id in imported and not isinstance(name.ctx, ast.Load):
                found.add(self.scope_at(name).resolve(name.id))
        for function in self.all_functions:
            if function.scope.parent is not None and function.name in imported:
                found.add(function.scope.parent.resolve(function.name))
        return found

    def resolved_names(self, node: ast.AST) -> FrozenSet[str]:
        """The qualified names of a name or attribute chain, by binding: ``F.relu`` is
        ``torch.nn.functional.relu`` where ``F`` is bound by ``import torch.nn.functional as F``; a
        name no scope binds may come from a star import (``from torch import *``), and an unbound
        ``torch`` is torch (:data:`torch_api.TORCH_PACKAGE`), under a star import or not (a module
        that reads the name without binding it runs where something else did: a notebook's earlier
        cell, the caller's ``exec``); a name bound other than by
        an import (a parameter, a local function, an assignment) has none, and one bound both ways
        has its own name among them too (it may be either)."""
        dotted = ast_full_name(node)
        if dotted is None or not self.qualified_names(node):
            return frozenset()
        head, _, rest = dotted.partition(".")
        tail = "." + rest if rest else ""
        binding = self.scope_at(node).resolve(head)
        found = {qualified + tail for qualified in self._imported.get(binding, ())}
        if found and binding in self._bound_otherwise:
            found.add(dotted)
        if head not in binding.scope.bound:
            if head == torch_api.TORCH_PACKAGE and not found:
                return frozenset({dotted})
            found.update(f"{module}.{dotted}" for module in self.imports.star_modules)
        return frozenset(found)

    @cached_property
    def _calls_by_span(self) -> Dict[Tuple[int, int, int, int], ast.Call]:
        return {self.span(call): call for call in self.calls()}

    def call_at(self, span: Tuple[int, int, int, int]) -> Optional[ast.Call]:
        """The call at ``span`` (see :meth:`span`), if one is there."""
        return self._calls_by_span.get(span)

    @cached_property
    def _names_by_span(self) -> Dict[Tuple[int, int, int, int], ast.AST]:
        return {self.span(node): node for node in [*self.nodes(ast.Name), *self.nodes(ast.Attribute)]}

    def names_at(self, span: Tuple[int, int, int, int]) -> FrozenSet[str]:
        """:meth:`resolved_names` of the name or attribute chain at ``span`` (see :meth:`span`), and
        ``builtins.open`` for a builtin no scope rebinds."""
        node = self._names_by_span.get(span)
        if node is None:
            return frozenset()
        if isinstance(node, ast.Name) and node.id in BUILTIN_NAMES and node.id not in self.scope_at(node).resolve(node.id).scope.bound:
            return frozenset({f"builtins.{node.id}"}) | self.resolved_names(node)
        return self.resolved_names(node)

    def turns_grad_off(self, expression: ast.AST) -> bool:
        """``torch.no_grad()``, ``torch.no_grad`` (a decorator), ``torch.inference_mode()``,
        ``torch.set_grad_enabled(False)``, under any import form. ``set_grad_enabled(flag)`` with a
        flag only known at run time counts too: the code manages grad mode itself."""
        call = expression if isinstance(expression, ast.Call) else None
        names = self.resolved_names(call.func if call is not None else expression)
        if not names and call is not None and not call.args and not call.keywords and _spells_a_grad_off_context(call.func):
            return True
        if names and names <= torch_api.GRAD_OFF:
            return call is None or not call.args or not is_false_constant(call.args[0])
        if call is not None and names and names <= torch_api.SET_GRAD_ENABLED and call.args:
            value = call.args[0]
            return not (isinstance(value, ast.Constant) and value.value is True)
        return False

    def switches_grad_off(self, statement: ast.stmt) -> bool:
        """``torch.set_grad_enabled(False)`` as a statement (with a flag only known at run time
        too, as :meth:`turns_grad_off` counts it): what follows it runs without gradients."""
        if not (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)):
            return False
        call = statement.value
        names = self.resolved_names(call.func)
        return bool(names) and names <= torch_api.SET_GRAD_ENABLED and self.turns_grad_off(call)

    @cached_property
    def grad_off_helpers(self) -> FrozenSet[Function]:
        """Functions of the module that turn gradients off for what they wrap: their body names a
        grad-off context (``return torch.inference_mode()``), or another such function."""
        mentions: Dict[Function, List[ast.AST]] = {
            function: [
                node for statement in function.node.body for node in ast.walk(statement)
                if isinstance(node, (ast.Call, ast.Attribute, ast.Name))
            ]
            for function in self.all_functions if self.innermost_function(function.node) is None
        }
        helpers = {function for function, nodes in mentions.items() if any(map(self.turns_grad_off, nodes))}
        changed = True
        while changed:
            changed = False
            for function, nodes in mentions.items():
                if function not in helpers and any(
                    isinstance(node, ast.Name) and self.definition(self.scope_at(node).resolve(node.id)) in helpers
                    for node in nodes
                ):
                    helpers.add(function)
                    changed = True
        return frozenset(helpers)

    def guarded_function(self, function: Function) -> bool:
        """Whether a decorator runs the function's body with gradients off: a grad-off decorator,
        a function of this module that turns gradients off (not the function itself), or an
        imported decorator whose name says it does (``smart_inference_mode``)."""
        for decorator in function.node.decorator_list:
            if self.turns_grad_off(decorator):
                return True
            target = decorator.func if isinstance(decorator, ast.Call) else decorator
            if isinstance(target, ast.Name):
                helper = self.definition(self.scope_at(target).resolve(target.id))
                if helper is not None and helper is not function and helper in self.grad_off_helpers:
                    return True
            name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else None
            if name is not None and any(word in name for word in GRAD_OFF_WORDS):
                return True
        return False

    def guarded_with(self, node: Union[ast.With, ast.AsyncWith]) -> bool:
        return any(self.turns_grad_off(item.context_expr) for item in node.items)

    @cached_property
    def classes_without_grad(self) -> FrozenSet[ast.ClassDef]:
        """Model classes of the module whose ``forward`` runs without gradients: it always does
        (:attr:`runs_without_grad`), or each statement of its body is a grad-off ``with`` block,
        an ``assert``, a docstring or ``pass``. Calling an instance builds no graph."""
        found = set()
        for cls in self._definitions[1].values():
            forward = cls.methods.get("forward")
            if forward is None or cls.node not in self.module_classes:
                continue
            if forward in self.runs_without_grad or all(
                (isinstance(statement, (ast.With, ast.AsyncWith)) and self.guarded_with(statement))
                or isinstance(statement, (ast.Assert, ast.Pass))
                or (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))
                for statement in forward.node.body
            ):
                found.add(cls.node)
        return frozenset(found)

    def _constructs_module(self, value: ast.expr) -> bool:
        """As :meth:`Survey._constructs_module`, and an instance of one of the module's own model
        classes (:attr:`module_classes`: ``features = FeatureNet(backbone)`` after ``class
        FeatureNet(nn.Module)``), however the code goes on to use it."""
        return super()._constructs_module(value) or self.class_built(value) in self.module_classes

    def class_built(self, value: ast.expr) -> Optional[ast.ClassDef]:
        """The class of the module that ``value`` builds an instance of (``Net(cfg).cuda().eval()``)."""
        built = module_of(value)
        return self.defined_class(built.func) if isinstance(built, ast.Call) else None

    @cached_property
    def runs_without_grad(self) -> FrozenSet[Function]:
        """Functions whose body always runs with gradients off: a grad-off decorator, a method of an
        instance whose constructor switched them off (:attr:`_after_constructor_switch`), or every
        call of it in the module (at least one) made with gradients off, lexically or from a
        function that always runs with them off (a fixed point over the call graph)."""
        found = {function for function in self.all_functions if self.guarded_function(function)}
        found |= self._after_constructor_switch
        self.call_sites
        changed = True
        while changed:
            changed = False
            for function in self.all_functions:
                if function not in found and function.calls and all(
                    site.guarded or (site.caller is not None and site.caller in found) for site in function.calls
                ):
                    found.add(function)
                    changed = True
        return frozenset(found)

    @cached_property
    def _after_constructor_switch(self) -> FrozenSet[Function]:
        """The instance methods of a class whose ``__init__`` switches gradients off for the rest of
        the program (a ``torch.set_grad_enabled(False)`` statement of its own body, not in a branch,
        with no ``return`` before it and nothing before it that may run a method of the instance: a
        call of a method of the class on ``self``, or ``self`` handed to a call), in a module that
        never switches them on again (``set_grad_enabled`` given anything but ``False``,
        ``enable_grad`` in any form): they run on an instance, after its constructor."""
        if any(self._may_switch_grad_on(node) for node in [*self.nodes(ast.Call), *self.nodes(ast.Attribute), *self.nodes(ast.Name)]):
            return frozenset()
        found: Set[Function] = set()
        for cls in self._definitions[1].values():
            constructor = cls.methods.get("__init__")
            if constructor is not None and self._switches_grad_off_for_good(cls, constructor):
                found.update(method for name, method in cls.methods.items() if name != "__init__" and method.receiver is not None)
        return frozenset(found)

    def _switches_grad_off_for_good(self, cls: Class, constructor: Function) -> bool:
        """Whether the constructor's own body switches gradients off before anything could run a
        method of the instance: before it, no ``return``, no read of ``self`` but of an attribute
        that is not a method (``self.net.eval()``, not ``self.detect``, ``warm = self`` or
        ``Thread(target=self.detect)``), and no ``super().__init__()`` where a base is a class of
        the module (which may call an overridden method). Grad mode is per thread: in a module that
        spells threads, executors or a web server, no constructor's switch counts."""
        if self.spells(THREAD_WORDS):
            return False
        receiver = constructor.receiver
        bases_here = any(self.defined_class(base) is not None for base in cls.node.bases)
        for statement in constructor.node.body:
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call) and self.switches_grad_off(statement):
                return is_false_constant(statement.value.args[0])
            for node in ast.walk(statement):
                if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom)):
                    return False
                if isinstance(node, ast.Name) and node.id == receiver:
                    parent = self.parent(node)
                    if not isinstance(parent, ast.Attribute) or parent.attr in cls.methods:
                        return False
                if bases_here and isinstance(node, ast.Call) and ast_dotted_name(node.func) == "super":
                    return False
        return False

    def may_switch_grad_on_in(self, root: ast.AST) -> bool:
        """Whether anything in ``root`` may switch gradients on (:meth:`_may_switch_grad_on`)."""
        return any(self._may_switch_grad_on(node) for node in ast.walk(root) if isinstance(node, (ast.Call, ast.Attribute, ast.Name)))

    def _may_switch_grad_on(self, node: ast.AST) -> bool:
        """``enable_grad`` in any form (a call, a decorator, an alias), or ``set_grad_enabled`` called
        with anything but ``False``."""
        if isinstance(node, ast.Call):
            names = self.resolved_names(node.func)
            return bool(names) and names <= torch_api.SET_GRAD_ENABLED and not (node.args and is_false_constant(node.args[0]))
        names = self.resolved_names(node)
        return bool(names) and names <= torch_api.GRAD_ON

    @cached_property
    def _grad_off_regions(self) -> List[Tuple[Tuple[int, int], Tuple[int, int]]]:
        blocks: List[Union[ast.With, ast.AsyncWith]] = [*self.nodes(ast.With), *self.nodes(ast.AsyncWith)]
        regions: List[ast.AST] = [block for block in blocks if self.guarded_with(block)]
        regions += [function.node for function in self.runs_without_grad]
        spans = [(start, end) for start, end in (((a, b), (c, d)) for a, b, c, d in map(self.span, regions))]
        return sorted([*spans, *((start, end) for start, end, _ in self._switched_off_regions)])

    @cached_property
    def _switched_off_regions(self) -> List[Tuple[Tuple[int, int], Tuple[int, int], bool]]:
        """Where a ``torch.set_grad_enabled(...)`` statement that may switch gradients off did: the
        rest of its block of statements, up to a statement that may switch them on again; with
        whether the switch is certain there (``False``, or a flag in a function's or the module's
        own body, as a whole function's grad mode is decided) rather than a runtime flag in a
        nested block (``set_grad_enabled(phase == "val")`` in a loop over phases)."""
        spans = []
        for owner, block in self._statement_blocks():
            top = isinstance(owner, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)) and block is owner.body
            index = 0
            while index < len(block):
                if not self.switches_grad_off(block[index]):
                    index += 1
                    continue
                call = cast(ast.Call, cast(ast.Expr, block[index]).value)
                certain = top or is_false_constant(call.args[0])
                end = index + 1
                while end < len(block) and not any(self._may_switch_grad_on(node) for node in ast.walk(block[end])):
                    end += 1
                if end > index + 1:
                    spans.append((self.span(block[index])[2:], self.span(block[end - 1])[2:], certain))
                index = end
        return spans

    def switched_off_at(self, node: ast.AST, runtime_flags: bool = True) -> bool:
        """Whether ``node`` runs after a ``torch.set_grad_enabled(False)`` statement of its block of
        statements, or of a block around it, before anything may switch gradients on again;
        ``runtime_flags``: also after one whose flag is known only at run time, in a nested block
        (where a phase loop's training phase runs with gradients on)."""
        if not self._switched_off_regions:
            return False
        place = self.span(node)[:2]
        return any(start <= place < end and (certain or runtime_flags) for start, end, certain in self._switched_off_regions)

    def _statement_blocks(self) -> Iterator[Tuple[ast.AST, List[ast.stmt]]]:
        """Every list of statements of the module, with the node it belongs to: a module's, a
        function's or a loop's body, an ``else``, a ``finally``, an ``except`` clause's body."""
        if "set_grad_enabled" not in self.source:
            return
        for node in ast.walk(self.tree):
            for name in STATEMENT_BLOCKS:
                block = getattr(node, name, None)
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                    yield node, block

    def gradients_off_at(self, line: int, column: int) -> bool:
        """Whether code at this place (line from 1, column in characters from 0) always runs with
        gradients off: inside a grad-off ``with`` block, in a function that always runs with
        them off (:attr:`runs_without_grad`), or after a ``torch.set_grad_enabled(False)``
        statement in the same block of statements (a function's, a loop's body), up to the first
        statement of the block that may switch them on again (:meth:`_may_switch_grad_on`: a test
        loop after the switch in an epoch loop whose body starts with ``set_grad_enabled(True)``)."""
        return any(start <= (line, column) < end for start, end in self._grad_off_regions)

    @cached_property
    def returns_forward_output(self) -> FrozenSet[Function]:
        """Functions that return a model's forward output, or a value computed from one (an
        attribute, an item, arithmetic): ``return self.model(x).logits``, ``out = model(x);
        return out``, or the value of another such function (a fixed point over the call graph)."""
        return self.functions_returning_outputs(lambda call: True)

    def functions_returning_outputs(self, counts: Callable[[ast.Call], bool]) -> FrozenSet[Function]:
        """:attr:`returns_forward_output`, where only the forward calls ``counts`` accepts count."""
        if not self.modules:
            return frozenset()
        own: Dict[Function, List[ast.AST]] = {}
        for node in (*self.nodes(ast.Assign), *self.nodes(ast.Return)):
            function = self.innermost_function(node)
            if function is not None:
                own.setdefault(function, []).append(node)
        found: Set[Function] = set()
        changed = True
        while changed:
            changed = False
            for function, nodes in own.items():
                if function not in found and self._returns_forward_output(nodes, found, counts):
                    found.add(function)
                    changed = True
        return frozenset(found)

    def _returns_forward_output(self, own: Sequence[ast.AST], found: Set[Function], counts: Callable[[ast.Call], bool]) -> bool:
        """Whether a ``return`` of the function returns a forward output: a name some assignment
        binds to one counts, unless another turns it into a value without history (``loss =
        loss.item()`` before ``return loss``)."""
        released = {
            target.id for node in own if isinstance(node, ast.Assign) and _history_free(node.value)
            for target in node.targets if isinstance(target, ast.Name)
        }
        outputs: Set[str] = set()
        changed = True
        while changed:
            changed = False
            for node in own:
                if isinstance(node, ast.Assign) and self._forward_output(node.value, outputs, found, counts):
                    for target in node.targets:
                        if isinstance(target, ast.Name) and target.id not in outputs | released:
                            outputs.add(target.id)
                            changed = True
        return any(
            isinstance(node, ast.Return) and node.value is not None and self._forward_output(node.value, outputs, found, counts)
            for node in own
        )

    def _forward_output(self, node: ast.expr, outputs: Set[str], found: Set[Function], counts: Callable[[ast.Call], bool]) -> bool:
        if isinstance(node, ast.Name):
            return node.id in outputs
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            if isinstance(node, ast.Attribute) and node.attr in torch_api.NON_TENSOR_ATTRIBUTES:
                return False
            return self._forward_output(node.value, outputs, found, counts)
        if isinstance(node, ast.BinOp):
            return self._forward_output(node.left, outputs, found, counts) or self._forward_output(node.right, outputs, found, counts)
        if isinstance(node, ast.Call):
            func = node.func
            if ast_dotted_name(func) in self.modules:
                return counts(node)
            if isinstance(func, ast.Attribute) and func.attr == "forward" and ast_dotted_name(func.value) in self.modules:
                return counts(node)
            if not found:
                return False
            site = self.site_of.get(id(node))
            return site is not None and site.callee in found
        return False

    @cached_property
    def forward_output_calls(self) -> FrozenSet[Tuple[int, int, int, int]]:
        """Where the module calls a function of its own that returns a forward output (the span of
        each such call's ``func``, as :meth:`span` gives it)."""
        return self.calls_of(self.returns_forward_output)

    def calls_of(self, functions: FrozenSet[Function]) -> FrozenSet[Tuple[int, int, int, int]]:
        """The spans of the ``func`` of every call of one of ``functions``."""
        if not functions:
            return frozenset()
        return frozenset(self.span(site.node.func) for site in self.call_sites if site.callee in functions)

    @cached_property
    def has_main_guard(self) -> bool:
        """Whether the module-level code has an ``if __name__ == "__main__":`` block: a program."""
        return any(isinstance(statement, ast.If) and is_main_guard(statement.test) for statement in self.tree.body)

    @cached_property
    def parses_the_command_line(self) -> bool:
        """Whether the module-level code (not a function's) parses the command line
        (``opt = parser.parse_args()``): a script, run as a program."""
        return parses_the_command_line(self.tree)

    def under_main_guard(self, node: ast.AST) -> bool:
        """Whether ``node`` is inside an ``if __name__ == "__main__":`` block."""
        current = self.parent(node)
        while current is not None:
            if isinstance(current, ast.If) and is_main_guard(current.test):
                return True
            current = self.parent(current)
        return False

    @cached_property
    def _spelt(self) -> str:
        """What the module's code (not its comments or docstrings) spells, in lower case: names,
        attributes, parameters, keywords, imports (modules and names) and strings."""
        return self._spelling([node for kind in SPELLING_NODES for node in self.nodes(kind)])

    def nodes_spelling(self, words: Iterable[str]) -> List[ast.AST]:
        """The nodes of the module's code whose spelling (as :meth:`spells` reads it) holds any of
        ``words`` (lower case)."""
        found = tuple(words)
        return [
            node for kind in SPELLING_NODES for node in self.nodes(kind)
            if any(word in self._spelling([node]) for word in found)
        ]

    def _spelling(self, nodes: Iterable[ast.AST]) -> str:
        """What ``nodes`` spell (see :attr:`_spelt`), in lower case, one part a line."""
        spelt: List[str] = []
        for node in nodes:
            if isinstance(node, ast.Attribute):
                spelt.append(node.attr)
            elif isinstance(node, ast.Name):
                spelt.append(node.id)
            elif isinstance(node, (ast.arg, ast.keyword)):
                spelt.append(node.arg or "")
            elif isinstance(node, ast.alias):
                spelt += [node.name, node.asname or ""]
            elif isinstance(node, ast.ImportFrom):
                spelt.append(node.module or "")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and not isinstance(self.parent(node), ast.Expr):
                spelt.append(node.value)
        return "\n".join(spelt).lower()

    def spells(self, words: Iterable[str]) -> bool:
        """Whether the module's code spells any of ``words`` (lower case) in a name, attribute,
        keyword, import or string."""
        return any(word in self._spelt for word in words)

    @cached_property
    def mentions_accelerator(self) -> bool:
        """Whether the module's code spells a way to put anything on an accelerator
        (:func:`_spells_an_accelerator`). Where it spells none, the models it builds run on the CPU."""
        return _spells_an_accelerator(self._spelt, self.nodes(ast.Attribute))

    def names_the_cpu(self, location: ast.expr) -> bool:
        """Whether a ``map_location`` (or another device argument) puts everything on the CPU:
        ``"cpu"``, ``torch.device("cpu")`` or ``lambda storage, loc: storage`` (each storage left
        where deserialisation puts it, on the CPU)."""
        if isinstance(location, ast.Call) and self.resolved_names(location.func) == {"torch.device"} and location.args:
            location = location.args[0]
        if isinstance(location, ast.Constant):
            return isinstance(location.value, str) and location.value.split(":")[0] == "cpu"
        if isinstance(location, ast.Lambda):
            parameters = location.args.args
            return bool(parameters) and isinstance(location.body, ast.Name) and location.body.id == parameters[0].arg
        return False

    def spells_an_accelerator(self, node: ast.AST) -> bool:
        """Whether the code of ``node`` (a statement, a call, a class) spells a way to put anything on
        an accelerator, as :attr:`mentions_accelerator` reads the whole module."""
        parts = list(ast.walk(node))
        return _spells_an_accelerator(self._spelling(parts), (part for part in parts if isinstance(part, ast.Attribute)))

    @cached_property
    def training_functions(self) -> FrozenSet[Function]:
        """Functions of the module that train: their body calls ``backward``, an optimizer ``step`` or
        ``torch.autograd.grad``, or a function of the module that trains (a fixed point over the call
        graph)."""
        found = {site.caller for site in self.call_sites if site.caller is not None and self.needs_gradients(site.node)}
        changed = True
        while changed:
            changed = False
            for site in self.call_sites:
                if site.caller is not None and site.caller not in found and site.callee in found:
                    found.add(site.caller)
                    changed = True
        return frozenset(found)

    @cached_property
    def loads_weights(self) -> bool:
        """Whether the module loads trained weights: ``torch.load``, ``load_state_dict``, ``from_pretrained``."""
        return bool(self.method_calls("load_state_dict", "from_pretrained")) or any(
            self.qualified_names(call.func) & torch_api.LOADERS and self.resolved_names(call.func) & torch_api.LOADERS
            for call in self.calls()
        )

    @cached_property
    def exporting_scopes(self) -> FrozenSet[ast.AST]:
        """The functions (and the module, for its own code) that export a model: they call
        ``torch.onnx.export``, ``torch.jit.trace`` or another of
        :data:`~gpulint.semantic.torch_api.EXPORTERS`, by binding (a name that may also be the
        file's own ``export`` is not one)."""
        found: Set[ast.AST] = set()
        for call in self.calls():
            names = self.resolved_names(call.func) if self.qualified_names(call.func) & torch_api.EXPORTERS else frozenset()
            if names and names <= torch_api.EXPORTERS:
                function = self.innermost_function(call)
                found.add(function.node if function is not None else self.tree)
        return frozenset(found)

    @cached_property
    def trains(self) -> bool:
        """Whether anything in the module calls ``backward``, an optimizer ``step`` or ``torch.autograd.grad``."""
        return any(self.needs_gradients(site.node) for site in self.call_sites)

    @cached_property
    def builds_an_optimizer(self) -> bool:
        """Whether the module builds one of torch's optimizers (``torch.optim.SGD(...)``) that
        something may use: code that sets up training, even where the steps run in imported
        helpers. Not one bound to a name that nothing reads but the constructor of another such
        object nothing uses in turn (a test script's copied ``optim = Adam(...)`` and
        ``scheduler = StepLR(optim, ...)``, never stepped)."""
        return any(self._builds_from_torch_optim(call) and self._may_be_used(call, 0) for call in self.calls())

    def _builds_from_torch_optim(self, call: ast.Call) -> bool:
        return any(name.startswith(torch_api.OPTIMIZER_NAMESPACE) for name in self.resolved_names(call.func))

    def _may_be_used(self, built: ast.Call, depth: int) -> bool:
        """Whether what ``built`` makes may be used: it is not bound by itself to a plain name, or a
        read of that name is anything but an argument of another optimizer-namespace construction
        that is itself unused."""
        statement = self.parent(built)
        if depth > 3 or not (
            isinstance(statement, ast.Assign) and statement.value is built and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            return True
        target = statement.targets[0]
        binding = self.scope_at(target).resolve(target.id)
        if binding.scope.is_class or binding.name in binding.scope.parameters:
            return True
        for use in self.uses(binding):
            if not isinstance(use.ctx, ast.Load):
                continue
            holder = self.parent(use)
            if not (
                isinstance(holder, ast.Call) and use in holder.args and self._builds_from_torch_optim(holder)
                and not self._may_be_used(holder, depth + 1)
            ):
                return True
        return False

    def needs_gradients(self, call: ast.Call) -> bool:
        """``x.backward()``, ``x.step()``, ``torch.autograd.grad(...)`` (also imported by name:
        ``from torch.autograd import grad``), or a call that draws the autograd graph
        (``make_dot(logits)``: :data:`~gpulint.semantic.torch_api.GRAPH_READERS`)."""
        func = call.func
        if self.resolved_names(func) & torch_api.GRAPH_READERS:
            return True
        if isinstance(func, ast.Name):
            return bool(self.qualified_names(func) & torch_api.AUTOGRAD_ENTRY_POINTS) and bool(
                self.resolved_names(func) & torch_api.AUTOGRAD_ENTRY_POINTS
            )
        return isinstance(func, ast.Attribute) and (
            func.attr in TRAINING_METHODS or (func.attr == "grad" and self.resolved_names(func) == {"torch.autograd.grad"})
        )

    def positional_arguments(self, site: CallSite) -> Iterator[Tuple[int, ast.expr]]:
        """``(index, argument)`` for the arguments a call fills its callee's positional parameters
        with: the positional ones, up to the first ``*args``, then the keywords that name one of the
        callee's positional parameters (``process(model=model)``) after the positional ones, unless
        a ``*args`` may have filled it."""
        starred = False
        for index, argument in enumerate(site.node.args):
            if isinstance(argument, ast.Starred):
                starred = True
                break
            yield index, argument
        if starred or site.callee is None:
            return
        parameters = site.callee.positional
        for keyword in site.node.keywords:
            if keyword.arg in parameters and parameters.index(keyword.arg) >= len(site.node.args):
                yield parameters.index(keyword.arg), keyword.value


def _spells_a_grad_off_context(func: ast.expr) -> bool:
    """``torch.no_grad`` or ``torch.inference_mode`` read as an attribute of a value no import binds,
    called with nothing: ``torch = self.torch`` (a module imported lazily in a constructor) and then
    ``with torch.no_grad():``. Only torch's contexts are so spelled, and any library's ``no_grad()``
    turns its gradients off."""
    return isinstance(func, ast.Attribute) and func.attr in GRAD_OFF_WORDS


def _spells_an_accelerator(spelt: str, attributes: Iterable[ast.Attribute]) -> bool:
    """Whether code that spells ``spelt`` (lower case) and reads ``attributes`` has a way to an
    accelerator: a ``.to`` attribute, one of :data:`~gpulint.semantic.torch_api.ACCELERATOR_WORDS`,
    or one of :data:`~gpulint.semantic.torch_api.ACCELERATOR_TOKENS` as a whole part."""
    return (
        any(attribute.attr == "to" for attribute in attributes) or any(word in spelt for word in torch_api.ACCELERATOR_WORDS)
        or bool(frozenset(re.split(r"[^a-z0-9]+", spelt)) & torch_api.ACCELERATOR_TOKENS)
    )


def _history_free(value: ast.expr) -> bool:
    """A call of a tensor method whose result carries no autograd history (``x.item()``,
    ``x.detach()``: :data:`~gpulint.semantic.torch_api.HISTORY_FREE_METHODS`)."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and (
        value.func.attr in torch_api.HISTORY_FREE_METHODS
    )


def parses_the_command_line(tree: ast.Module) -> bool:
    """Whether the module-level code of ``tree`` (not a function's) parses the command line
    (``opt = parser.parse_args()``)."""
    return any(
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in torch_api.COMMAND_LINE_PARSES
        for node in own_nodes(tree.body)
    )


def is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"``, either way round."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [side for side in sides if isinstance(side, ast.Name) and side.id == "__name__"]
    strings = [side for side in sides if isinstance(side, ast.Constant) and side.value == "__main__"]
    return len(names) == 1 and len(strings) == 1


class GradientWalker(Visitor):
    """Walks a module in source order, knowing the function each node is in and whether it runs with
    gradients off as the code around it shows (:meth:`grad_off`: ``guards`` counts the grad-off
    contexts and decorators around it); subclasses hear of each function entered and left."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self.guards = 0
        self.functions: List[Function] = []

    def enter_function(self, function: Function) -> None:
        """Called before the body of ``function`` is walked."""

    def leave_function(self, function: Function) -> None:
        """Called after the body of ``function`` is walked."""

    def _function(self, node: FunctionNode) -> None:
        function = self.model.function(node)
        assert function is not None
        for child in (*node.decorator_list, *node.args.defaults, *node.args.kw_defaults):
            if child is not None:
                self.visit(child)
        guarded = self.model.guarded_function(function)
        self.functions.append(function)
        self.enter_function(function)
        self.guards += guarded
        self.body(node.body)
        self.guards -= guarded
        self.leave_function(function)
        self.functions.pop()

    def body(self, statements: Sequence[ast.stmt]) -> None:
        for statement in statements:
            self.visit(statement)

    def grad_off(self, node: ast.AST, runtime_flags: bool = True) -> bool:
        """Whether ``node`` runs with gradients off as the code around it shows: under a grad-off
        context or decorator, or after a ``torch.set_grad_enabled(False)`` statement
        (:meth:`SemanticModel.switched_off_at`, ``runtime_flags`` as there)."""
        return self.guards > 0 or self.model.switched_off_at(node, runtime_flags)

    def visit_Module(self, node: ast.Module) -> None:
        self.body(node.body)

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def _with(self, node: Union[ast.With, ast.AsyncWith]) -> None:
        guarded = self.model.guarded_with(node)
        self.guards += guarded
        self.generic_visit(node)
        self.guards -= guarded

    visit_With = _with
    visit_AsyncWith = _with


class _CallWalker(GradientWalker):
    """Lists a module's calls in source order, with the function around each and whether the code
    around it shows gradients off (:attr:`CallSite.guarded`)."""

    def __init__(self, model: SemanticModel, sites: List[CallSite]) -> None:
        super().__init__(model)
        self.sites = sites

    def visit_Call(self, node: ast.Call) -> None:
        caller = self.functions[-1] if self.functions else None
        self.sites.append(CallSite(node, caller, self.grad_off(node, runtime_flags=False)))
        self.generic_visit(node)
