"""A cheap, conservative map from local names to the modules and objects imports bind them to.

It reads only the import statements of Python's own syntax tree (no scope is resolved), so the
engine can tell, before paying for a LibCST parse and its scope analysis, whether a file's calls
can reach a rule's targets at all. It over-approximates: every import anywhere in the file counts,
whatever its scope.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from typing import Dict, FrozenSet, Iterable, Set, Union

from gpulint.semantic.torch_api import TORCH_PACKAGE


class ImportTable:
    """Local name -> the dotted names an import anywhere in the module may bind it to."""

    def __init__(self, bindings: Dict[str, Set[str]], star_modules: Set[str]) -> None:
        self.bindings = bindings
        self.star_modules = star_modules

    @classmethod
    def from_imports(cls, statements: Iterable[Union[ast.Import, ast.ImportFrom]]) -> "ImportTable":
        """The table of these import statements (of Python's own syntax tree)."""
        bindings: Dict[str, Set[str]] = defaultdict(set)
        star_modules: Set[str] = set()
        for statement in statements:
            if isinstance(statement, ast.Import):
                for alias in statement.names:
                    if alias.asname is not None:
                        bindings[alias.asname].add(alias.name)
                    else:
                        head = alias.name.split(".")[0]
                        bindings[head].add(head)
            elif not statement.level and statement.module:
                for alias in statement.names:
                    if alias.name == "*":
                        star_modules.add(statement.module)
                    else:
                        bindings[alias.asname or alias.name].add(f"{statement.module}.{alias.name}")
        return cls(dict(bindings), star_modules)

    @classmethod
    def from_tree(cls, tree: ast.AST) -> "ImportTable":
        return cls.from_imports(node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)))

    def qualified_names(self, dotted: str) -> FrozenSet[str]:
        """Every name an import may make ``dotted`` (``F.relu`` -> ``torch.nn.functional.relu``)."""
        head, _, rest = dotted.partition(".")
        tail = "." + rest if rest else ""
        found = {qualified + tail for qualified in self.bindings.get(head, ())}
        found.update(f"{module}.{dotted}" for module in self.star_modules)
        if head == TORCH_PACKAGE:
            found.add(dotted)
        return frozenset(found)
