"""Does anything computed from some calls' results leave a function, where a caller could backpropagate it?

Values are followed the way autograd follows them: through assignments (plain, annotated, augmented:
``loss += criterion(out, y)``, walrus), loops, any call or operator that takes them
(``criterion(out, y)``, ``out.mean()``, ``torch.cat([out])``), and containers they are put in
(``results.append(x)``, ``d[k] = x``). Only ``.item()``, ``.tolist()``, ``.detach()`` and reading
metadata (``.shape``) end the history. A value leaves the function when it is returned or yielded
(``yield from`` too), stored on an attribute (``self.last = out``, ``setattr``) or in a container
the function did not build itself (``results.append(out.mean())`` into a caller's list, or into
``cache = self.cache``), handed to a call made for its side effects (``loss_scaler(loss, opt)``
may backpropagate it), raised, read by a nested function or lambda, or matched by a ``match``
statement.
"""

from __future__ import annotations

from typing import AbstractSet, Iterable, List, Optional, Set, Tuple

import libcst as cst

from gpulint.semantic.torch_api import TENSOR_METADATA_ATTRIBUTES, TENSOR_SHAPE_METHODS, TENSOR_TO_PYTHON_METHODS

ENDS_HISTORY_METHODS = TENSOR_SHAPE_METHODS | TENSOR_TO_PYTHON_METHODS | {"detach", "numpy", "__len__"}
"""Methods whose result carries no autograd history: a tensor's shape and Python values, ``detach()``
and ``numpy()`` (which share its storage but not its graph), and ``len``."""
ENDS_HISTORY_ATTRIBUTES = TENSOR_METADATA_ATTRIBUTES | {"grad_fn", "data"}
"""Attributes whose value carries no history to keep alive: a tensor's metadata, and ``.data`` and
``.grad_fn``, read as leaving the graph."""
ENDS_HISTORY_FUNCTIONS = frozenset({"float", "int", "bool", "str", "len", "repr", "format", "isinstance", "type", "print"})
STORING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "appendleft", "put"})
ALIASING_VALUES = (cst.Name, cst.Attribute, cst.Subscript)
"""Values that bind a name to an object that already exists elsewhere (``cache = self.cache``)."""


class _OwnBody(cst.CSTVisitor):
    """The small statements, blocks, ``yield`` and walrus expressions of one function's own body,
    and the functions and lambdas nested in it (whose bodies are not followed)."""

    def __init__(self, function: cst.FunctionDef) -> None:
        super().__init__()
        self.function = function
        self.statements: List[cst.CSTNode] = []
        self.yields: List[cst.Yield] = []
        self.nested: List[cst.CSTNode] = []
        function.visit(self)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        if node is self.function:
            return True
        self.nested.append(node)
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self.nested.append(node)
        return False

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.statements.extend(node.body)

    def visit_For(self, node: cst.For) -> None:
        self.statements.append(node)

    def visit_With(self, node: cst.With) -> None:
        self.statements.append(node)

    def visit_Match(self, node: cst.Match) -> None:
        self.statements.append(node)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.statements.append(node)

    def visit_Yield(self, node: cst.Yield) -> None:
        self.yields.append(node)


def _target_names(target: cst.CSTNode) -> List[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _target_names(element.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return []


def _own_containers(function: cst.FunctionDef, statements: List[cst.CSTNode]) -> Set[str]:
    """Names only ever bound, by the function itself, to values it builds: not parameters, not
    ``global``/``nonlocal`` names, not aliases of existing objects (``cache = self.cache``), not
    loop or ``with`` variables."""
    built: Set[str] = set()
    other: Set[str] = set()
    for statement in statements:
        if isinstance(statement, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            targets = [t.target for t in statement.targets] if isinstance(statement, cst.Assign) else [statement.target]
            for target in targets:
                for name, value in _pairs(target, statement.value):
                    aliasing_value = value is None or isinstance(value, ALIASING_VALUES)
                    plain = isinstance(statement, cst.AugAssign) or not aliasing_value
                    (built if plain and name is not None else other).update(_target_names(name or target))
        elif isinstance(statement, cst.For):
            other.update(_target_names(statement.target))
        elif isinstance(statement, cst.With):
            other.update(name for item in statement.items if item.asname for name in _target_names(item.asname.name))
        elif isinstance(statement, cst.NamedExpr):
            other.update(_target_names(statement.target))
        elif isinstance(statement, (cst.Global, cst.Nonlocal)):
            other.update(item.name.value for item in statement.names)
    params = function.params
    parameters = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    return built - other - parameters


def _pairs(target: cst.BaseExpression, value: Optional[cst.BaseExpression]) -> List[Tuple[Optional[cst.Name], Optional[cst.BaseExpression]]]:
    """(name, value) for each name a target binds to a value it can tell: the name itself, or each
    element of a tuple unpacked from a tuple of the same length (``total, correct = 0, 0``); (None,
    None) for anything else, whose names are then bound to what it cannot tell."""
    if isinstance(target, cst.Name):
        return [(target, value)]
    if (
        isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List))
        and len(target.elements) == len(value.elements)
        and not any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements))
    ):
        return [pair for t, v in zip(target.elements, value.elements) for pair in _pairs(t.value, v.value)]
    return [(None, None)]


def mentions(node: cst.CSTNode, names: AbstractSet[str]) -> bool:
    """Whether ``node`` mentions one of ``names`` (anywhere inside it)."""
    found: List[cst.Name] = []

    class Reads(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            if name.value in names:
                found.append(name)

    node.visit(Reads())
    return bool(found)


class GradientFlow:
    """The names of one function that may carry history from the ``sources`` calls, or from the
    values first bound to ``names``."""

    def __init__(self, function: cst.FunctionDef, sources: AbstractSet[int] = frozenset(), names: Iterable[str] = ()) -> None:
        self.sources = sources
        body = _OwnBody(function)
        self.statements = body.statements
        self.yields = body.yields
        self.nested = body.nested
        self.own = _own_containers(function, self.statements)
        self.names: Set[str] = set(names)
        changed = True
        while changed:
            changed = False
            for statement in self.statements:
                for name in self._tainted_by(statement):
                    if name not in self.names:
                        self.names.add(name)
                        changed = True

    def carries(self, node: cst.CSTNode) -> bool:
        """Whether the value of ``node`` may carry history from the sources."""
        if isinstance(node, cst.Call):
            if id(node) in self.sources:
                return True
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value in ENDS_HISTORY_METHODS:
                return False
            if isinstance(func, cst.Name) and func.value in ENDS_HISTORY_FUNCTIONS:
                return False
        if isinstance(node, cst.Name):
            return node.value in self.names
        if isinstance(node, cst.Attribute):
            return node.attr.value not in ENDS_HISTORY_ATTRIBUTES and self.carries(node.value)
        if isinstance(node, (cst.Lambda, cst.FunctionDef)):
            return mentions(node, self.names)
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            return self._comprehension_carries(node)
        return any(self.carries(child) for child in node.children if isinstance(child, cst.CSTNode))

    def _comprehension_carries(self, node: cst.BaseComp) -> bool:
        """Its loop variables carry history when they iterate over something that does (an inner
        loop over an outer loop's variable too); then it depends on the element expression
        (``[h.item() for h in history]`` carries none)."""
        added: List[str] = []
        generator: Optional[cst.CompFor] = node.for_in
        try:
            while generator is not None:
                if self.carries(generator.iter):
                    fresh = [name for name in _target_names(generator.target) if name not in self.names]
                    added.extend(fresh)
                    self.names.update(fresh)
                generator = generator.inner_for_in
            elements: List[cst.BaseExpression] = (
                [node.key, node.value] if isinstance(node, cst.DictComp)
                else [node.elt] if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)) else []
            )
            return any(self.carries(element) for element in elements)
        finally:
            self.names.difference_update(added)

    def _tainted_by(self, statement: cst.CSTNode) -> List[str]:
        if isinstance(statement, cst.Assign) and self.carries(statement.value):
            return [name for target in statement.targets for name in self._holders(target.target)]
        if isinstance(statement, (cst.AnnAssign, cst.AugAssign)) and statement.value is not None and self.carries(statement.value):
            return self._holders(statement.target)
        if isinstance(statement, cst.NamedExpr) and self.carries(statement.value):
            return self._holders(statement.target)
        if isinstance(statement, cst.For) and self.carries(statement.iter):
            return _target_names(statement.target)
        if isinstance(statement, cst.With):
            return [
                name for item in statement.items
                if item.asname is not None and self.carries(item.item) for name in _target_names(item.asname.name)
            ]
        call = statement.value if isinstance(statement, cst.Expr) else None
        if isinstance(call, cst.Call) and self._stores(call) and isinstance(call.func, cst.Attribute):
            return self._holders(call.func.value)
        return []

    @staticmethod
    def _holders(target: cst.CSTNode) -> List[str]:
        """The names a value assigned to ``target`` ends up in: ``x``, ``a, b``, ``d`` of ``d[k]``,
        ``d`` of ``d["out"], n``."""
        if isinstance(target, cst.Subscript):
            return GradientFlow._holders(target.value)
        if isinstance(target, (cst.Tuple, cst.List)):
            return [name for element in target.elements for name in GradientFlow._holders(element.value)]
        if isinstance(target, cst.StarredElement):
            return GradientFlow._holders(target.value)
        return _target_names(target)

    def _stores(self, call: cst.Call) -> bool:
        return (
            isinstance(call.func, cst.Attribute) and call.func.attr.value in STORING_METHODS
            and any(self.carries(arg.value) for arg in call.args)
        )

    def escapes(self) -> bool:
        """Whether a value carrying history leaves the function."""
        for statement in self.statements:
            if isinstance(statement, cst.Return) and statement.value is not None and self.carries(statement.value):
                return True
            if isinstance(statement, (cst.Assign, cst.AnnAssign, cst.AugAssign)) and statement.value is not None and self.carries(statement.value):
                targets = [t.target for t in statement.targets] if isinstance(statement, cst.Assign) else [statement.target]
                if any(not self._into_own(target) for target in targets):
                    return True
            if isinstance(statement, cst.NamedExpr) and self.carries(statement.value) and not self._into_own(statement.target):
                return True
            if isinstance(statement, cst.Match) and self.carries(statement.subject):
                return True
            if isinstance(statement, cst.Raise) and statement.exc is not None and self.carries(statement.exc):
                return True
            call = statement.value if isinstance(statement, cst.Expr) else None
            if isinstance(call, cst.Call) and self._call_lets_out(call):
                return True
        if any(mentions(nested, self.names) for nested in self.nested):
            return True
        return any(self._yielded(node) for node in self.yields)

    def _yielded(self, node: cst.Yield) -> bool:
        value = node.value.item if isinstance(node.value, cst.From) else node.value
        return isinstance(value, cst.BaseExpression) and self.carries(value)

    def _call_lets_out(self, call: cst.Call) -> bool:
        """A call made for its side effects, given a value carrying history: storing it in a
        container the function did not build, or any call but ``print`` and the like (the callee
        may keep it or backpropagate it: ``loss_scaler(loss, optimizer)``)."""
        if not any(self.carries(arg.value) for arg in call.args):
            return False
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in STORING_METHODS:
            return not self._into_own(func.value)
        return not (isinstance(func, cst.Name) and func.value in ENDS_HISTORY_FUNCTIONS)

    def _into_own(self, target: cst.CSTNode) -> bool:
        """Whether storing into ``target`` keeps the value inside the function."""
        if isinstance(target, cst.Subscript):
            return self._into_own(target.value)
        if isinstance(target, (cst.Tuple, cst.List)):
            return all(self._into_own(element.value) for element in target.elements)
        if isinstance(target, cst.StarredElement):
            return self._into_own(target.value)
        return isinstance(target, cst.Name) and target.value in self.own
