"""GPU001: ``torch.load`` and friends called without ``map_location``."""

from __future__ import annotations

import ast
import re
from typing import List, Optional

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider

from gpulint.analysis import mapping_use
from gpulint.analysis.tensors import dotted_name, subexpressions
from gpulint.edits.call_args import append_keyword, may_pass_argument, may_pass_argument_in_tree
from gpulint.engine.diagnostics import Applicability, FixOutcome, NoFix
from gpulint.analysis.mapping_use import MappingUse
from gpulint.engine.rule import FixAvailability, Rule
from gpulint.semantic.survey import Survey
from gpulint.semantic.torch_api import MAP_LOCATION_SLOT

# The functions flagged are those of MAP_LOCATION_SLOT. ``torch.hub.load_state_dict_from_url`` and
# ``torch.utils.model_zoo.load_url`` are not: what they download is a published artifact, saved from the CPU.
DOWNLOAD = re.compile(r".*(download|load_file_from_url|urlretrieve|cached_path|hf_hub).*", re.IGNORECASE)
"""Calls that fetch a published file (``hf_hub_download``, ``load_file_from_url``...): a file they
return, or fetch when it is missing, is a release artifact, saved from the CPU."""
NON_TENSOR_PAYLOADS = frozenset({"scheduler", "schedulers", "scaler", "rng"})
"""Words naming what a checkpoint file may hold that has no device tensors (scheduler, GradScaler
and RNG states), as whole words of a name or string: ``SCHEDULER_NAME``, ``"rng_state.pth"``,
never ``upscaler``."""
WORD = re.compile(r"[A-Z0-9]+(?![a-z])|[A-Z]?[a-z0-9]+")



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
        if self._holds_no_device_tensors(node):
            return
        self.report(node, self.message.format(func=min(names)), self._fix(node))

    def _holds_no_device_tensors(self, node: cst.Call) -> bool:
        """What the call loads was saved without device tensors, as the code shows: a scheduler,
        scaler or RNG state by its name, or a file downloaded in the same scope — the load's
        argument is what a download call returned, or a download call fetches it when it is
        missing (``if not os.path.exists(path): load_file_from_url(...)``)."""
        loaded = node.args[0].value if node.args else None
        if loaded is None:
            return False
        if NON_TENSOR_PAYLOADS & {word.lower() for word in _words_in(loaded)}:
            return True
        if _is_download(loaded):
            return True
        scope: Optional[cst.CSTNode] = self.get_metadata(ParentNodeProvider, node)
        while scope is not None and not isinstance(scope, (cst.FunctionDef, cst.Module)):
            scope = self.get_metadata(ParentNodeProvider, scope, None)
        return isinstance(loaded, cst.Name) and scope is not None and _downloaded(scope, loaded.value)

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


def _words_in(node: cst.CSTNode) -> List[str]:
    """The words of the names, attributes and strings an expression spells
    (``os.path.join(d, SCHEDULER_NAME)``: os, path, join, d, SCHEDULER, NAME)."""
    words: List[str] = []

    class Words(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            words.extend(WORD.findall(name.value))

        def visit_SimpleString(self, string: cst.SimpleString) -> None:
            words.extend(WORD.findall(string.value))

    node.visit(Words())
    return words


def _is_download(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Call) and bool(DOWNLOAD.fullmatch((dotted_name(node.func) or "").split(".")[-1]))


def _contains_download(node: cst.CSTNode) -> bool:
    return any(_is_download(part) for part in subexpressions(node))


def _downloaded(scope: cst.CSTNode, name: str) -> bool:
    """Whether the scope's own code (not nested functions or classes) binds ``name`` to what a
    download call returns, or runs a download under an ``if`` that tests ``name``."""
    found: List[cst.CSTNode] = []

    class Statements(cst.CSTVisitor):
        def visit_FunctionDef(self, function: cst.FunctionDef) -> bool:
            return function is scope

        def visit_ClassDef(self, _: cst.ClassDef) -> bool:
            return False

        def visit_Assign(self, assign: cst.Assign) -> None:
            if any(isinstance(t.target, cst.Name) and t.target.value == name for t in assign.targets) and _contains_download(assign.value):
                found.append(assign)

        def visit_If(self, statement: cst.If) -> None:
            tested = any(isinstance(n, cst.Name) and n.value == name for n in subexpressions(statement.test))
            if tested and _contains_download(statement.body):
                found.append(statement)

    scope.visit(Statements())
    return bool(found)
