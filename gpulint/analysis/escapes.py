"""Names whose every use cannot be seen in their scope: they are never reported as dead."""

from __future__ import annotations

from typing import FrozenSet

import libcst as cst
from libcst.metadata import ComprehensionScope, Scope

_INTROSPECTION = frozenset({"locals", "vars", "eval", "exec"})


def _inside(scope: Scope, ancestor: Scope) -> bool:
    """Whether ``scope`` is ``ancestor`` or a list, set or dict comprehension evaluated directly
    within it. A generator expression reads its names whenever it is consumed, so it counts as
    a nested function."""
    while isinstance(scope, ComprehensionScope) and scope is not ancestor:
        if isinstance(scope.node, cst.GeneratorExp):
            return False
        scope = scope.parent
    return scope is ancestor


def escaping_names(scope: Scope, declared: FrozenSet[str]) -> FrozenSet[str]:
    """Names of ``scope`` that escape analysis: declared ``global``/``nonlocal`` here or ``nonlocal``
    in a nested function (``declared``), read by a nested function, lambda, class or generator
    expression, or every name if the scope calls
    ``locals()``, ``vars()``, ``eval`` or ``exec``."""
    names = {assignment.name for assignment in scope.assignments}
    for access in scope.accesses:
        if isinstance(access.node, cst.Name) and access.node.value in _INTROSPECTION and _inside(access.scope, scope):
            if not any(a.scope is scope for a in scope.assignments[access.node.value]):
                return frozenset(names | declared)
    escaping = set(declared)
    for assignment in scope.assignments:
        if assignment.scope is not scope:
            continue
        if any(not _inside(reference.scope, scope) for reference in assignment.references):
            escaping.add(assignment.name)
    return frozenset(escaping)
