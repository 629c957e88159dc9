"""Loaded values that a single-GPU program uses, as they are loaded, where they must already be on
the GPU.

``sam = torch.jit.load(path)`` and then ``sam(image.cuda(), boxes.cuda())`` — or ``segment(image,
sam)`` where ``segment`` calls its parameter on ``.cuda()`` inputs — relies on the load putting the
module back on the GPU it was saved from: the program never moves it. So does ``z = torch.load(path)``
and then ``generator(z)`` after ``generator.cuda()``: the tensor goes, as it came back, into a module
the program put on the GPU. There ``map_location="cpu"`` would leave the loaded value on the CPU
beside GPU inputs or weights, and the load is the program's own placement.

An input counts as moved where it is spelt so (``x.cuda()``, ``x.to("cuda")``), wrapped in
``Variable(...)``, or is a name the statements just before bind so (``img = data.cuda()``, in every
branch of an ``if``; a rebinding that keeps the device, ``img = img.view(n, -1)``, is passed over). Inputs moved
to a device the code names (``x.to(device)``) may be on the CPU: the load is then still reported,
without a fix (:func:`run_on_device_inputs_as_loaded`), for on the GPU the fix would break the run;
unless that device may be the first GPU (:func:`may_be_the_first_gpu`: ``device``, ``"cuda" if
available else "cpu"``), where a program for one GPU relies on the load as on a ``.cuda()`` move.

Decided where a function's or the module's name (not a class attribute) is bound by the load
itself (not a part of it), and every read the load reaches is such a call (a positional argument
moved), a mode switch (``model.eval()``) or an argument of a function of the module (bound by one
``def``, not a method) every read of whose parameter is one. The reads the load reaches are all
reads where it is the name's only assignment; otherwise, where the load is a plain assignment
statement, those its value may reach as the statements run (:mod:`gpulint.semantic.reached_reads`:
in a script that bound the name before, up to and in the next assignment). Not in code that runs on several GPUs (see :mod:`semantic.moved_at_once`).
"""

from __future__ import annotations

import ast
from typing import Callable, List, Optional

from gpulint.semantic.model import Place, SemanticModel
from gpulint.semantic.reached_reads import reached_reads
from gpulint.semantic.survey import ast_dotted_name
from gpulint.semantic.torch_api import (
    DEVICE_CONTEXT, DEVICE_NAME_WORDS, DEVICE_TAKING_MAKERS, MODE_SWITCHES, MULTI_DEVICE_WORDS, PLACEMENT_KEEPING_METHODS,
    TENSOR_NEW_METHODS, VARIABLE, is_torch_tensor_function,
)

Placement = Callable[[ast.expr], bool]
"""Whether an expression puts its value where the run needs the loaded value to be."""
DeviceTest = Callable[[ast.expr], bool]
"""Whether a device, as the code spells it, is one a run needs the loaded value on."""


def run_on_gpu_inputs_as_loaded(model: SemanticModel, call: ast.Call) -> bool:
    """Whether what ``call`` loads is used as loaded beside values the program moves to the GPU."""
    return _used_as_loaded(model, call, moved_to_the_gpu)


def run_on_device_inputs_as_loaded(model: SemanticModel, call: ast.Call, device_test: Optional[DeviceTest] = None) -> bool:
    """Whether what ``call`` loads is used as loaded beside values the program moves to a device it
    names (``x.to(device)``), which may be the GPU (or passes ``device_test``:
    :func:`may_be_the_first_gpu`)."""
    return _used_as_loaded(model, call, lambda argument: on_a_device(argument, device_test))


def _used_as_loaded(model: SemanticModel, call: ast.Call, placed: Placement) -> bool:
    bound = model.assigned_name(call)
    if bound is None or bound[1].binding.scope.is_class or model.spells(MULTI_DEVICE_WORDS):
        return False
    target, place = bound
    reads = _reads_reached(model, target, place)
    if not reads:
        return False
    runs = [read for read in reads if not _switches_mode(model, read)]
    if runs and all(_run_on_placed_inputs(model, read, placed, through_parameter=True) for read in runs):
        return True
    return all(_fed_to_a_placed_module(model, read, placed) for read in reads)


def _reads_reached(model: SemanticModel, target: ast.Name, place: Place) -> List[ast.Name]:
    """The reads the assignment ``target = ...`` reaches (see the module's docstring); none where
    that is not known."""
    uses = model.uses(place.binding)
    if [use for use in uses if not isinstance(use.ctx, ast.Load)] == [target]:
        return [use for use in uses if isinstance(use.ctx, ast.Load)]
    statement = model.parent(target)
    if not (isinstance(statement, ast.Assign) and statement.targets == [target]):
        return []
    return reached_reads(model, statement, place.binding) or []


def _switches_mode(model: SemanticModel, read: ast.Name) -> bool:
    """``read.eval()`` or ``read.train(False)`` as a statement of its own."""
    method = model.parent(read)
    call = model.parent(method) if isinstance(method, ast.Attribute) else None
    return (
        isinstance(method, ast.Attribute) and method.attr in MODE_SWITCHES
        and isinstance(call, ast.Call) and call.func is method and isinstance(model.parent(call), ast.Expr)
    )


def _run_on_placed_inputs(model: SemanticModel, read: ast.Name, placed: Placement, through_parameter: bool) -> bool:
    """``read(..., x.cuda(), ...)``, or (once) ``f(..., read, ...)`` with ``f``'s parameter so used,
    ``f`` a function (not a method, which a subclass may override) bound by one ``def`` only."""
    call = model.parent(read)
    if not isinstance(call, ast.Call):
        return False
    if call.func is read:
        return any(placed_input(model, argument, placed) for argument in call.args)
    site = model.site_of.get(id(call))
    if not through_parameter or site is None or site.callee is None or not model.defined_once(call.func):
        return False
    index = next((position for position, argument in model.positional_arguments(site) if argument is read), None)
    if index is None or index >= len(site.callee.positional):
        return False
    parameter = site.callee.scope.resolve(site.callee.positional[index])
    reads = [use for use in model.uses(parameter) if isinstance(use.ctx, ast.Load) and not _switches_mode(model, use)]
    stores = [use for use in model.uses(parameter) if not isinstance(use.ctx, ast.Load)]
    return bool(reads) and not stores and all(_run_on_placed_inputs(model, use, placed, through_parameter=False) for use in reads)


def _fed_to_a_placed_module(model: SemanticModel, read: ast.Name, placed: Placement) -> bool:
    """``module(..., read, ...)`` where the statements just before put ``module`` there
    (``module.cuda()``, ``module = Net().cuda()``)."""
    call = model.parent(read)
    if not (isinstance(call, ast.Call) and read in call.args and isinstance(call.func, ast.Name)):
        return False
    return _bound_placed_before(model, call, call.func.id, placed, statement_moves=True)


def placed_input(model: SemanticModel, argument: ast.expr, placed: Placement) -> bool:
    """An argument put where ``placed`` says: a placed expression, ``Variable`` of one, or a name
    the statements just before bind so (:func:`_bound_placed_before`)."""
    if isinstance(argument, ast.Call) and len(argument.args) == 1 and not argument.keywords and VARIABLE in model.resolved_names(argument.func):
        return placed_input(model, argument.args[0], placed)
    if isinstance(argument, ast.Name):
        return _bound_placed_before(model, argument, argument.id, placed, statement_moves=False)
    return placed(argument)


def _bound_placed_before(model: SemanticModel, node: ast.AST, name: str, placed: Placement, statement_moves: bool) -> bool:
    """Whether the statements before the one holding ``node``, in its block, last bind ``name`` to
    a placed value (in every branch of an ``if``), or (``statement_moves``) move it in place
    (``name.cuda()``); statements that do not bind the name are passed over."""
    statement = next((around for around in [node, *model.ancestors(node)] if isinstance(around, ast.stmt)), None)
    if statement is None:
        return False
    block = model.block_of(statement) or []
    before = next((number for number, member in enumerate(block) if member is statement), 0)
    return _last_placement(block[:before], name, placed, statement_moves) is True


def _last_placement(statements: List[ast.stmt], name: str, placed: Placement, statement_moves: bool) -> Optional[bool]:
    """True where the last of ``statements`` to bind ``name`` places it, False where it binds it
    otherwise, None where none binds it."""
    for statement in reversed(statements):
        if isinstance(statement, ast.Assign) and [_name_of(target) for target in statement.targets] == [name]:
            if _keeps_placement_of(statement.value, name):
                continue
            return placed(statement.value)
        if statement_moves and isinstance(statement, ast.Expr) and _moves(statement.value, name, placed):
            return True
        if isinstance(statement, ast.If):
            branches = [_last_placement(branch, name, placed, statement_moves) for branch in (statement.body, statement.orelse)]
            if all(branch is True for branch in branches):
                return True
            if any(branch is not None for branch in branches):
                return False
            continue
        if any(isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load) for node in ast.walk(statement)):
            return False
    return None


def _keeps_placement_of(value: ast.expr, name: str) -> bool:
    """``name.view(n, -1)``, ``name.float().unsqueeze(0)``: methods that keep the device, on the name
    itself; also a tensor function of torch spelt in full and given it first
    (``torch.nn.functional.normalize(name, dim=1)``)."""
    if not isinstance(value, ast.Call):
        return False
    while isinstance(value, ast.Call):
        if isinstance(value.func, ast.Attribute) and value.func.attr in PLACEMENT_KEEPING_METHODS:
            value = value.func.value
        elif value.args and is_torch_tensor_function(ast_dotted_name(value.func) or ""):
            value = value.args[0]
        else:
            break
    return _name_of(value) == name


def _name_of(target: ast.expr) -> Optional[str]:
    return target.id if isinstance(target, ast.Name) else None


def _moves(value: ast.expr, name: str, placed: Placement) -> bool:
    """``name.cuda()`` (or as ``placed`` takes a move) called on the name itself."""
    return placed(value) and isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and _name_of(value.func.value) == name


def moved_to_the_gpu(argument: ast.expr) -> bool:
    """``x.cuda()``, ``x[None].cuda()``, ``x.cuda(0)``, ``x.to("cuda")``, ``x.to("cuda:0")``,
    ``x.to(torch.device("cuda"))``, ``x.to(0)`` (:func:`_spells_the_gpu`), given first or as
    ``device=``; not a GPU the run chooses (``x.to(f"cuda:{args.gpu}")``, ``x.to(1)``,
    ``x.cuda(args.gpu)``), which need not be the one a load puts its tensors back on."""
    if not (isinstance(argument, ast.Call) and isinstance(argument.func, ast.Attribute)):
        return False
    devices = devices_given(argument)
    if argument.func.attr == "cuda":
        return all(_spells_the_gpu(value) for value in devices)
    return argument.func.attr == "to" and any(_spells_the_gpu(value) for value in devices)


def on_a_device(argument: ast.expr, device_test: Optional[DeviceTest] = None) -> bool:
    """What :func:`moved_to_the_gpu` takes, or ``x.to(device)``, ``x.cuda(args.gpu)``: a device the
    code names (:func:`_may_be_a_gpu`, or as ``device_test`` takes it), given first or as ``device=``."""
    if moved_to_the_gpu(argument):
        return True
    if not (isinstance(argument, ast.Call) and isinstance(argument.func, ast.Attribute) and argument.func.attr in ("to", "cuda")):
        return False
    return any((device_test or _may_be_a_gpu)(value) for value in devices_given(argument))


def made_on_a_device(model: SemanticModel, call: ast.Call, device_test: Optional[DeviceTest] = None) -> bool:
    """A tensor one of torch's makers (:data:`~gpulint.semantic.torch_api.DEVICE_TAKING_MAKERS`, or
    a tensor's ``new_zeros``-like methods) makes on the GPU or on a device the code names:
    ``torch.zeros(n, device=device)``, ``torch.randn(1, 3, device="cuda")``,
    ``ref.new_zeros(shape, device=device)``; not ``device="cpu"``, nor another call given a device
    (``torch.Generator(device=device)``)."""
    made_by_a_tensor = isinstance(call.func, ast.Attribute) and call.func.attr in TENSOR_NEW_METHODS
    if not (made_by_a_tensor or model.resolved_names(call.func) & DEVICE_TAKING_MAKERS):
        return False
    return any((device_test or _may_be_a_gpu)(keyword.value) for keyword in call.keywords if keyword.arg == "device")


def _spells_the_gpu(value: ast.expr) -> bool:
    """A device spelt as the first GPU, where a load puts back what was saved from a single-GPU run:
    ``"cuda"``, ``"cuda:0"`` (any literal ``"cuda..."``), the index ``0``, or ``torch.device`` given
    one of them."""
    if isinstance(value, ast.Constant):
        return str(value.value).startswith("cuda") or (type(value.value) is int and value.value == 0)
    device = _device_made(value)
    return device is not None and _spells_the_gpu(device)


def _may_be_a_gpu(value: ast.expr) -> bool:
    """The first GPU (:func:`_spells_the_gpu`), or a device the code names, which may be a GPU: a
    name or attribute spelt with one of :data:`~gpulint.semantic.torch_api.DEVICE_NAME_WORDS`
    (``device``, ``self.device``, ``args.gpu``, ``local_rank``), a GPU the run chooses
    (``f"cuda:{rank}"``, an index), a choice between the GPU and another device (``"cuda" if
    available else "cpu"``), or ``torch.device`` given one."""
    return any(_names_a_gpu(choice) for choice in _device_choices(value))


def _names_a_gpu(choice: ast.expr) -> bool:
    """One spelling of :func:`_may_be_a_gpu`'s devices."""
    if _spells_the_gpu(choice):
        return True
    if isinstance(choice, ast.JoinedStr):
        first = choice.values[0] if choice.values else None
        return isinstance(first, ast.Constant) and str(first.value).startswith("cuda")
    if isinstance(choice, ast.Constant):
        return type(choice.value) is int
    return any(word in _spelt(choice) for word in DEVICE_NAME_WORDS)


def may_be_the_first_gpu(value: ast.expr) -> bool:
    """A device that may be the first GPU, where a load puts back what a run on one GPU saved: the
    first GPU spelt (:func:`_spells_the_gpu`), a name or attribute spelt ``device`` and not for an
    index or a rank (``device``, ``self.device``, ``args.device``; not ``args.gpu``, ``cuda_id`` or
    ``local_rank``), ``torch.device`` given one, or a choice between such devices and the CPU
    (``"cuda" if available else "cpu"``). Not a GPU the run picks by index (``.to(1)``,
    ``f"cuda:{args.gpu}"``), nor the CPU alone."""
    choices = _device_choices(value)
    first = [choice for choice in choices if _spells_the_gpu(choice) or _names_a_device(choice)]
    return bool(first) and all(choice in first or _spells_the_cpu(choice) for choice in choices)


def _names_a_device(choice: ast.expr) -> bool:
    """A name or attribute spelt ``device`` and not for an index or a rank (``self.device``)."""
    spelt = _spelt(choice)
    return "device" in spelt and not any(word in spelt for word in DEVICE_NAME_WORDS if word != "device")


def _spells_the_cpu(choice: ast.expr) -> bool:
    return isinstance(choice, ast.Constant) and str(choice.value).startswith("cpu")


def _device_choices(value: ast.expr) -> List[ast.expr]:
    """The spellings a device may take: ``torch.device(x)``'s ``x``, either branch of a conditional
    expression (``"cuda" if available else "cpu"``), or ``value`` itself."""
    device = _device_made(value)
    if device is not None:
        return _device_choices(device)
    if isinstance(value, ast.IfExp):
        return [*_device_choices(value.body), *_device_choices(value.orelse)]
    return [value]


def _spelt(value: ast.expr) -> str:
    """How a name, or an attribute's last part, is spelt, in lower case (``args.device``:
    ``device``); empty for anything else."""
    return (value.id if isinstance(value, ast.Name) else value.attr if isinstance(value, ast.Attribute) else "").lower()


def devices_given(call: ast.Call) -> List[ast.expr]:
    """The device a ``to`` or ``cuda`` call is given, first or as ``device=`` (none for ``cuda()``)."""
    return [*call.args[:1], *(keyword.value for keyword in call.keywords if keyword.arg == "device")]


def _device_made(value: ast.expr) -> Optional[ast.expr]:
    """``torch.device(x)`` (or ``torch.device(type=x)``): the ``x`` given, as the call spells it;
    None for anything else."""
    if not (isinstance(value, ast.Call) and ast_dotted_name(value.func) == DEVICE_CONTEXT):
        return None
    given = [*value.args[:1], *(keyword.value for keyword in value.keywords if keyword.arg == "type")]
    return given[0] if given else None
