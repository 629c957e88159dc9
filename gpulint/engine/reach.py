"""How much of a module a rule must read to decide it: the closure of the seeds it declares.

A rule declares its seeds (:meth:`~gpulint.engine.rule.Rule.seeds`): the nodes where it may report,
decided on the semantic model. Everything a rule learns across functions (which names are modules,
where gradients are off, which functions' results a backward pass starts from...) it reads from the
model, so LibCST must read only the code around the seeds: the module-level code and each outermost
function that holds one, or the whole module for a seed in module-level code (whose analysis reads
what every function binds). :func:`closure` computes that the same way for every rule; the engine
blanks the bodies of all other functions before LibCST resolves scopes and names, the costly part
of a lint, and the findings stay the same.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import FrozenSet, Iterable, Optional

from gpulint.semantic.survey import Survey


@dataclass(frozen=True)
class Reach:
    """The outermost functions a rule reads besides the module-level code (``whole_module``: all)."""

    functions: FrozenSet[ast.AST] = frozenset()
    whole_module: bool = False

    def __bool__(self) -> bool:
        """Whether the rule may fire at all."""
        return self.whole_module or bool(self.functions)

    def __or__(self, other: "Reach") -> "Reach":
        if self.whole_module or other.whole_module:
            return EVERYTHING
        return Reach(self.functions | other.functions)


NOTHING = Reach()
EVERYTHING = Reach(whole_module=True)


def closure(survey: Survey, seeds: Optional[Iterable[ast.AST]]) -> Reach:
    """What a rule with these seeds must read (None: it may fire anywhere, so everything)."""
    if seeds is None:
        return EVERYTHING
    functions = set()
    for node in seeds:
        function = survey.function_of(node)
        if function is None:
            return EVERYTHING
        functions.add(function)
    return Reach(frozenset(functions))
