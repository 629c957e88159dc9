"""Does anything computed from some calls' results leave a function, where a caller could backpropagate it?

Values are followed the way autograd follows them: through assignments (plain, annotated, augmented:
``loss += criterion(out, y)``), loops, any call or operator that takes them (``criterion(out, y)``,
``out.mean()``, ``torch.cat([out])``), and containers they are put in (``results.append(x)``,
``d[k] = x``). Only ``.item()``, ``.tolist()``, ``.detach()`` and reading metadata (``.shape``) end
the history. A value leaves the function when it is returned or yielded, stored on an attribute or
in a container the function did not create (``self.last = out``, ``results.append(out.mean())`` into
a caller's list), or declared ``global`` or ``nonlocal``.
"""

from __future__ import annotations

from typing import AbstractSet, Iterable, List, Optional, Set

import libcst as cst

ENDS_HISTORY_METHODS = frozenset({"item", "tolist", "detach", "numpy", "size", "dim", "numel", "__len__"})
ENDS_HISTORY_ATTRIBUTES = frozenset({"shape", "dtype", "device", "ndim", "requires_grad", "is_cuda", "grad_fn"})
ENDS_HISTORY_FUNCTIONS = frozenset({"float", "int", "bool", "str", "len", "repr", "format", "isinstance", "type", "print"})
STORING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "appendleft", "put"})


class _OwnBody(cst.CSTVisitor):
    """The small statements, ``for`` and ``with`` blocks and ``yield`` expressions of one function's
    own body (not of functions or lambdas nested in it)."""

    def __init__(self, function: cst.FunctionDef) -> None:
        super().__init__()
        self.function = function
        self.statements: List[cst.CSTNode] = []
        self.yields: List[cst.Yield] = []
        function.visit(self)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return node is self.function

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self.statements.extend(node.body)

    def visit_For(self, node: cst.For) -> None:
        self.statements.append(node)

    def visit_With(self, node: cst.With) -> None:
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


def _locally_created(function: cst.FunctionDef, statements: List[cst.CSTNode]) -> Set[str]:
    """Names the function binds itself (not its parameters, not ``global``/``nonlocal`` ones)."""
    bound: Set[str] = set()
    declared: Set[str] = set()
    for statement in statements:
        if isinstance(statement, cst.Assign):
            for target in statement.targets:
                bound.update(_target_names(target.target))
        elif isinstance(statement, (cst.AnnAssign, cst.AugAssign)):
            bound.update(_target_names(statement.target))
        elif isinstance(statement, cst.For):
            bound.update(_target_names(statement.target))
        elif isinstance(statement, (cst.Global, cst.Nonlocal)):
            declared.update(item.name.value for item in statement.names)
    params = function.params
    parameters = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    return bound - parameters - declared


class GradientFlow:
    """The names of one function that may carry history from the ``sources`` calls, or from the
    values first bound to ``names``."""

    def __init__(self, function: cst.FunctionDef, sources: AbstractSet[int] = frozenset(), names: Iterable[str] = ()) -> None:
        self.sources = sources
        body = _OwnBody(function)
        self.statements = body.statements
        self.yields = body.yields
        self.local = _locally_created(function, self.statements)
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
            return False
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            return self._comprehension_carries(node)
        return any(self.carries(child) for child in node.children if isinstance(child, cst.CSTNode))

    def _comprehension_carries(self, node: cst.BaseComp) -> bool:
        """Its loop variables carry history when they iterate over something that does; then it
        depends on the element expression (``[h.item() for h in history]`` carries none)."""
        added: List[str] = []
        generator: Optional[cst.CompFor] = node.for_in
        while generator is not None:
            if self.carries(generator.iter):
                added.extend(name for name in _target_names(generator.target) if name not in self.names)
            generator = generator.inner_for_in
        self.names.update(added)
        try:
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
        """The names a value assigned to ``target`` ends up in: ``x``, ``a, b``, ``d`` of ``d[k]``."""
        if isinstance(target, cst.Subscript):
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
                if any(not self._into_local(target) for target in targets):
                    return True
            call = statement.value if isinstance(statement, cst.Expr) else None
            if isinstance(call, cst.Call) and self._stores(call) and isinstance(call.func, cst.Attribute):
                if not self._into_local(call.func.value):
                    return True
        return any(
            isinstance(node.value, cst.BaseExpression) and self.carries(node.value) for node in self.yields
        )

    def _into_local(self, target: cst.CSTNode) -> bool:
        """Whether storing into ``target`` keeps the value inside the function."""
        if isinstance(target, cst.Subscript):
            return self._into_local(target.value)
        if isinstance(target, (cst.Tuple, cst.List)):
            return all(self._into_local(element.value) for element in target.elements)
        if isinstance(target, cst.StarredElement):
            return self._into_local(target.value)
        return isinstance(target, cst.Name) and target.value in self.local

