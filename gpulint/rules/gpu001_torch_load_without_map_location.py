"""GPU001: ``torch.load`` and friends called without ``map_location``."""

from __future__ import annotations

import ast
import os
import re
from typing import Callable, Iterable, Iterator, List, Mapping, Optional, Set, Tuple

import libcst as cst

from gpulint.edits.call_args import append_keyword, may_pass_argument_in_tree
from gpulint.engine.diagnostics import Applicability, Diagnostic, Edit, FixOutcome, NoFix
from gpulint.engine.rule import FixAvailability, Rule
from gpulint.engine.test_modules import is_test_module
from gpulint.semantic.array_data import ArrayData
from gpulint.semantic.base_network import starts_a_part_beside_a_resume
from gpulint.semantic.coco_evaluation import read_as_coco_evaluation
from gpulint.semantic.computed_as_loaded import computed_beside_gpu_values_as_loaded
from gpulint.semantic.construction_weights import loaded_while_built
from gpulint.semantic.dead_code import never_runs
from gpulint.semantic.fed_as_loaded import fed_to_computation_as_loaded
from gpulint.semantic.fed_to_cpu_model import run_by_a_cpu_model
from gpulint.semantic.installed_as_loaded import attached_where_placed, installed_as_loaded
from gpulint.semantic.mapping_use import MappingUse
from gpulint.semantic.model import Function, SemanticModel
from gpulint.semantic.model_size import always_a_toy, is_toy_payload
from gpulint.semantic.moved_at_once import moved_to_gpu_at_once
from gpulint.semantic.path_strings import UNKNOWN, path_strings, segments
from gpulint.semantic.pinned_dataset import served_by_a_pinning_loader
from gpulint.semantic.project_saves import saved_by_another_module
from gpulint.semantic.published import names_a_published_file
from gpulint.semantic.live_optimizer import restores_live_optimizer
from gpulint.semantic.read_back import ReadBack, loaded_path
from gpulint.semantic.restored_branch import restored_where_cuda_is, restores_what_the_other_branch_places
from gpulint.semantic.run_as_loaded import may_be_the_first_gpu, run_on_device_inputs_as_loaded, run_on_gpu_inputs_as_loaded
from gpulint.semantic.scopes import Binding
from gpulint.semantic.survey import SCOPES, ast_dotted_name, ast_full_name, module_of, own_nodes, position
from gpulint.semantic.torch_api import MAP_LOCATION_SLOT, MULTI_DEVICE_WORDS, TENSORLESS_FILES, TORCH_SAVE
from gpulint.semantic.unmoved_module import unmoved_loaded_module, unmoved_script_module

# The functions flagged are those of MAP_LOCATION_SLOT. ``torch.hub.load_state_dict_from_url`` and
# ``torch.utils.model_zoo.load_url`` are not: what they download is a published artifact, saved from the CPU.
DOWNLOAD = re.compile(r".*(download|load_file_from_url|urlretrieve|urlopen|open_url|cached_path|hf_hub).*", re.IGNORECASE)
"""Calls that fetch a published file (``hf_hub_download``, ``load_file_from_url``, ``open_url``...): a
file they return or open, or fetch when it is missing, is a release artifact, saved from the CPU."""
HTTP_FETCHES = frozenset({"requests.get", "urllib.request.urlopen", "urllib.request.urlretrieve", "httpx.get"})
"""HTTP clients' fetches: under an ``if`` that tests for the loaded file, they download it."""
SHELL_RUNNERS = frozenset({
    "os.system", "os.popen", "subprocess.run", "subprocess.call", "subprocess.check_call",
    "subprocess.check_output", "subprocess.Popen",
})
"""Calls that run a shell command: one whose program is a downloader fetches a file."""
SHELL_DOWNLOADERS = frozenset({"wget", "curl", "gdown", "aria2c", "axel"})
"""Command-line programs that download a file (``os.system("wget URL -O vgg16.t7")``)."""
NON_TENSOR_PAYLOADS = frozenset({"scheduler", "schedulers", "scaler", "rng"})
"""Words naming what a checkpoint file may hold that has no device tensors (scheduler, GradScaler
and RNG states), as whole words of a name or string: ``SCHEDULER_NAME``, ``"rng_state.pth"``,
never ``upscaler``."""
VOCABULARY_WORDS = frozenset({"vocab", "vocabs", "vocabulary", "vocabularies"})
"""Words naming a vocabulary (``"data.vocab.pt"``, ``args.vocab_file``): torchtext ``Vocab`` objects,
token lists or a tokenizer's tables, without tensors."""
TENSOR_PAYLOAD_WORDS = frozenset({
    "embedding", "embeddings", "emb", "embed", "embeds", "vector", "vectors", "weight", "weights",
    "model", "models", "checkpoint", "checkpoints", "ckpt", "state", "params", "feature", "features",
    "feat", "feats", "matrix", "tensor", "tensors", "net", "lm", "size", "dir", "len",
})
"""Words that beside a vocabulary word name tensors (``"vocab_vectors.pt"``, ``vocab_features``) or
make it a setting rather than the file (``vocab_dir``, ``vocab_size``): such a name is no vocabulary
file."""
IN_MEMORY_FILES = frozenset({"io.BytesIO"})
"""File objects over bytes the running program holds: a load from one deserializes what the program
itself serialized (a copy, a transfer between processes, a graph exported with its objects)."""
OLD_MAC_LINE_BREAK = re.compile(r"\r(?!\n)")
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
    decided_on_model = True

    @classmethod
    def loads(cls, model: SemanticModel) -> List[Tuple[ast.Call, str]]:
        """The calls to report, each with the loader's name: calls of a loader that pass no
        ``map_location``, unless what they load holds no device tensors."""
        found = []
        for call in model.calls():
            if not model.qualified_names(call.func) & MAP_LOCATION_SLOT.keys():
                continue  # the import table's superset: no binding needs resolving
            names = model.resolved_names(call.func)
            if not names or not names <= MAP_LOCATION_SLOT.keys():
                continue
            if any(may_pass_argument_in_tree(call, "map_location", MAP_LOCATION_SLOT[name]) for name in names):
                continue
            if not _holds_no_device_tensors(model, call) and not _placed_by_the_program(model, call) and not _a_toy(model, call):
                found.append((call, min(names)))
        return found

    @classmethod
    def seeds(cls, model: SemanticModel) -> List[ast.AST]:
        """The calls to report."""
        return [call for call, _ in model.derived(cls.loads)]

    @classmethod
    def diagnose(cls, model: SemanticModel, path: str, options: Mapping[str, object]) -> List[Diagnostic]:
        if is_test_module(path, model.tree) and not options.get("report-loads-in-tests"):
            return []
        return [
            cls.diagnostic(path, model.span(call), cls.message.format(func=name), cls._fix(model, path, call))
            for call, name in model.derived(cls.loads)
        ]

    @classmethod
    def _fix(cls, model: SemanticModel, path: str, call: ast.Call) -> FixOutcome:
        quote = _quote(model, call)
        if quote is None:
            return NoFix('`"cpu"` cannot be spelled inside an f-string whose text uses both quote styles before Python 3.12')
        edit = _call_edit(model, call, lambda node: append_keyword(node, "map_location", cst.SimpleString(f"{quote}cpu{quote}")))
        use = MappingUse(model, path)
        if use.only_as_mapping(call):
            return cls.make_fix(Applicability.SAFE, [edit])
        if _returned_whole(model, path, call):
            return NoFix(RETURNED_WHOLE)
        if restores_live_optimizer(model, call):
            return NoFix(OPTIMIZER_RESTORED)
        if model.mentions_accelerator and model.derived(ReadBack).reads_own_file(call):
            return NoFix(OWN_FILE_READ_BACK)
        if fed_to_computation_as_loaded(model, call):
            return NoFix(FED_AS_LOADED)
        if installed_as_loaded(model, call):
            return NoFix(INSTALLED_AS_LOADED)
        if run_on_device_inputs_as_loaded(model, call):
            return NoFix(RUN_ON_DEVICE_INPUTS)
        if computed_beside_gpu_values_as_loaded(model, call):
            return NoFix(COMPUTED_AS_LOADED)
        if attached_where_placed(model, call):
            return NoFix(ATTACHED_WHERE_PLACED)
        if model.mentions_accelerator and unmoved_script_module(model, call):
            return NoFix(UNMOVED_SCRIPT_MODULE)
        if model.mentions_accelerator and unmoved_loaded_module(model, call):
            return NoFix(UNMOVED_LOADED_MODULE)
        if _reads_memory(model, call):
            return NoFix(READ_FROM_MEMORY)
        if use.importable is not None:
            note = f"`{use.importable}` is bound at module level, where another module may import it and use it on the GPU"
        else:
            note = "the loaded value is used other than as a state dict, so the device its tensors are on may matter"
        return cls.make_fix(Applicability.UNSAFE, [edit], note=note)


def _reads_memory(model: SemanticModel, call: ast.Call) -> bool:
    """Whether the load reads an in-memory file (:data:`IN_MEMORY_FILES`): made in the call
    (``torch.load(io.BytesIO(data))``), or a name every binding of which assigns one (``buffer =
    io.BytesIO(payload)``; a parameter, a loop target or an import may be anything)."""
    loaded = loaded_path(call)
    if loaded is None:
        return False
    if isinstance(loaded, ast.Name):
        binding = model.scope_at(loaded).resolve(loaded.id)
        values = model.plain_assignments(binding)
        if not values or binding.name in binding.scope.parameters or model.bound_otherwise(binding):
            return False
        return all(_makes_a_file_in_memory(model, value) for value in values)
    return _makes_a_file_in_memory(model, loaded)


def _makes_a_file_in_memory(model: SemanticModel, value: ast.expr) -> bool:
    """Whether ``value`` calls what can only be one of :data:`IN_MEMORY_FILES`."""
    names = model.resolved_names(value.func) if isinstance(value, ast.Call) else frozenset()
    return bool(names) and names <= IN_MEMORY_FILES


def _returned_whole(model: SemanticModel, path: str, call: ast.Call) -> bool:
    """``return torch.load(path)``; or, for a file of a name the module itself saves to (whatever
    folder: :func:`_saved_here_by_name`) or another module of the project does
    (:func:`~gpulint.semantic.project_saves.saved_by_another_module`: SinGAN's
    ``load_trained_pyramid`` reading what its training script saves), the load bound to a name
    that a ``return`` hands back whole (``embeddings = torch.load(root / "facebank.pth")``,
    ``return embeddings, names``, where another function saves GPU embeddings to
    ``root / "facebank.pth"``)."""
    parent = model.parent(call)
    if isinstance(parent, ast.Return):
        return True
    if not (isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name)):
        return False
    place = model.place(parent.targets[0])
    if place is None or not any(_handed_back(model, use) for use in model.uses(place.binding)):
        return False
    return _saved_here_by_name(model, call) or _saved_by_the_project(model, path, call)


def _handed_back(model: SemanticModel, use: ast.AST) -> bool:
    """Whether a ``return`` hands back the used name whole, alone or in a tuple."""
    holder = model.parent(use)
    if isinstance(holder, ast.Tuple):
        holder = model.parent(holder)
    return isinstance(holder, ast.Return)


def _saved_by_the_project(model: SemanticModel, path: str, call: ast.Call) -> bool:
    """Whether another module of the project saves with ``torch.save`` a file whose name the load may read."""
    loaded = loaded_path(call)
    return loaded is not None and saved_by_another_module(path, _file_names(model, loaded) - {UNKNOWN})


def _built_with_published_weights(model: SemanticModel, call: ast.Call) -> bool:
    """Whether the call loads the weights a network is constructed with
    (:func:`~gpulint.semantic.construction_weights.loaded_while_built`), or those its base starts
    from where the other branch resumes it whole
    (:func:`~gpulint.semantic.base_network.starts_a_part_beside_a_resume`), from a file the program
    does not write itself: neither the module nor another module of the project ``torch.save``s a
    file of a name the load may read (a classifier head built on the trunk its training script saved
    is the program's own checkpoint, not a published network)."""
    if not (loaded_while_built(model, call) or starts_a_part_beside_a_resume(model, call)):
        return False
    return not _saved_here_by_name(model, call) and not (
        model.path is not None and _saved_by_the_project(model, model.path, call)
    )


def _saved_here_by_name(model: SemanticModel, call: ast.Call) -> bool:
    """Whether the module ``torch.save``s a file whose name, as the code spells it, is one the load
    may read (``"facebank.pth"`` under whatever folder)."""
    loaded = loaded_path(call)
    if loaded is None:
        return False
    names = _file_names(model, loaded) - {UNKNOWN}
    return bool(names) and any(saved is not None and names & _file_names(model, saved) for _, _, saved in model.derived(ReadBack).saves)


OWN_FILE_READ_BACK = (
    "it reads back a file this code saves, and the code may rely on the tensors coming back to the "
    "device it kept them on (a queue or memory bank used with GPU tensors)"
)
"""Why there is no fix for a load, used other than as a state dict, of a file the module saves while it
may put tensors on an accelerator."""

FED_AS_LOADED = (
    "a data loader hands the loaded tensors, unmoved, to the code's computation, which may rely on "
    "them coming back to the GPU they were saved from (a model there would meet CPU batches)"
)
"""Why there is no fix for a load whose batches a loop computes with as they came back."""
INSTALLED_AS_LOADED = (
    "a loaded tensor becomes a parameter's storage as it came back (`.data = ...`, `nn.Parameter(...)`), "
    "so the parameter goes wherever the load puts it (a model on the GPU would meet one parameter on the CPU)"
)
"""Why there is no fix for a load whose tensor is installed in a module as a parameter."""
RUN_ON_DEVICE_INPUTS = (
    "what is loaded is used as it came back beside values the code moves to a device it names, "
    "which may be the GPU the file was saved from (a module on the CPU would meet inputs on the GPU)"
)
"""Why there is no fix for a load run as loaded on inputs moved to a device the code names."""
COMPUTED_AS_LOADED = (
    "a tensor taken from what is loaded is computed with, as it came back, beside values the code "
    "moves to the GPU (on the CPU it would meet them there and the computation would fail)"
)
"""Why there is no fix for a load whose tensors meet GPU values in arithmetic as loaded."""
ATTACHED_WHERE_PLACED = (
    "what is loaded is attached, as it came back, to an object the code has moved to a device, "
    "which may rely on it coming back to the GPU it was saved from"
)
"""Why there is no fix for a load attached to an object the code put on a device."""

UNMOVED_SCRIPT_MODULE = (
    "the code runs the TorchScript module where the load puts it and never moves it: one exported "
    "on the GPU would stay on the CPU and meet GPU inputs there"
)
"""Why there is no fix for a ``torch.jit.load`` whose module the file never moves, in code that may
use an accelerator."""

UNMOVED_LOADED_MODULE = (
    "the code runs the loaded module where the load puts it and never moves it: a model pickled on "
    "the GPU would stay on the CPU and meet the inputs the code puts on a device"
)
"""Why there is no fix for a ``torch.load`` of a whole module the file runs but never moves, in code
that may use an accelerator."""

RETURNED_WHOLE = (
    "the loaded object is returned whole: where its tensors must be is up to callers gpulint does not "
    "read (a whole model restored onto the GPU would meet GPU inputs)"
)
"""Why there is no fix for ``return torch.load(path)``."""

READ_FROM_MEMORY = (
    "it reads bytes the program holds in memory, which it serialized from live objects (a copy, a "
    "transfer between processes) and may rely on coming back to the devices they were on"
)
"""Why there is no fix for a load from an in-memory file."""

OPTIMIZER_RESTORED = (
    "the load restores a whole optimizer the code goes on stepping: its state must stay on the device "
    "of the parameters it updates, and on the CPU it would not follow the model back to the GPU"
)
"""Why there is no fix for a load that restores a live optimizer."""


def _call_edit(model: SemanticModel, call: ast.Call, change: Callable[[cst.Call], cst.Call]) -> Optional[Edit]:
    """The edit that replaces ``call`` by ``change`` of it, LibCST parsing just the call's own text
    (its layout and comments kept); None where that text is not the call (LibCST or Python's
    positions disagree, as inside some f-strings) or does not round-trip, and in a file with
    old Mac line breaks (a lone ``\\r``), which LibCST does not reproduce."""
    if OLD_MAC_LINE_BREAK.search(model.source):
        return None
    line, column, end_line, end_column = model.span(call)
    start, end = model.offset(line, column), model.offset(end_line, end_column)
    text = model.source[start:end]
    try:
        parsed = cst.parse_expression(text)
        same = ast.dump(ast.parse(text, mode="eval").body) == ast.dump(call)
    except (cst.ParserSyntaxError, SyntaxError, ValueError):
        return None
    newline = "\r\n" if "\r\n" in text else "\n"
    if not same or not isinstance(parsed, cst.Call) or _code(parsed, newline) != text:
        return None
    edit = Edit.between(text, _code(change(parsed), newline))
    return Edit(start + edit.start, start + edit.end, edit.content) if edit is not None else None


def _code(node: cst.CSTNode, newline: str) -> str:
    return cst.Module(body=[], default_newline=newline).code_for_node(node)


def _quote(model: SemanticModel, call: ast.Call) -> Optional[str]:
    """The quote for ``"cpu"``: the call's own style, never one that an enclosing f-string's text
    holds outside the call (before Python 3.12 an f-string's own quote ends it; an f-string joined
    with other literals, ``'a: ' f"{x}"``, counts with all their quotes); None if both are taken."""
    preferred = ["'", '"'] if any(_quote_of(model, arg) == "'" for arg in call.args) else ['"', "'"]
    line, column, end_line, end_column = model.span(call)
    start, end = model.offset(line, column), model.offset(end_line, end_column)
    taken: Set[str] = set()
    ancestor = model.parent(call)
    while ancestor is not None:
        if isinstance(ancestor, ast.JoinedStr):
            outer_line, outer_column, outer_end_line, outer_end_column = model.span(ancestor)
            text = model.source[model.offset(outer_line, outer_column):start] + model.source[end:model.offset(outer_end_line, outer_end_column)]
            taken.update(quote for quote in ("'", '"') if quote in text)
        ancestor = model.parent(ancestor)
    return next((quote for quote in preferred if quote not in taken), None)


def _quote_of(model: SemanticModel, node: ast.expr) -> Optional[str]:
    """The quote a string literal opens with after its prefix (``'``, ``\"\"\"``), None for anything else."""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes))):
        return None
    line, column, _, _ = model.span(node)
    text = model.source[model.offset(line, column):].lstrip("rRbBuUfF")
    for quote in ("\"\"\"", "'''", "'", '"'):
        if text.startswith(quote):
            return quote
    return None


def _holds_no_device_tensors(model: SemanticModel, call: ast.Call) -> bool:
    """What the call loads was saved without device tensors, as the code shows: a scheduler,
    scaler or RNG state by its name, a vocabulary by the file's own name
    (:func:`_names_a_vocabulary`), or a file a library writes without tensors by its file name
    (a Trainer's ``training_args.bin``); a file downloaded in the same scope — the load's argument
    is what a download call returned, or a download call fetches it when it is missing
    (``if not os.path.exists(path): load_file_from_url(...)``, or in the ``else`` of
    ``if os.path.exists(path):``, the path by name, attribute chain or as the same string) — or
    by every caller before the call, for a path read from a parameter (``define_model(args)``
    loading ``args.model_path``, which ``main`` fetches when missing); the weights a class's
    constructor builds its network with (published pretrained weights); a file whose path names a
    release (:func:`~gpulint.semantic.published.names_a_published_file`); the state dict of a
    TensorRT engine module (:func:`_into_an_engine`); a payload a part of which
    the code uses as a numpy array; pycocotools' evaluation dict (``data["params"].recThrs``:
    :func:`~gpulint.semantic.coco_evaluation.read_as_coco_evaluation`); or a map-style dataset's
    data that a pinning ``DataLoader`` serves (pinning raises on CUDA tensors:
    :func:`~gpulint.semantic.pinned_dataset.served_by_a_pinning_loader`); or tensors the program
    runs a model it keeps on the CPU on, which would raise on CUDA tensors
    (:func:`~gpulint.semantic.fed_to_cpu_model.run_by_a_cpu_model`)."""
    loaded = loaded_path(call)
    if loaded is None:
        return False
    if NON_TENSOR_PAYLOADS & {word.lower() for word in _words_in(loaded)} or _names_a_vocabulary(loaded):
        return True
    if _names_a_tensorless_file(model, loaded):
        return True
    if _is_download(model, loaded) or _built_with_published_weights(model, call) or names_a_published_file(model, loaded) or (
        _into_an_engine(model, call)
    ):
        return True
    function = model.innermost_function(call)
    scope: ast.AST = function.node if function is not None else model.tree
    if _downloaded(model, scope, loaded, call) or (function is not None and _downloaded_by_every_caller(model, function, loaded)):
        return True
    return model.derived(ArrayData).is_array_data(call) or read_as_coco_evaluation(model, call) or (
        served_by_a_pinning_loader(model, call) or run_by_a_cpu_model(model, call)
    )


def _names_a_vocabulary(loaded: ast.expr) -> bool:
    """Whether the file's own name, as the path spells it, names a vocabulary and no tensors: a
    string of it (``opt.data + ".vocab.pt"``), or the name or attribute that is the whole path
    (``args.vocab_file``, ``config.VOCAB_SAVE_PATH``); not a folder or a size
    (``os.path.join(args.vocab_dir, "lm.pt")``, ``f"lm_{args.vocab_size}.pt"``)."""
    names = [part.value for part in ast.walk(loaded) if isinstance(part, ast.Constant) and isinstance(part.value, str)]
    if isinstance(loaded, ast.Name):
        names.append(loaded.id)
    elif isinstance(loaded, ast.Attribute):
        names.append(loaded.attr)
    words = {word.lower() for name in names for word in WORD.findall(name)}
    return bool(VOCABULARY_WORDS & words) and not TENSOR_PAYLOAD_WORDS & words


def _names_a_tensorless_file(model: SemanticModel, loaded: ast.expr) -> bool:
    """Whether every string the path may be names a file a library writes without tensors
    (:data:`~gpulint.semantic.torch_api.TENSORLESS_FILES`: a Trainer's ``training_args.bin``)."""
    names = _file_names(model, loaded)
    return bool(names) and names <= TENSORLESS_FILES


def _file_names(model: SemanticModel, path: ast.expr) -> Set[str]:
    """The last part of each string ``path`` may be (:data:`UNKNOWN` where the code does not spell it)."""
    return {(segments(value) or [UNKNOWN])[-1] for value in path_strings(model, path)}


def _placed_by_the_program(model: SemanticModel, call: ast.Call) -> bool:
    """Where the call's tensors land is the program's own doing, or moot: it reads back a cache or
    a live object the module writes, the module it loads is moved to the GPU at once or run as
    loaded on inputs the program moves to the GPU (or, in code for one GPU, to a device that may be
    the first one, also where a whole module runs unmoved beside such values), it restores what the
    other branch of its ``if`` builds and moves to the GPU, or a whole module onto its saved device
    in the branch of ``if torch.cuda.is_available():`` whose other branch maps it, or it never
    runs."""
    loaded = loaded_path(call)
    return never_runs(model, call) or moved_to_gpu_at_once(model, call) or run_on_gpu_inputs_as_loaded(model, call) or (
        run_on_device_inputs_as_loaded(model, call, may_be_the_first_gpu)
    ) or (
        model.mentions_accelerator and not model.spells(MULTI_DEVICE_WORDS)
        and unmoved_loaded_module(model, call, may_be_the_first_gpu)
    ) or (
        restores_what_the_other_branch_places(model, call, lambda other: _a_loader_call(model, other))
        or restored_where_cuda_is(model, call, lambda other: _a_loader_call(model, other))
    ) or (
        loaded is not None and (model.derived(ReadBack).reads_back(call, loaded) or _falls_back_from_a_mapped_load(model, call, loaded))
    )


def _a_loader_call(model: SemanticModel, call: ast.Call) -> bool:
    """A call of a loader the rule reads (``torch.load``, ``torch.jit.load``...)."""
    names = model.resolved_names(call.func)
    return bool(names) and names <= MAP_LOCATION_SLOT.keys()


def _falls_back_from_a_mapped_load(model: SemanticModel, call: ast.Call, loaded: ast.expr) -> bool:
    """Whether the load is the fallback of a ``try`` whose body loads the same path with a
    ``map_location`` (``try: torch.load(f, map_location="cpu")`` / ``except: torch.load(f)``): the
    code maps first, and restores onto the saved device on purpose when that fails."""
    handler = next((node for node in model.ancestors(call) if isinstance(node, (ast.ExceptHandler, *SCOPES))), None)
    statement = model.parent(handler) if isinstance(handler, ast.ExceptHandler) else None
    if not isinstance(statement, ast.Try):
        return False  # a function the handler defines runs later, not as the fallback
    read_back = model.derived(ReadBack)
    return any(
        isinstance(node, ast.Call) and model.resolved_names(node.func) & MAP_LOCATION_SLOT.keys()
        and any(keyword.arg == "map_location" for keyword in node.keywords)
        and read_back.same_path(loaded_path(node), loaded)
        for node in own_nodes(statement.body)
    )


def _a_toy(model: SemanticModel, call: ast.Call) -> bool:
    """Whether the load copies a state dict into a toy network (:func:`_into_a_toy`) or reads a
    toy payload back (:func:`_reads_back_a_toy_payload`: ``torch.save([x, y], "x-files")`` after
    ``x = torch.arange(4)``)."""
    return _into_a_toy(model, call) or _reads_back_a_toy_payload(model, call)


CONDITIONAL = (
    ast.If, ast.IfExp, ast.For, ast.AsyncFor, ast.While, ast.Try, getattr(ast, "TryStar", ast.Try), ast.Match, ast.BoolOp,
    ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
)
"""Where code may not run, or not before what follows it (a function's body runs when called)."""


def _reads_back_a_toy_payload(model: SemanticModel, call: ast.Call) -> bool:
    """Whether the load reads a path (a string the code spells) that the module writes only with
    ``torch.save`` calls of toy payloads (:func:`~gpulint.semantic.model_size.is_toy_payload`),
    one of which runs, unconditionally, before the load in a block that holds both. Every
    ``torch.save`` of the module must be a plain call (not aliased, no ``*args``) with a path the
    code spells (or a file ``with open(path) as f`` opens), and the path's string may be used only
    as the path of ``torch.save`` and ``torch.load`` (directly or through a name bound to it):
    anything else may write the file."""
    loaded = loaded_path(call)
    path = _string_value(model, loaded) if loaded is not None else None
    if path is None:
        return False
    saves: List[ast.Call] = []
    for node in [*model.nodes(ast.Name), *model.nodes(ast.Attribute)]:
        if TORCH_SAVE in model.qualified_names(node) and model.resolved_names(node) & {TORCH_SAVE}:
            save = model.parent(node)
            if not (isinstance(save, ast.Call) and save.func is node):
                return False  # ``save = torch.save``, ``partial(torch.save, ...)``
            saves.append(save)
    read_back = model.derived(ReadBack)
    written: List[ast.Call] = []
    for save in saves:
        target = _save_path(save)
        opened = read_back.path_of(target) if target is not None else None
        spelled = _string_value(model, opened) if opened is not None else None
        if spelled is None:
            return False
        if os.path.normpath(spelled) == os.path.normpath(path):
            written.append(save)
    if not written or not _path_only_saved_and_loaded(model, path):
        return False
    payloads = [save.args[0] if save.args else _keyword(save, "obj") for save in written]
    if not all(payload is not None and is_toy_payload(model, payload, call) for payload in payloads):
        return False
    return any(
        read_back.runs_before(save, call) and not any(isinstance(node, CONDITIONAL) for node in _between(model, save, call)) for save in written
    )


def _save_path(save: ast.Call) -> Optional[ast.expr]:
    """The path of ``torch.save(obj, f)``; None where a starred or ``**`` argument may give it."""
    if any(isinstance(argument, ast.Starred) for argument in save.args) or any(keyword.arg is None for keyword in save.keywords):
        return None
    return save.args[1] if len(save.args) > 1 else _keyword(save, "f")


def _keyword(call: ast.Call, name: str) -> Optional[ast.expr]:
    return next((keyword.value for keyword in call.keywords if keyword.arg == name), None)


def _path_only_saved_and_loaded(model: SemanticModel, path: str) -> bool:
    """Whether every use of the string ``path`` in the module, however spelled (``"./w.pt"`` is
    ``"w.pt"``), is the path of a ``torch.save`` or ``torch.load`` call, directly or through a
    name assigned it whose every read is one."""
    for constant in model.nodes(ast.Constant):
        if not (isinstance(constant.value, str) and os.path.normpath(constant.value) == os.path.normpath(path)):
            continue
        parent = model.parent(constant)
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
            binding = model.scope_at(parent.targets[0]).resolve(parent.targets[0].id)
            uses = [use for use in model.uses(binding) if isinstance(use.ctx, ast.Load)]
            if not all(_is_saved_or_loaded_path(model, use) for use in uses):
                return False
        elif not _is_saved_or_loaded_path(model, constant):
            return False
    return True


def _is_saved_or_loaded_path(model: SemanticModel, node: ast.expr) -> bool:
    parent = model.parent(node)
    if isinstance(parent, ast.keyword):
        parent = model.parent(parent)
    if not isinstance(parent, ast.Call):
        return False
    if model.resolved_names(parent.func) == {TORCH_SAVE}:
        return _save_path(parent) is node
    return _a_loader_call(model, parent) and loaded_path(parent) is node


def _between(model: SemanticModel, save: ast.Call, load: ast.Call) -> List[ast.AST]:
    """The nodes around ``save`` up to the innermost node that also holds ``load``."""
    around_load = {id(node) for node in model.ancestors(load)}
    found: List[ast.AST] = []
    for node in model.ancestors(save):
        if id(node) in around_load:
            break
        found.append(node)
    return found


def _into_a_toy(model: SemanticModel, call: ast.Call) -> bool:
    """Whether the load is a state dict copied into a toy network: handed to ``net.load_state_dict``
    (see :func:`_copied_into`), where every binding of ``net`` builds a network whose state dict the
    code sizes at most :data:`~gpulint.semantic.model_size.TOY_SIZE` elements (``net =
    NeuralNetwork(2, 2)``, ``net = nn.Linear(10, 1).to(device)``)."""
    return _copied_into(model, call, always_a_toy)


ENGINE_MODULES = frozenset({
    "torch2trt.TRTModule", "torch2trt.torch2trt.TRTModule", "torch2trt.trt_module.TRTModule", "torch2trt.torch2trt",
})
"""torch2trt's ``TRTModule`` (and ``torch2trt(model, inputs)``, which converts a model into one): its
state dict, written by a state-dict hook, holds a serialized TensorRT engine (bytes) and the names
of its inputs and outputs, no tensors."""


def _into_an_engine(model: SemanticModel, call: ast.Call) -> bool:
    """Whether the load is a state dict copied into a TensorRT engine module (``model_trt =
    TRTModule()``, then ``model_trt.load_state_dict(torch.load(trt_file))``): every binding of the
    receiver assigns what calling one of :data:`ENGINE_MODULES` returns."""
    return _copied_into(model, call, _always_an_engine)


def _always_an_engine(model: SemanticModel, binding: Binding) -> bool:
    if binding.name in binding.scope.parameters or binding.name in binding.scope.globals | binding.scope.nonlocals or (
        binding.name in model.names_bound_otherwise
    ):
        return False
    stores = [use for use in model.uses(binding) if not isinstance(use.ctx, ast.Load)]
    for store in stores:
        statement = model.parent(store)
        if not (isinstance(statement, ast.Assign) and statement.targets == [store]):
            return False
        built = module_of(statement.value)
        if not (isinstance(built, ast.Call) and model.resolved_names(built.func) & ENGINE_MODULES):
            return False
    return bool(stores)


def _copied_into(model: SemanticModel, call: ast.Call, receiving: Callable[[SemanticModel, Binding], bool]) -> bool:
    """Whether the load is handed to ``net.load_state_dict`` (directly, or through a name every
    read of which is so handed, without ``strict=False``) where ``receiving`` holds for the binding
    of every such ``net``."""
    parent = model.parent(call)
    uses: List[ast.AST] = [call]
    if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name):
        binding = model.scope_at(parent.targets[0]).resolve(parent.targets[0].id)
        uses = [use for use in model.uses(binding) if isinstance(use.ctx, ast.Load)]
    receivers = [_state_dict_receiver(model, use) for use in uses]
    return bool(receivers) and all(
        receiver is not None and receiving(model, model.scope_at(receiver).resolve(receiver.id)) for receiver in receivers
    )


def _state_dict_receiver(model: SemanticModel, value: ast.AST) -> Optional[ast.Name]:
    """``net`` of ``net.load_state_dict(value)``, ``net.to(device).load_state_dict(value)``."""
    parent = model.parent(value)
    if not (isinstance(parent, ast.Call) and parent.args[:1] == [value] and isinstance(parent.func, ast.Attribute)):
        return None
    if parent.func.attr != "load_state_dict" or len(parent.args) > 1 or any(keyword.arg != "assign" for keyword in parent.keywords):
        return None  # ``strict=False`` copies what fits: the file may hold much more than the network
    receiver = module_of(parent.func.value)
    return receiver if isinstance(receiver, ast.Name) else None


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
    ) or _runs_a_downloader(model, node)


def _runs_a_downloader(model: SemanticModel, call: ast.Call) -> bool:
    """``os.system("wget " + url)``, ``subprocess.run(["curl", "-o", path, url])``: a shell
    command whose program, the first word of its leading string, is a downloader."""
    if not call.args or not model.resolved_names(call.func) & SHELL_RUNNERS:
        return False
    words = _leading_string(call.args[0]).split()
    return bool(words) and words[0] in SHELL_DOWNLOADERS


def _leading_string(node: ast.expr) -> str:
    """The text a command starts with, as far as the code spells it: a string, the start of an
    f-string, of a concatenation or ``%``/``.format`` template, or the first item of an argument list."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        return _leading_string(node.values[0])
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return _leading_string(node.left)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return _leading_string(node.func.value)
    if isinstance(node, (ast.List, ast.Tuple)) and node.elts:
        return _leading_string(node.elts[0])
    return ""


def _contains_download(model: SemanticModel, nodes: Iterable[ast.AST]) -> bool:
    return any(_is_download(model, part) for node in nodes for part in ast.walk(node))


def _downloaded(model: SemanticModel, scope: ast.AST, loaded: ast.expr, anchor: ast.AST, dotted: Optional[str] = None) -> bool:
    """Whether the code that runs before ``anchor`` in ``scope`` (the statements before it in each
    block around it, and what they contain) last binds the loaded name to what a download call
    returns (:func:`_last_bound_to_a_download`), or opens (``with open_url(url) as f``), or runs a
    download in a branch of an ``if`` that tests the loaded file: its name or attribute chain
    (``dotted``, by default the load's own), the string it holds, or the same call
    (``os.path.join(root, "vgg16.weight")``), unless the ``if`` saves that file itself
    (:func:`_saved_in`); or ``anchor`` is in a ``with`` block that opens a download as that name.
    An ``if`` around ``anchor`` is no such case (the load may be in the branch that does not
    download)."""
    dotted = dotted if dotted is not None else ast_dotted_name(loaded)
    name = dotted if dotted is not None and "." not in dotted else None
    path = _string_value(model, loaded)
    spelled = ast.dump(loaded)
    nodes = [*_blocks_around(model, scope, anchor), *own_nodes(list(_statements_before(model, scope, anchor)))]
    if name is not None and _last_bound_to_a_download(model, scope, loaded, anchor):
        return True
    for node in nodes:
        if name is not None and isinstance(node, (ast.With, ast.AsyncWith)) and any(
            isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == name
            and _contains_download(model, [item.context_expr])
            for item in node.items
        ):
            return True
        if isinstance(node, ast.If) and any(
            (dotted is not None and isinstance(part, (ast.Name, ast.Attribute)) and ast_dotted_name(part) == dotted)
            or (path is not None and _is_string(part, path))
            or (isinstance(part, ast.Call) and ast.dump(part) == spelled)
            for part in ast.walk(node.test)
        ):
            if (_contains_download(model, node.body) or _contains_download(model, node.orelse)) and not _saved_in(model, node, loaded):
                return True
    return False


def _saved_in(model: SemanticModel, branch: ast.If, loaded: ast.expr) -> bool:
    """Whether the ``if`` saves the loaded file itself (``torch.save(vgg.state_dict(), path)`` of
    weights it converted from a download): the program's own file, wherever it put the tensors."""
    read_back = model.derived(ReadBack)
    path = read_back.path_of(loaded)
    inside = {id(node) for node in ast.walk(branch)}
    return path is not None and any(id(call) in inside and read_back.same_path(saved, path) for call, _, saved in read_back.saves)


def _last_bound_to_a_download(model: SemanticModel, scope: ast.AST, loaded: ast.expr, anchor: ast.AST) -> bool:
    """Whether the loaded name was last bound, before ``anchor``, by an assignment that always runs
    before it (a statement before it in a block around it, or in a ``with`` block or ``try`` body
    there: :func:`_always_run`; not in a branch or a loop) of what a
    download returns, with no ``or`` or conditional expression choosing something else instead,
    and nothing binds the name between that assignment and ``anchor``. ``path =
    hf_hub_download(...)`` in one branch and ``path = args.name`` in the other loads a user's file
    in one of them; ``path = args.ckpt or hf_hub_download(...)`` too."""
    place = model.place(loaded) if isinstance(loaded, ast.Name) else None
    if place is None:
        return False
    assignments: List[Tuple[ast.stmt, ast.expr, ast.expr]] = []
    for statement in _always_run(list(_statements_before(model, scope, anchor))):
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            assignments.append((statement, statement.targets[0], statement.value))
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            assignments.append((statement, statement.target, statement.value))
    bound = [(statement, target, value) for statement, target, value in assignments if isinstance(target, ast.Name) and model.place(target) == place]
    if not bound:
        return False
    last, target, value = max(bound, key=lambda assignment: position(assignment[0]))
    if any(isinstance(node, (ast.BoolOp, ast.IfExp)) for node in ast.walk(value)) or not _contains_download(model, [value]):
        return False
    stores = [use for use in model.uses(place.binding) if isinstance(use.ctx, ast.Store) and use is not target]
    return not any(position(last) < position(store) < position(anchor) for store in stores)


TRY_STATEMENTS = (ast.Try, getattr(ast, "TryStar", ast.Try))
"""``try`` and, since Python 3.11, ``try``/``except*``."""


def _always_run(statements: List[ast.stmt]) -> Iterator[ast.stmt]:
    """``statements``, and the statements of the ``with`` blocks and ``try`` bodies among them
    (``with FileLock(lock): path = hf_hub_download(...)``), which run whenever they do unless an
    exception leaves them."""
    for statement in statements:
        yield statement
        if isinstance(statement, (ast.With, ast.AsyncWith)):
            yield from _always_run(statement.body)
        elif isinstance(statement, TRY_STATEMENTS):
            yield from _always_run([*statement.body, *statement.finalbody])


def _blocks_around(model: SemanticModel, scope: ast.AST, anchor: ast.AST) -> Iterator[ast.AST]:
    """The ``with`` statements around ``anchor``, up to ``scope`` (``f`` of ``with open_url(url) as f``)."""
    current = model.parent(anchor)
    while current is not None and current is not scope:
        if isinstance(current, (ast.With, ast.AsyncWith)):
            yield current
        current = model.parent(current)


def _statements_before(model: SemanticModel, scope: ast.AST, anchor: ast.AST) -> Iterator[ast.stmt]:
    """The statements before ``anchor`` in each block around it, up to ``scope``."""
    current: Optional[ast.AST] = anchor
    while current is not None and current is not scope:
        parent = model.parent(current)
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if isinstance(block, list):
                index = next((i for i, item in enumerate(block) if item is current), None)
                if index is not None:
                    yield from block[:index]
        current = parent


def _downloaded_by_every_caller(model: SemanticModel, function: Function, loaded: ast.expr) -> bool:
    """Whether the load reads a path given by a parameter (``args.model_path``, ``path``) that the
    function never rebinds and every call of it in the module (one at least) passes from a caller
    that fetches it when missing before the call (see :func:`_downloaded`)."""
    dotted = ast_dotted_name(loaded)
    if dotted is None or not model.call_sites or not function.calls:
        return False
    root, _, rest = dotted.partition(".")
    if root not in function.positional or _rebinds(function, root):
        return False
    index = function.positional.index(root)
    for site in function.calls:
        argument = next((value for position, value in model.positional_arguments(site) if position == index), None)
        passed = ast_dotted_name(argument) if argument is not None else None
        if argument is None or passed is None:
            return False
        caller_scope: ast.AST = site.caller.node if site.caller is not None else model.tree
        if not _downloaded(model, caller_scope, argument, site.node, dotted=passed + ("." + rest if rest else "")):
            return False
    return True


def _rebinds(function: Function, root: str) -> bool:
    """Whether the function assigns the name ``root`` or an attribute chain on it."""
    for node in own_nodes(function.node.body):
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            dotted = ast_dotted_name(node)
            if dotted is not None and (dotted == root or dotted.startswith(root + ".")):
                return True
    return False


def _string_value(model: SemanticModel, loaded: ast.expr) -> Optional[str]:
    """The path a load reads, where the code spells it: a string, or a name whose every binding
    is an assignment of that one string (not a parameter, import, loop or ``with`` target)."""
    if isinstance(loaded, ast.Constant) and isinstance(loaded.value, str):
        return loaded.value
    if not isinstance(loaded, ast.Name):
        return None
    binding = model.scope_at(loaded).resolve(loaded.id)
    if binding.name in binding.scope.parameters or model.resolved_names(loaded):
        return None
    values: Set[object] = set()
    for use in model.uses(binding):
        if isinstance(use.ctx, ast.Load):
            continue
        statement = model.parent(use)
        single = isinstance(statement, ast.Assign) and statement.targets == [use]
        single = single or (isinstance(statement, ast.AnnAssign) and statement.target is use)
        value = getattr(statement, "value", None) if single else None
        values.add(value.value if isinstance(value, ast.Constant) else None)
    only = values.pop() if len(values) == 1 else None
    return only if isinstance(only, str) else None


def _is_string(node: ast.AST, value: str) -> bool:
    return isinstance(node, ast.Constant) and node.value == value
