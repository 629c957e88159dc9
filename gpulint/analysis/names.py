"""The qualified names of a LibCST node (a call's target), read from the semantic model by position.

The model resolves names by binding on Python's own tree; a LibCST node is matched to the ``ast``
node at the same position. Where Python's parser rejects the file there is no model, and LibCST's
``QualifiedNameProvider`` answers instead, resolved on first use.
"""

from __future__ import annotations

from typing import Callable, Collection, FrozenSet, Mapping, Optional, cast

import libcst as cst
from libcst import MetadataDependent
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedName, QualifiedNameProvider

from gpulint.semantic.model import SemanticModel

QualifiedNames = Callable[[cst.CSTNode], FrozenSet[str]]


class NameResolver:
    """Qualified names of the nodes of one LibCST module, for the visitors run on it."""

    def __init__(self, module: cst.Module, model: Optional[SemanticModel]) -> None:
        self.module = module
        self.model = model
        self._libcst: Optional[Mapping[cst.CSTNode, object]] = None

    def of(self, owner: MetadataDependent, node: cst.CSTNode) -> FrozenSet[str]:
        """The qualified names of ``node``, a name or attribute chain, as ``owner`` sees its position."""
        if self.model is not None:
            code_range = owner.get_metadata(PositionProvider, node, None)
            if code_range is None:
                return frozenset()
            start, end = code_range.start, code_range.end
            return self.model.names_at((start.line, start.column, end.line, end.column))
        if self._libcst is None:
            self._libcst = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(QualifiedNameProvider)
        value = self._libcst.get(node, ())
        found = cast(Collection[QualifiedName], value() if callable(value) else value)
        return frozenset(q.name for q in found)

    def for_owner(self, owner: MetadataDependent) -> QualifiedNames:
        return lambda node: self.of(owner, node)
