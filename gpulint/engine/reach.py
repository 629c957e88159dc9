"""How much of a module a rule must read to decide it: nothing, the module-level code and some
functions, or everything.

Most of what a rule decides about a function, it decides from that function's body; what it learns
across the module (which names are modules, which functions only run without gradients...) comes
from a few functions the survey can name. A rule's :meth:`~gpulint.engine.rule.Rule.reach` says which
outermost functions it reads; the engine blanks the bodies of all the others before LibCST resolves
scopes and names, the costly part of a lint, and the findings stay the same.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import FrozenSet, Iterable

from gpulint.semantic.survey import Survey


@dataclass(frozen=True)
class Reach:
    """The outermost functions a rule reads besides the module-level code (``whole_module``: all)."""

    functions: FrozenSet[ast.AST] = frozenset()
    whole_module: bool = False

    @classmethod
    def of(cls, survey: Survey, nodes: Iterable[ast.AST]) -> "Reach":
        """The functions around ``nodes``; the whole module if one of them is module-level code."""
        functions = set()
        for node in nodes:
            function = survey.function_of(node)
            if function is None:
                return EVERYTHING
            functions.add(function)
        return cls(frozenset(functions))

    def __bool__(self) -> bool:
        """Whether the rule may fire at all."""
        return self.whole_module or bool(self.functions)

    def __or__(self, other: "Reach") -> "Reach":
        if self.whole_module or other.whole_module:
            return EVERYTHING
        return Reach(self.functions | other.functions)

    def including(self, functions: Iterable[ast.AST]) -> "Reach":
        """This reach and ``functions``, if it reads anything."""
        return self | Reach(frozenset(functions)) if self else self

    def around(self, survey: Survey, nodes: Iterable[ast.AST]) -> "Reach":
        """This reach and the functions around ``nodes`` (module-level code is always read), if it
        reads anything."""
        return self.including(function for function in map(survey.function_of, nodes) if function is not None)


NOTHING = Reach()
EVERYTHING = Reach(whole_module=True)
