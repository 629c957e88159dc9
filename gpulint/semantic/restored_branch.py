"""Loads that restore, in one branch of an ``if``, what the other branch builds and puts on the GPU
or saves.

A script that resumes training builds its models and optimizers in one branch and moves the models
to the GPU there (``Gz = Encoder(...)``, then ``Gz = Gz.cuda()`` under ``if args.cuda:``), and in
the other branch restores them whole from the files a previous run pickled (``Gz =
torch.load(...)``, ``G_optimizer = torch.load(...)``), with no move of its own. The load is then the
program's placement: after the ``if`` the code expects its models where the first branch puts them,
and ``map_location="cpu"`` would leave the restored ones on the CPU beside GPU data.

A load counts where it is a whole statement of a branch binding a plain name (``name =
torch.load(...)``) that its own branch never moves (``name.cuda()``, ``name.to(device)``,
``name.cpu()``: there the code places the restored model itself), and the other branch of the
same ``if`` moves that name to the GPU (``name = name.cuda()``, ``name.to("cuda")``, at any depth of
that branch; a move to a ``device`` the code names may be a move to the CPU, and does not count), or
saves it whole to the path the load reads, spelt the same (``torch.save(model, "gru.pt")`` after
training it, beside ``model = torch.load("gru.pt")``): the load gives back what that branch leaves,
where it left it. The other whole loads of
the same branch that bind a name the other branch also binds (the optimizers built over the moved
models) are part of the same restore, when one load of the branch counts by itself.

A program may also choose the device by the branch itself: ``if torch.cuda.is_available():
self.model = torch.load(path)`` / ``else: self.model = torch.load(path, map_location="cpu")``.
Where what it restores is a whole module (the name is called, or a method only modules have is
called on it: ``.eval()``, ``.parameters()``), the unmapped load is the placement the code chose for
a machine with a GPU, and the mapped one shows it knows the alternative
(:func:`restored_where_cuda_is`). A state dict or checkpoint restored so is not a module and still
counts: its tensors are copied into a model, wherever they land.
"""

from __future__ import annotations

import ast
from typing import Callable, Iterator, List, Optional, Sequence, Tuple

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.read_back import ReadBack, loaded_path
from gpulint.semantic.run_as_loaded import moved_to_the_gpu
from gpulint.semantic.survey import ast_dotted_name
from gpulint.semantic.torch_api import CUDA_AVAILABILITY, DEVICE_MOVES, MODULE_ONLY_METHODS

LoadTest = Callable[[ast.Call], bool]
"""Whether a call is a load the rule reads (``torch.load`` and its kin)."""


def restores_what_the_other_branch_places(model: SemanticModel, call: ast.Call, is_load: LoadTest) -> bool:
    """Whether ``call`` restores, whole, a name the other branch of its ``if`` moves to the GPU (or
    belongs to a branch whose loads do so; see the module docstring)."""
    found = _branches(model, call)
    if found is None:
        return False
    name, own, other = found
    if _moved(own, name, to_gpu_only=False):
        return False
    if _moved(other, name, to_gpu_only=True) or _saved_whole(model, other, name, call):
        return True
    if name not in _bound_names(other):
        return False
    return any(
        loaded != name and _moved(other, loaded, to_gpu_only=True) and not _moved(own, loaded, to_gpu_only=False)
        for loaded in _loaded_names(own, is_load)
    )


def restored_where_cuda_is(model: SemanticModel, call: ast.Call, is_load: LoadTest) -> bool:
    """Whether ``call`` is the load of the true branch of ``if torch.cuda.is_available():`` that
    binds a name (or attribute) the other branch binds to a load of the same path with a
    ``map_location``, and the module uses that name as a module (see the module docstring)."""
    statement = model.parent(call)
    branching = model.parent(statement) if isinstance(statement, ast.Assign) else None
    if not (
        isinstance(statement, ast.Assign) and statement.value is call and len(statement.targets) == 1
        and isinstance(branching, ast.If) and any(part is statement for part in branching.body)
        and _tests_cuda(model, branching.test)
    ):
        return False
    target = ast_dotted_name(statement.targets[0])
    loaded = loaded_path(call)
    if target is None or loaded is None:
        return False
    read_back = model.derived(ReadBack)
    mapped = any(
        isinstance(other, ast.Assign) and len(other.targets) == 1 and ast_dotted_name(other.targets[0]) == target
        and isinstance(other.value, ast.Call) and is_load(other.value)
        and any(keyword.arg == "map_location" for keyword in other.value.keywords)
        and read_back.same_path(loaded_path(other.value), loaded)
        for other in branching.orelse
    )
    return mapped and _used_as_a_module(model, target)


def _tests_cuda(model: SemanticModel, test: ast.expr) -> bool:
    """``torch.cuda.is_available()``, alone or as a part of an ``and``."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    return any(isinstance(part, ast.Call) and CUDA_AVAILABILITY in model.resolved_names(part.func) for part in parts)


def _used_as_a_module(model: SemanticModel, name: str) -> bool:
    """Whether the module calls ``name`` (``self.model_f(x)``) or a method only modules have on it."""
    for node in model.nodes(ast.Call):
        func = node.func
        if ast_dotted_name(func) == name:
            return True
        if isinstance(func, ast.Attribute) and func.attr in MODULE_ONLY_METHODS and ast_dotted_name(func.value) == name:
            return True
    return False


def _branches(model: SemanticModel, call: ast.Call) -> Optional[Tuple[str, Sequence[ast.stmt], Sequence[ast.stmt]]]:
    """The name ``call`` binds, its own branch and the other branch of the ``if`` whose branch holds
    the statement ``name = call``; None for anything else."""
    statement = model.parent(call)
    if not (isinstance(statement, ast.Assign) and statement.value is call and len(statement.targets) == 1):
        return None
    target = statement.targets[0]
    branching = model.parent(statement)
    if not isinstance(target, ast.Name) or not isinstance(branching, ast.If):
        return None
    if any(part is statement for part in branching.body):
        return target.id, branching.body, branching.orelse
    if any(part is statement for part in branching.orelse):
        return target.id, branching.orelse, branching.body
    return None


def _loaded_names(branch: Sequence[ast.stmt], is_load: LoadTest) -> Iterator[str]:
    """The names the statements of ``branch`` bind, whole, to a load (``name = torch.load(...)``)."""
    for statement in branch:
        if (
            isinstance(statement, ast.Assign) and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name)
            and isinstance(statement.value, ast.Call) and is_load(statement.value)
        ):
            yield statement.targets[0].id


def _bound_names(branch: Sequence[ast.stmt]) -> List[str]:
    """Every name ``branch`` binds, at any depth."""
    return [
        node.id for statement in branch for node in ast.walk(statement)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
    ]


def _saved_whole(model: SemanticModel, branch: Sequence[ast.stmt], name: str, load: ast.Call) -> bool:
    """``torch.save(name, path)`` somewhere in ``branch``, ``path`` the load's own path
    (:meth:`~gpulint.semantic.read_back.ReadBack.same_path`)."""
    read_back = model.derived(ReadBack)
    loaded = loaded_path(load)
    in_branch = {id(node) for statement in branch for node in ast.walk(statement)}
    return loaded is not None and any(
        id(call) in in_branch and isinstance(value, ast.Name) and value.id == name
        and read_back.same_path(saved, read_back.path_of(loaded))
        for call, value, saved in read_back.saves
    )


def _moved(branch: Sequence[ast.stmt], name: str, to_gpu_only: bool) -> bool:
    """``name.cuda()`` or ``name.to("cuda...")`` somewhere in ``branch``
    (:func:`~gpulint.semantic.run_as_loaded.moved_to_the_gpu`); unless ``to_gpu_only``, also
    ``name.to(...)`` whatever the device and ``name.cpu()``."""
    for statement in branch:
        for node in ast.walk(statement):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            receiver = node.func.value
            if isinstance(receiver, ast.Name) and receiver.id == name and (
                moved_to_the_gpu(node) or (not to_gpu_only and node.func.attr in DEVICE_MOVES)
            ):
                return True
    return False
