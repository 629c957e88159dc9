"""GPU001: ``torch.load`` and friends called without ``map_location``."""

from __future__ import annotations

import ast
import re
from typing import Dict, Iterable, Iterator, List, Optional, Set, Tuple

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider

from gpulint.analysis import mapping_use
from gpulint.analysis.mapping_use import MappingUse
from gpulint.edits.call_args import append_keyword, may_pass_argument_in_tree
from gpulint.engine.diagnostics import Applicability, FixOutcome, NoFix
from gpulint.engine.reach import Reach
from gpulint.engine.rule import FixAvailability, Rule
from gpulint.semantic.array_data import ArrayData
from gpulint.semantic.model import SemanticModel
from gpulint.semantic.survey import Survey, ast_full_name
from gpulint.semantic.torch_api import MAP_LOCATION_SLOT

# The functions flagged are those of MAP_LOCATION_SLOT. ``torch.hub.load_state_dict_from_url`` and
# ``torch.utils.model_zoo.load_url`` are not: what they download is a published artifact, saved from the CPU.
DOWNLOAD = re.compile(r".*(download|load_file_from_url|urlretrieve|cached_path|hf_hub).*", re.IGNORECASE)
"""Calls that fetch a published file (``hf_hub_download``, ``load_file_from_url``...): a file they
return, or fetch when it is missing, is a release artifact, saved from the CPU."""
HTTP_FETCHES = frozenset({"requests.get", "urllib.request.urlopen", "urllib.request.urlretrieve", "httpx.get"})
"""HTTP clients' fetches: under an ``if`` that tests for the loaded file, they download it."""
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

    METADATA_DEPENDENCIES = (PositionProvider, *mapping_use.METADATA_DEPENDENCIES)

    @classmethod
    def loads(cls, model: SemanticModel) -> Dict[Tuple[int, int, int, int], Tuple[ast.Call, str]]:
        """The calls to report, decided on the model, by the span of their ``func``: calls of a
        loader that pass no ``map_location``, unless what they load holds no device tensors."""
        found = {}
        for call in model.calls():
            names = model.resolved_names(call.func)
            if not names or not names <= MAP_LOCATION_SLOT.keys():
                continue
            if any(may_pass_argument_in_tree(call, "map_location", MAP_LOCATION_SLOT[name]) for name in names):
                continue
            if not _holds_no_device_tensors(model, call):
                found[model.span(call.func)] = (call, min(names))
        return found

    @classmethod
    def reach(cls, survey: Survey) -> Reach:
        """The functions with a call to report (LibCST builds its fix)."""
        assert isinstance(survey, SemanticModel)
        return Reach.of(survey, [call for call, _ in cls.loads(survey).values()])

    def visit_Module(self, node: cst.Module) -> None:
        model = self.context.model
        self.found = {span: name for span, (_, name) in self.loads(model).items()} if model is not None else {}

    def visit_Call(self, node: cst.Call) -> None:
        if not self.found:
            return
        code_range = self.get_metadata(PositionProvider, node.func)
        name = self.found.get((code_range.start.line, code_range.start.column, code_range.end.line, code_range.end.column))
        if name is not None:
            self.report(node, self.message.format(func=name), self._fix(node))

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


def _holds_no_device_tensors(model: SemanticModel, call: ast.Call) -> bool:
    """What the call loads was saved without device tensors, as the code shows: a scheduler,
    scaler or RNG state by its name; a file downloaded in the same scope — the load's argument
    is what a download call returned, or a download call fetches it when it is missing
    (``if not os.path.exists(path): load_file_from_url(...)``, the path by name or as the same
    string); or a payload a part of which the code uses as a numpy array."""
    loaded = call.args[0] if call.args else call.keywords[0].value if call.keywords else None
    if loaded is None:
        return False
    if NON_TENSOR_PAYLOADS & {word.lower() for word in _words_in(loaded)}:
        return True
    if _is_download(model, loaded):
        return True
    function = model.innermost_function(call)
    scope: ast.AST = function.node if function is not None else model.tree
    if _downloaded(model, scope, loaded):
        return True
    return model.derived(ArrayData).reaches_array_consumer(call)


def _words_in(node: ast.AST) -> List[str]:
    """The words of the names, attributes and strings an expression spells
    (``os.path.join(d, SCHEDULER_NAME)``: os, path, join, d, SCHEDULER, NAME)."""
    words: List[str] = []
    for part in ast.walk(node):
        if isinstance(part, ast.Name):
            words.extend(WORD.findall(part.id))
        elif isinstance(part, ast.Constant) and isinstance(part.value, str):
            words.extend(WORD.findall(part.value))
    return words


def _is_download(model: SemanticModel, node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    return bool(DOWNLOAD.fullmatch((ast_full_name(node.func) or "").split(".")[-1])) or bool(
        model.resolved_names(node.func) & HTTP_FETCHES
    )


def _contains_download(model: SemanticModel, nodes: Iterable[ast.AST]) -> bool:
    return any(_is_download(model, part) for node in nodes for part in ast.walk(node))


def _own_statements(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a scope's own code, not of the functions and classes it defines."""
    stack: List[ast.AST] = list(getattr(scope, "body", []))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def _downloaded(model: SemanticModel, scope: ast.AST, loaded: ast.expr) -> bool:
    """Whether the scope's own code binds the loaded name to what a download call returns, or runs
    a download under an ``if`` that tests the loaded file: its name, or the string it holds."""
    name = loaded.id if isinstance(loaded, ast.Name) else None
    path = _string_value(scope, loaded)
    for node in _own_statements(scope):
        if name is not None and isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            if _contains_download(model, [node.value]):
                return True
        if isinstance(node, ast.If) and any(
            (isinstance(part, ast.Name) and part.id == name) or (path is not None and _is_string(part, path))
            for part in ast.walk(node.test)
        ):
            if _contains_download(model, node.body):
                return True
    return False


def _string_value(scope: ast.AST, loaded: ast.expr) -> Optional[str]:
    """The path a load reads, where the code spells it: a string, or a name the scope only ever
    binds to one string."""
    if isinstance(loaded, ast.Constant) and isinstance(loaded.value, str):
        return loaded.value
    if not isinstance(loaded, ast.Name):
        return None
    values: Set[object] = set()
    for node in _own_statements(scope):
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(part, ast.Name) and part.id == loaded.id for t in targets for part in ast.walk(t)):
                value = getattr(node, "value", None)
                single = len(targets) == 1 and isinstance(targets[0], ast.Name) and not isinstance(node, ast.AugAssign)
                values.add(value.value if single and isinstance(value, ast.Constant) else None)
    only = values.pop() if len(values) == 1 else None
    return only if isinstance(only, str) else None


def _is_string(node: ast.AST, value: str) -> bool:
    return isinstance(node, ast.Constant) and node.value == value
