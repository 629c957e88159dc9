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
from typing import AbstractSet, DefaultDict, Dict, FrozenSet, Iterator, List, Optional, Set, Tuple, Type, TypeVar

from gpulint.semantic.torch_api import (
    FORWARD_METHODS, MODULE_METHODS, MODULE_RETURNING_METHODS, OTHER_FRAMEWORKS, TORCH_LIBRARIES,
    builds_history_free_metric, is_module_constructor,
)
from gpulint.semantic.import_table import ImportTable
from gpulint.semantic.visitor import SHARED_LEAVES

NodeType = TypeVar("NodeType", bound=ast.AST)

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
SCOPES = (*_FUNCTIONS, ast.Lambda, ast.ClassDef)
"""Nodes whose bodies run at another time than the code around them."""
_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_FUNCTION_TYPES, _SCOPE_TYPES, _LOOP_TYPES = frozenset(_FUNCTIONS), frozenset(SCOPES), frozenset(_LOOPS)
_NAMED_CONSTANTS: Dict[Optional[bool], str] = {True: "True", False: "False", None: "None"}
STATEMENT_BLOCKS = ("body", "orelse", "finalbody")
"""The fields of a node that hold a list of statements: a module's, a function's or a compound
statement's body, an ``else``, a ``finally`` (an ``except`` clause's body is its own node's)."""
_MOVING_METHODS = frozenset({"cuda", "to", "eval", "train", "half", "float", "bfloat16", "requires_grad_"})


def ast_full_name(node: ast.AST) -> Optional[str]:
    """The dotted name LibCST's ``get_full_name_for_node`` gives the same expression
    (``a.b`` for ``a.b``, ``a().b`` and ``a[0].b``; ``None.b`` for ``(x + y).b``)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, bool)):
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


def forward_model(call: ast.Call) -> ast.expr:
    """The model a forward call runs: ``model`` in ``model(x)``, ``model.forward(x)`` and
    ``model.inference(x)`` (:data:`~gpulint.semantic.torch_api.FORWARD_METHODS`)."""
    func = call.func
    return func.value if isinstance(func, ast.Attribute) and func.attr in FORWARD_METHODS else func


def argument_values(call: ast.Call) -> List[ast.expr]:
    """Every argument's value, positional, starred or keyword."""
    values = [arg.value if isinstance(arg, ast.Starred) else arg for arg in call.args]
    return values + [keyword.value for keyword in call.keywords]


def own_nodes(statements: List[ast.stmt]) -> Iterator[ast.AST]:
    """The nodes of ``statements`` that run with them: not those of the functions, lambdas and
    classes they define."""
    stack: List[ast.AST] = list(statements)
    while stack:
        node = stack.pop()
        if isinstance(node, SCOPES):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def module_of(node: ast.expr, methods: AbstractSet[str] = MODULE_RETURNING_METHODS) -> ast.expr:
    """``model`` in ``model.float().eval().to(device)``: ``node`` with the calls of ``methods`` (those
    that return the module they are called on) taken off its end."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in methods:
        node = node.func.value
    return node


def position(node: ast.AST) -> Tuple[int, int]:
    """Where ``node`` starts: (line, column), ordered as the source reads."""
    return (node.lineno, node.col_offset)  # type: ignore[attr-defined]


def is_false_constant(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is False


def is_falsy_constant(node: ast.AST) -> bool:
    """A constant a test takes as false: ``False``, ``None``, ``0`` or ``""``."""
    return isinstance(node, ast.Constant) and node.value in (False, None, 0, "") and not isinstance(node.value, float)


class _Walk:
    """What :attr:`Survey._walk` gathers."""

    def __init__(self) -> None:
        self.by_type: DefaultDict[type, List[ast.AST]] = defaultdict(list)
        self.in_loop: Set[int] = set()
        self.scope_of: Dict[int, ast.AST] = {}
        self.function_of: Dict[int, Optional[ast.AST]] = {}
        self.functions: List[ast.AST] = []
        self.parent: Dict[int, ast.AST] = {}


class Survey:
    """Facts about one module's ``ast``, each computed on first use."""

    def __init__(self, tree: ast.Module, source: str) -> None:
        self.tree = tree
        self.source = source

    @cached_property
    def _walk(self) -> "_Walk":
        """In one walk: nodes by type, the ids of the nodes inside a loop of their own scope, each
        node's parent, its scope (the innermost function, lambda, class or module around it) and its
        outermost function."""
        walk = _Walk()
        by_type, scope_of, function_of, parent, in_loop = walk.by_type, walk.scope_of, walk.function_of, walk.parent, walk.in_loop
        stack: List[Tuple[ast.AST, bool, ast.AST, Optional[ast.AST]]] = [(self.tree, False, self.tree, None)]
        push, pop = stack.append, stack.pop
        while stack:
            node, inside_loop, scope, function = pop()
            key = id(node)
            kind = type(node)
            by_type[kind].append(node)
            scope_of[key] = scope
            function_of[key] = function
            if inside_loop:
                in_loop.add(key)
            if kind in _SCOPE_TYPES:
                child_scope, child_loop = node, False
            else:
                child_scope, child_loop = scope, inside_loop or kind in _LOOP_TYPES
            body: Optional[Set[int]] = None
            if function is None and kind in _FUNCTION_TYPES:
                walk.functions.append(node)
                body = set(map(id, node.body))  # type: ignore[attr-defined]
            for field_name in node._fields:
                value = getattr(node, field_name, None)
                if type(value) is list:
                    children = value
                elif isinstance(value, ast.AST):
                    children = [value]
                else:
                    continue
                for child in children:
                    if isinstance(child, ast.AST) and type(child) not in SHARED_LEAVES:
                        parent[id(child)] = node
                        owner = function if body is None else node if id(child) in body else None
                        push((child, child_loop, child_scope, owner))
        return walk

    def parent(self, node: ast.AST) -> Optional[ast.AST]:
        """The node ``node`` is a child of (None for the module)."""
        return self._walk.parent.get(id(node))

    def block_of(self, statement: ast.AST) -> Optional[List[ast.stmt]]:
        """The list of statements that holds ``statement``; None where none does."""
        parent = self.parent(statement)
        for field in STATEMENT_BLOCKS:
            block = getattr(parent, field, None)
            if isinstance(block, list) and any(member is statement for member in block):
                return block
        return None

    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        """The nodes around ``node``, innermost first, up to the module."""
        parent = self.parent(node)
        while parent is not None:
            yield parent
            parent = self.parent(parent)

    def top_level_index(self, node: ast.AST) -> Optional[int]:
        """The index of the module's top-level statement ``node`` runs in, where it runs there (not
        in a function, lambda or class body, which runs when called)."""
        top = {id(statement): index for index, statement in enumerate(self.tree.body)}
        for around in [node, *self.ancestors(node)]:
            if id(around) in top:
                return top[id(around)]
            if isinstance(around, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                return None
        return None

    def nodes(self, node_type: Type[NodeType]) -> List[NodeType]:
        """Every node of exactly ``node_type``."""
        return self._walk.by_type.get(node_type, [])  # type: ignore[return-value]

    def in_loop(self, node: ast.AST) -> bool:
        """Whether ``node`` is part of a ``for`` or ``while`` statement of its own function (or
        class body, or module): no ``def``, ``lambda`` or ``class`` lies between them."""
        return id(node) in self._walk.in_loop

    def scope_of(self, node: ast.AST) -> ast.AST:
        """The innermost ``def``, ``lambda`` or ``class`` around ``node`` (the module if none); a
        scope node's own scope is the one around it."""
        return self._walk.scope_of[id(node)]

    def function_of(self, node: ast.AST) -> Optional[ast.AST]:
        """The outermost ``def`` whose body ``node`` is in; None for module-level code (class bodies,
        module-level lambdas, and the ``def`` statements themselves with their decorators,
        defaults and annotations)."""
        return self._walk.function_of[id(node)]

    @property
    def functions(self) -> List[ast.AST]:
        """The outermost functions: every ``def`` with no ``def`` around it (methods included)."""
        return self._walk.functions

    def calls(self) -> List[ast.Call]:
        return self.nodes(ast.Call)

    def method_calls(self, *methods: str) -> List[ast.Call]:
        """Calls of ``x.method(...)`` for the given method names."""
        return [call for call in self.calls() if isinstance(call.func, ast.Attribute) and call.func.attr in methods]

    @cached_property
    def imports(self) -> ImportTable:
        return ImportTable.from_imports([*self.nodes(ast.Import), *self.nodes(ast.ImportFrom)])

    @cached_property
    def imported_packages(self) -> FrozenSet[str]:
        """The top-level packages the module's imports name (``paddle`` of ``import paddle.nn as nn``
        and of ``from paddle.io import DataLoader``; relative imports name none)."""
        found = {alias.name.partition(".")[0] for node in self.nodes(ast.Import) for alias in node.names}
        found |= {node.module.partition(".")[0] for node in self.nodes(ast.ImportFrom) if node.module and not node.level}
        return frozenset(found)

    @property
    def runs_another_framework(self) -> bool:
        """Whether the module imports another deep-learning framework
        (:data:`~gpulint.semantic.torch_api.OTHER_FRAMEWORKS`) and nothing built on torch
        (:data:`~gpulint.semantic.torch_api.TORCH_LIBRARIES`): its models are that framework's,
        whose grad mode torch's does not switch."""
        return bool(self.imported_packages & OTHER_FRAMEWORKS) and not self.imported_packages & TORCH_LIBRARIES

    def qualified_names(self, node: ast.AST) -> FrozenSet[str]:
        """Every qualified name an import of this module may give ``node`` (a superset of what
        LibCST's QualifiedNameProvider reports for it where the name comes from an import);
        computed once per node."""
        known = self._qualified.get(id(node))
        if known is not None and known[0] is node:
            return known[1]
        dotted = ast_full_name(node)
        names = self.imports.qualified_names(dotted) if dotted else frozenset()
        self._qualified[id(node)] = (node, names)
        return names

    @cached_property
    def _qualified(self) -> Dict[int, Tuple[ast.AST, FrozenSet[str]]]:
        """:meth:`qualified_names` by ``id`` of the node, with the node (kept alive, so that no
        other node takes its ``id`` while the entry stands)."""
        return {}

    @cached_property
    def module_evidence(self) -> Dict[Optional[ast.AST], FrozenSet[str]]:
        """For each outermost function (None: the module-level code), the dotted names it shows to
        be modules: receivers of ``nn.Module`` methods (``model.eval()``) but names the function
        binds to a metric of :data:`~gpulint.semantic.torch_api.HISTORY_FREE_METRICS`, names
        bound to a module built, moved or switched (``net = Net().cuda()``, ``head =
        nn.Linear(...)``, an instance of a model class of the module: :meth:`_constructs_module`),
        and names bound to what a call returns (a loaded object, a library's or a factory's model)
        that the same function calls and moves or switches like a module (``model =
        torch.load(path)["model"]``, ``model = smp.Unet(...)``, then ``model = model.cuda()`` or
        ``model.to(device)``, and ``model(x)``): a tensor is never called."""
        found: DefaultDict[Optional[ast.AST], Set[str]] = defaultdict(set)
        metrics: DefaultDict[Optional[ast.AST], Set[str]] = defaultdict(set)
        for assign in self.nodes(ast.Assign):
            constructed = _constructor_call(assign.value)
            if constructed is not None and builds_history_free_metric(self.qualified_names(constructed.func)):
                metrics[self.function_of(assign)].update(map(ast_dotted_name, assign.targets))  # type: ignore[arg-type]
            elif self._constructs_module(assign.value):
                found[self.function_of(assign)].update(map(ast_dotted_name, assign.targets))  # type: ignore[arg-type]
        for call in self.method_calls(*MODULE_METHODS):
            assert isinstance(call.func, ast.Attribute)
            function, receiver = self.function_of(call), ast_dotted_name(call.func.value)
            if receiver not in metrics[function]:
                found[function].add(receiver)  # type: ignore[arg-type]
        called = {(self.function_of(call), call.func.id) for call in self.nodes(ast.Call) if isinstance(call.func, ast.Name)}
        switched = {
            (self.function_of(call), call.func.value.id) for call in self.method_calls(*MODULE_RETURNING_METHODS)
            if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
        }
        for assign in self.nodes(ast.Assign):
            if self._made_by_a_call(assign.value):
                function = self.function_of(assign)
                found[function].update(
                    target.id for target in assign.targets
                    if isinstance(target, ast.Name) and (function, target.id) in called and (function, target.id) in switched
                    and target.id not in metrics[function]
                )
        return {function: frozenset(names - {None}) for function, names in found.items()}

    @staticmethod
    def _made_by_a_call(value: ast.expr) -> bool:
        """What a call returns, or an item of it (``torch.load(path)["model"]``, ``torch.jit.load(path)``,
        ``smp.Unet(...)``, ``build_model(cfg)``): an object the code calling and moving it shows to be a module."""
        if isinstance(value, ast.Subscript):
            value = value.value
        return isinstance(value, ast.Call)

    @cached_property
    def modules(self) -> FrozenSet[str]:
        """The dotted names the file treats as modules, anywhere in it (what the per-scope analyses
        read; ``analysis.tensors.ModuleEvidence`` learns the same from a LibCST tree, but for loaded
        objects, which only GPU004's inference-only programs read)."""
        return frozenset().union(*self.module_evidence.values())

    def _constructs_module(self, value: ast.expr) -> bool:
        """``nn.Linear(...)``, or any constructor call moved or switched (``Net().cuda()``)."""
        call = _constructor_call(value)
        if call is None:
            return False
        moved = call is not value
        return (moved and isinstance(call.func, (ast.Name, ast.Attribute))) or any(
            map(is_module_constructor, self.qualified_names(call.func))
        )


def _constructor_call(value: ast.expr) -> Optional[ast.Call]:
    """The call under any moving or switching methods (``Net()`` of ``Net().cuda().eval()``)."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _MOVING_METHODS:
        value = value.func.value
    return value if isinstance(value, ast.Call) else None
