"""GPU001: ``torch.load`` and friends called without ``map_location``."""

from __future__ import annotations

import ast
from typing import Dict, List, Optional

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider

from gpulint import mapping_use
from gpulint.call_args import append_keyword, may_pass_argument, may_pass_argument_in_tree
from gpulint.diagnostics import Applicability, FixOutcome, NoFix
from gpulint.mapping_use import MappingUse
from gpulint.rule import FixAvailability, Rule
from gpulint.survey import Survey

MAP_LOCATION_SLOT: Dict[str, int] = {
    "torch.load": 1,
    "torch.serialization.load": 1,
    "torch.jit.load": 1,
    "torch.hub.load_state_dict_from_url": 2,
    "torch.utils.model_zoo.load_url": 2,
}
"""Each flagged function, and the 0-based positional slot of ``map_location`` in its signature."""


class TorchLoadWithoutMapLocation(Rule):
    """Deserializing tensors without ``map_location`` puts them back on the device they were saved from."""

    code = "GPU001"
    name = "torch-load-without-map-location"
    message = "`{func}` without `map_location` loads every tensor onto the device it was saved from"
    fix_title = 'Add `map_location="cpu"`'
    fix_availability = FixAvailability.SOMETIMES
    tokens = frozenset({"load"})
    targets = frozenset(MAP_LOCATION_SLOT)

    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider, *mapping_use.METADATA_DEPENDENCIES)

    @classmethod
    def candidate_calls(cls, survey: Survey) -> List[ast.Call]:
        """Calls that the imports may resolve to a loader and that pass no ``map_location``."""
        return [
            call for call in survey.calls()
            if any(not may_pass_argument_in_tree(call, "map_location", MAP_LOCATION_SLOT[name])
                   for name in survey.qualified_names(call.func) & cls.targets)
        ]

    def visit_Call(self, node: cst.Call) -> None:
        names = {q.name for q in self.get_metadata(QualifiedNameProvider, node.func, set())}
        if not names or not names <= MAP_LOCATION_SLOT.keys():
            return
        if any(may_pass_argument(node, "map_location", MAP_LOCATION_SLOT[name]) for name in names):
            return
        self.report(node, self.message.format(func=min(names)), self._fix(node))

    def _fix(self, node: cst.Call) -> FixOutcome:
        quote = self._quote(node)
        if quote is None:
            return NoFix('`"cpu"` cannot be spelled inside f-strings nested in both quote styles before Python 3.12')
        fixed = append_keyword(node, "map_location", cst.SimpleString(f"{quote}cpu{quote}"))
        use = MappingUse(self, self.context.path, self.context.source, self.context.module)
        edits = [self.replacement_edit(node, fixed)]
        if use.only_as_mapping(node):
            return self.make_fix(Applicability.SAFE, edits)
        if use.importable is not None:
            note = f"`{use.importable}` is bound at module level, where another module may import it and use it on the GPU"
        else:
            note = "the loaded value is used other than as a state dict, so the device its tensors are on may matter"
        return self.make_fix(Applicability.UNSAFE, edits, note=note)

    def _quote(self, node: cst.Call) -> Optional[str]:
        """The quote for ``"cpu"``: the call's own style, never one an enclosing f-string uses
        (before Python 3.12 that ends the f-string); None if both are taken."""
        preferred = ["'", '"'] if any(
            isinstance(arg.value, cst.SimpleString) and arg.value.quote == "'" for arg in node.args
        ) else ['"', "'"]
        taken = set()
        ancestor = self.get_metadata(ParentNodeProvider, node)
        while not isinstance(ancestor, cst.Module):
            if isinstance(ancestor, cst.FormattedString):
                taken.add(ancestor.start[-1])
            ancestor = self.get_metadata(ParentNodeProvider, ancestor)
        return next((quote for quote in preferred if quote not in taken), None)
