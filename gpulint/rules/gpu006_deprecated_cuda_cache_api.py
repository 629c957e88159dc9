"""GPU006: the deprecated ``torch.cuda`` "cached" memory functions."""

from __future__ import annotations

from typing import Dict, Tuple

import libcst as cst
from libcst.metadata import PositionProvider

from gpulint.engine.diagnostics import Applicability, FixOutcome, NoFix
from gpulint.engine.rule import FixAvailability, Rule
from gpulint.semantic.torch_api import DEPRECATED_CUDA_MEMORY

RESET_NOTE = "older PyTorch versions reset only one statistic here, and the new name reads as a change of meaning"
"""Why renaming a reset is unsafe, as one line of help."""

UNSAFE_REPLACEMENTS = frozenset({"reset_peak_memory_stats"})
"""Replacements that do more than the deprecated function on older PyTorch (see ``RESET_NOTE``)."""

REPLACEMENTS: Dict[str, Tuple[str, Applicability]] = {
    old: (new, Applicability.UNSAFE if new in UNSAFE_REPLACEMENTS else Applicability.SAFE)
    for old, new in DEPRECATED_CUDA_MEMORY.items()
}
"""Each deprecated function, the name that replaces it, and whether the replacement behaves the same."""


class DeprecatedCudaCacheApi(Rule):
    """``memory_cached`` and friends are deprecated aliases; the reset ones reset every peak statistic."""

    code = "GPU006"
    name = "deprecated-cuda-cache-api"
    message = "`{old}` is deprecated: use `{new}`{why}"
    fix_title = "Use the current name"
    fix_availability = FixAvailability.ALWAYS
    tokens = frozenset({"memory_cached", "reset_max_memory_allocated"})
    targets = frozenset(REPLACEMENTS)

    METADATA_DEPENDENCIES = (PositionProvider,)

    def visit_Call(self, node: cst.Call) -> None:
        names = self.qualified_names(node.func)
        if len(names) != 1 or not names <= REPLACEMENTS.keys():
            return
        (old,) = names
        new, applicability = REPLACEMENTS[old]
        why = (
            " (it resets every peak statistic, as this call already does)" if applicability is Applicability.UNSAFE
            else ", the name that says what it measures"
        )
        message = self.message.format(old=old.replace("torch.cuda.memory.", "torch.cuda."), new=f"torch.cuda.{new}", why=why)
        self.report(node, message, self._fix(node, new, applicability))

    def _fix(self, node: cst.Call, new: str, applicability: Applicability) -> FixOutcome:
        note = RESET_NOTE if applicability is Applicability.UNSAFE else None
        if isinstance(node.func, cst.Attribute):
            renamed = node.func.with_changes(attr=cst.Name(new))
            return self.make_fix(applicability, [self.replacement_edit(node.func, renamed)], note=note)
        if isinstance(node.func, cst.Name):
            edits = [self.replacement_edit(node.func, cst.Name(new)), self.import_edit("torch.cuda", new)]
            return self.make_fix(applicability, edits, note=note)
        return NoFix("the function is called through an expression that cannot be renamed in place")
