"""A cheap, conservative map from local names to the modules and objects imports bind them to.

It reads only import statements (no expression is visited and no scope is resolved), so the engine
can tell, before paying for LibCST's scope analysis, whether a file can mention a rule's targets at
all. It over-approximates: every import anywhere in the file counts, whatever its scope.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Dict, FrozenSet, Iterable, Iterator, Set, Union

import libcst as cst
from libcst.helpers import get_full_name_for_node

_GAP = r"(?:\s|\\|#[^\n]*\n)*"
_DOT = _GAP + r"\." + _GAP
"""A dot between two names, with the whitespace, continuations and comments Python allows there."""

_Body = Union[cst.Module, cst.BaseSuite]


def _statements(body: _Body) -> Iterator[cst.CSTNode]:
    """Every statement in ``body``, descending into compound statements but not into expressions."""
    children = body.body
    if isinstance(children, cst.CSTNode):
        children = [children]
    for statement in children:
        if isinstance(statement, cst.SimpleStatementLine):
            yield from statement.body
        elif isinstance(statement, cst.BaseCompoundStatement):
            yield from _compound_statements(statement)
        else:
            yield statement


def _compound_statements(statement: cst.BaseCompoundStatement) -> Iterator[cst.CSTNode]:
    body = getattr(statement, "body", None)
    if body is not None:
        yield from _statements(body)
    for attribute in ("orelse", "finalbody"):
        tail = getattr(statement, attribute, None)
        if tail is not None:
            if isinstance(tail, cst.If):
                yield from _compound_statements(tail)
            else:
                yield from _statements(tail.body)
    for handler in getattr(statement, "handlers", ()):
        yield from _statements(handler.body)
    for case in getattr(statement, "cases", ()):
        yield from _statements(case.body)


class ImportTable:
    """Local name -> the dotted names an import anywhere in the module may bind it to."""

    def __init__(self, bindings: Dict[str, Set[str]], star_modules: Set[str]) -> None:
        self.bindings = bindings
        self.star_modules = star_modules

    @classmethod
    def from_module(cls, module: cst.Module) -> "ImportTable":
        bindings: Dict[str, Set[str]] = defaultdict(set)
        star_modules: Set[str] = set()
        for statement in _statements(module):
            if isinstance(statement, cst.Import):
                for alias in statement.names:
                    full = get_full_name_for_node(alias.name) or ""
                    if alias.asname is not None:
                        bindings[get_full_name_for_node(alias.asname.name) or ""].add(full)
                    else:
                        head = full.split(".")[0]
                        bindings[head].add(head)
            elif isinstance(statement, cst.ImportFrom) and not statement.relative and statement.module:
                source = get_full_name_for_node(statement.module) or ""
                if isinstance(statement.names, cst.ImportStar):
                    star_modules.add(source)
                    continue
                for alias in statement.names:
                    name = get_full_name_for_node(alias.name) or ""
                    local = get_full_name_for_node(alias.asname.name) if alias.asname else name
                    bindings[local or name].add(f"{source}.{name}")
        return cls(dict(bindings), star_modules)

    def spellings(self, targets: Iterable[str]) -> FrozenSet[str]:
        """The dotted local spellings through which this module's imports may reach ``targets``."""
        found = set()
        for target in targets:
            for local, qualified_names in self.bindings.items():
                for qualified in qualified_names:
                    if target == qualified:
                        found.add(local)
                    elif target.startswith(qualified + "."):
                        found.add(local + target[len(qualified) :])
            for module in self.star_modules:
                if target.startswith(module + "."):
                    found.add(target[len(module) + 1 :])
        return frozenset(found)

    def may_reach(self, targets: Iterable[str], source: str) -> bool:
        """Whether ``source`` spells any of ``targets`` through a name its imports bind."""
        for spelling in self.spellings(targets):
            parts = [re.escape(part) for part in spelling.split(".")]
            if re.search(r"(?<![\w.])" + _DOT.join(parts) + r"(?!\w)", source):
                return True
        return False
