"""TorchScript modules a program runs where their load puts them.

``model = torch.jit.load(path)`` and then only ``model.half()`` and ``model(image)``: nothing in the
file moves the module, so it runs on the device it was exported on. In code that may use an
accelerator, a module traced on the GPU runs there on GPU inputs; with ``map_location="cpu"`` it
would stay on the CPU and meet them there. Decided where the load is bound to a plain name (not a
class attribute, which methods read through ``self``) and every read of that binding the assignment
may reach (after it, not in another branch of an ``if`` around it) calls it, or calls a method of it
that does not move it (not ``to``, ``cuda``, ``cpu``): no read hands it to other code or stores it
elsewhere. A function's name never read counts too (its module goes where ``locals()`` takes it,
unmoved); a module-level one does not (another module may import it).

A whole pickled module is the same: ``decoder = torch.load(path)`` and then ``generate(decoder)``,
where ``generate`` calls ``decoder(inp, hidden)`` after ``inp = inp.cuda()``, or ``self.model =
torch.load(path)`` and ``model = self.model; model(x.to(self.device))``. A ``torch.load`` holds a
module the file runs unmoved (:func:`unmoved_loaded_module`) where the name or ``self`` attribute the
load is bound to (also with an annotation, or the module under constant keys of the loaded
checkpoint, put through methods that return it unmoved: ``model = torch.load(path)["model"].eval()``,
or ``checkpoint = torch.load(path)`` and then ``model = checkpoint["model"]``) is called somewhere
(also as ``model.forward(x)``), or, where the code calls a method of ``torch.nn.Module`` that tensors
lack on it (``model.eval()``: a module, not a vocabulary), a method its own class defines is
(``model.predict(x.cuda())``, ``model.eval().generate(x.cuda())``), and every read of it (of a name
an assignment binds, those its value may reach as the statements run, where no other scope reads
the name: a notebook's ``summary(copy.deepcopy(unet).to("cpu"))`` cells before ``unet =
torch.load(path)`` reads the network trained there, not the loaded one), followed
through plain aliases (``model = self.model``), keys bound to a name and into the parameters of the
module's functions it is passed to (or of an undecorated function another module of the project
defines, ``testing(loader, model, device)`` after ``from test import testing``, read in its own
module), is a call of it, a method call that does not move it or reach
its submodules (``init_hidden(1)``, ``eval()``; not ``type``, ``apply`` or ``modules``) and whose
result, where it is a module (called, put through a method tensors lack, or moved as a statement of
its own), is not moved (``model.fuse().cuda()`` may move the loaded module itself), a save of it whole (``torch.save(net,
path)`` pickles it where it is), a read of a part
that nothing moves, binds, stores or hands on but torch's functions and value builtins, or an item of
a list it is appended to: nothing in the file moves it, and no read gives it to code gpulint does
not read. A load kept on ``self`` of a class with a base (a ``torch.nn`` module may be moved as a
whole) is not decided. The function that runs it (or the module's own code, for a run there) must
move something to a device (``.cuda()``, ``.to("cuda")``, ``.to(device)``, or make a tensor there
with one of torch's makers: ``torch.zeros(n, device=device)``; not a cast to a dtype): one that
leaves its inputs on the CPU would run a module mapped there too.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.project_modules import ImportedDefinition, imported_function
from gpulint.semantic.torch_api import (
    ACCELERATOR_MOVES, DEVICE_MOVES, JIT_LOAD, LOADERS, MODULE_API, MODULE_CALL_METHOD, MODULE_ONLY_METHODS, MODULE_RETURNING_METHODS,
    SUBMODULE_REACHING_METHODS, TORCH_SAVE,
)
from gpulint.semantic.one_example import PYTHON_BUILTINS
from gpulint.semantic.reached_reads import reached_reads
from gpulint.semantic.run_as_loaded import DeviceTest, devices_given, made_on_a_device, on_a_device
from gpulint.semantic.survey import own_nodes, position


Read = Tuple[SemanticModel, ast.expr]
"""A read of a loaded module, with the semantic model of the module it is in."""


def unmoved_script_module(model: SemanticModel, call: ast.Call) -> bool:
    """Whether ``call`` is a ``torch.jit.load`` whose module the file never moves."""
    if model.resolved_names(call.func) != {JIT_LOAD}:
        return False
    bound = model.assigned_name(call)
    if bound is None or bound[1].binding.scope.is_class:
        return False  # a class attribute is also read as ``self.<name>``, which may move it
    target, place = bound
    reads = [
        use for use in model.uses(place.binding)
        if isinstance(use.ctx, ast.Load) and position(use) > position(target) and not _exclusive(model, target, use)
    ]
    if not reads and not place.binding.scope.is_function:
        return False  # another module may import the name and move what it holds
    return all(_runs_in_place(model, read) for read in reads)


def unmoved_loaded_module(model: SemanticModel, call: ast.Call, device_test: Optional[DeviceTest] = None) -> bool:
    """Whether ``call`` is a ``torch.load`` of a module the file runs but never moves (see the
    module docstring), beside values moved to a device that ``device_test`` takes where it is given
    (:func:`~gpulint.semantic.run_as_loaded.may_be_the_first_gpu`)."""
    if not model.resolved_names(call.func) & LOADERS:
        return False
    target = _bound_module(model, call)
    if target is None:
        return False
    if isinstance(target, ast.Attribute) and _owner_may_move(model, target):
        return False
    reads = _bound_reads(model, target)
    if not reads:
        return False
    pending: List[Tuple[int, SemanticModel, ast.expr]] = [(0, model, read) for read in reads]
    seen: Set[int] = set()
    runs: List[Tuple[SemanticModel, ast.Call]] = []
    method_runs: List[Tuple[int, SemanticModel, ast.Call]] = []
    modules: Set[int] = set()
    objects = 1
    while pending:
        held, where, read = pending.pop()
        if id(read) in seen:
            continue
        seen.add(id(read))
        parent = where.parent(read)
        if isinstance(parent, ast.Call) and parent.func is read:
            runs.append((where, parent))
            continue
        if _module_method_called(where, read):
            modules.add(held)
        run = _own_method_run(where, read)
        if run is not None and _result_moved(where, run):
            return False
        if run is not None and _method_name(run) == MODULE_CALL_METHOD:
            runs.append((where, run))
            continue
        if run is not None:
            method_runs.append((held, where, run))
            continue
        followed = _followed_reads(where, read)
        if followed is None:
            return False
        if _module_of(where, read) is not _module_of(where, read, keys=False):
            held, objects = objects, objects + 1  # a part under a key: another object than the checkpoint
        pending.extend((held, other, led) for other, led in followed)
    runs.extend((where, run) for held, where, run in method_runs if held in modules)
    return any(_moves_values_around(where, run, device_test) for where, run in runs)


def _bound_module(model: SemanticModel, call: ast.Call) -> Optional[ast.expr]:
    """The one target the load's module is bound to: ``model = torch.load(path)``, ``model:
    nn.Module = torch.load(path)``, or the module kept under keys of the loaded checkpoint and put
    through methods that return it unmoved (``model = torch.load(path)["model"]["net"].eval()``);
    None for anything else."""
    return _binding_of(model, _module_of(model, call))


def _module_of(model: SemanticModel, loaded: ast.expr, keys: bool = True) -> ast.expr:
    """The outermost of ``loaded["key"]...`` or ``loaded.get("key")`` (constant keys, where
    ``keys``) put through methods that return the module without moving it (``.eval()``,
    ``.float()``; not ``.to``, ``.cuda``, ``.cpu``)."""
    node = loaded
    while True:
        parent = model.parent(node)
        if keys and isinstance(parent, ast.Subscript) and parent.value is node and isinstance(parent.slice, ast.Constant):
            node = parent
            continue
        call = model.parent(parent) if isinstance(parent, ast.Attribute) and parent.value is node else None
        if keys and isinstance(call, ast.Call) and _keyed_get(call):
            node = call
            continue
        if (
            isinstance(parent, ast.Attribute) and isinstance(call, ast.Call) and call.func is parent
            and parent.attr in MODULE_RETURNING_METHODS - DEVICE_MOVES
        ):
            node = call
            continue
        return node


def _keyed_get(call: ast.Call) -> bool:
    """``checkpoint.get("model")``: a dict's item under a constant key, with no default."""
    return (
        isinstance(call.func, ast.Attribute) and call.func.attr == "get" and len(call.args) == 1
        and isinstance(call.args[0], ast.Constant) and not call.keywords
    )


def _binding_of(model: SemanticModel, module: ast.expr) -> Optional[ast.expr]:
    """The target ``module`` is bound to as the whole value of an assignment of one target; None
    otherwise."""
    statement = model.parent(module)
    if isinstance(statement, ast.Assign) and statement.value is module and len(statement.targets) == 1:
        return statement.targets[0]
    if isinstance(statement, ast.AnnAssign) and statement.value is module:
        return statement.target
    return None


def _bound_reads(model: SemanticModel, target: ast.expr) -> Optional[List[ast.expr]]:
    """The reads of what ``target`` holds: for a name an assignment of one target binds, those
    its value may reach as the statements run (:func:`~gpulint.semantic.reached_reads.reached_reads`;
    not a read of the name's earlier value, ``summary(copy.deepcopy(net).to("cpu"))`` before the
    load), where no other scope reads the name; every read otherwise
    (:meth:`~gpulint.semantic.model.SemanticModel.target_reads`)."""
    statement = model.parent(target)
    place = model.place(target) if isinstance(target, ast.Name) else None
    if place is not None and isinstance(statement, ast.Assign) and statement.targets == [target]:
        reached = reached_reads(model, statement, place.binding)
        if reached is not None:
            return list(reached)
    return model.target_reads(target)


def _method_call(model: SemanticModel, read: ast.expr) -> Optional[ast.Call]:
    """``read.name(...)``: the call of a method of what ``read`` names; None for any other read."""
    parent = model.parent(read)
    if not (isinstance(parent, ast.Attribute) and parent.value is read):
        return None
    call = model.parent(parent)
    return call if isinstance(call, ast.Call) and call.func is parent else None


def _own_method_run(model: SemanticModel, read: ast.expr) -> Optional[ast.Call]:
    """A call of a method the loaded object's own class defines, also after methods that return
    it unmoved (``read.predict(x)``, ``read.eval().generate(tokens)``: not one of ``torch.nn.Module``'s,
    nor a dunder name), which runs a module where it is; None for any other read."""
    call = _method_call(model, _module_of(model, read, keys=False))
    if call is None or not isinstance(call.func, ast.Attribute):
        return None
    name = call.func.attr
    own = not (name in MODULE_API | DEVICE_MOVES | SUBMODULE_REACHING_METHODS or name.startswith("__") or _keyed_get(call))
    return call if own else None


def _result_moved(model: SemanticModel, run: ast.Call) -> bool:
    """Whether what a method of the loaded object returns is a module that is then moved to a
    device: moved in a chain or through the one name the chain is bound to (``model.fuse().cuda()``,
    ``fused = model.fuse()`` and then ``fused.to(device)``), and used as a module: called, put
    through a method tensors lack, or moved as a statement of its own, which moves a module in place
    (a tensor's ``to`` returns a copy). The method may return the loaded module itself. A hidden
    state moved and handed to the module (``state = model.init_hidden(1).cuda()``) is no such
    result, nor is an output moved back to the CPU."""
    node, moved_in_chain = run, False
    chained = _method_call(model, node)
    while chained is not None and _method_name(chained) in MODULE_RETURNING_METHODS:
        moved_in_chain = moved_in_chain or _to_an_accelerator(chained)
        node, chained = chained, _method_call(model, chained)
    if moved_in_chain and isinstance(model.parent(node), ast.Expr):
        return True
    target = _binding_of(model, node)
    holders = [node, *((model.target_reads(target) or []) if target is not None else [])]
    moved = moved_in_chain or any(_to_an_accelerator(_method_call(model, holder)) for holder in holders)
    return moved and any(_used_as_a_module(model, holder) for holder in holders)


def _to_an_accelerator(call: Optional[ast.Call]) -> bool:
    """``x.cuda()``, ``x.to(device)``: a move that may put ``x`` on an accelerator (not
    ``x.to("cpu")``)."""
    if call is None or _method_name(call) not in ACCELERATOR_MOVES:
        return False
    return not any(isinstance(value, ast.Constant) and value.value == "cpu" for value in devices_given(call))


def _used_as_a_module(model: SemanticModel, holder: ast.expr) -> bool:
    """``holder(x)``, ``holder.eval()`` (a method tensors lack), or ``holder.cuda()`` as a statement
    of its own (a module moves in place; a tensor's move returns a copy)."""
    call = _method_call(model, holder)
    return _called(model, holder) or _method_name(call) in MODULE_ONLY_METHODS or (
        call is not None and _to_an_accelerator(call) and isinstance(model.parent(call), ast.Expr)
    )


def _called(model: SemanticModel, node: ast.expr) -> bool:
    parent = model.parent(node)
    return isinstance(parent, ast.Call) and parent.func is node


def _method_name(call: Optional[ast.Call]) -> Optional[str]:
    return call.func.attr if call is not None and isinstance(call.func, ast.Attribute) else None


def _module_method_called(model: SemanticModel, read: ast.expr) -> bool:
    """``read.eval()``, ``read.parameters()``: a method of ``torch.nn.Module`` that tensors lack
    (:data:`~gpulint.semantic.torch_api.MODULE_ONLY_METHODS`) called on it, which shows the loaded
    object is a module (its own methods run it, not a vocabulary's lookups or a tensor's methods)."""
    call = _method_call(model, read)
    return call is not None and isinstance(call.func, ast.Attribute) and call.func.attr in MODULE_ONLY_METHODS


def _moves_values_around(model: SemanticModel, run: ast.Call, device_test: Optional[DeviceTest]) -> bool:
    """Whether the function that runs the module (or the module's own statements) moves anything
    to a device or makes a tensor there (``.cuda()``, ``.to("cuda")``, ``.to(device)``,
    ``torch.zeros(n, device=device)``; not a dtype cast): where nothing is moved, its inputs stay on
    the CPU, where a module mapped there runs too."""
    function = model.innermost_function(run)
    statements = function.node.body if function is not None else model.tree.body
    return any(
        isinstance(node, ast.Call) and (on_a_device(node, device_test) or made_on_a_device(model, node, device_test))
        for node in own_nodes(statements)
    )


def _owner_may_move(model: SemanticModel, target: ast.Attribute) -> bool:
    """Whether the class whose ``self`` attribute holds the load may be moved as a whole (a
    ``torch.nn`` module, or any class with a base but ``object``): ``Ensemble(path).cuda()`` moves
    the module its constructor loads."""
    function = model.innermost_function(target)
    owner = function.owner if function is not None else None
    return owner is None or any(not (isinstance(base, ast.Name) and base.id == "object") for base in owner.node.bases)


def _followed_reads(model: SemanticModel, read: ast.expr) -> Optional[List[Read]]:
    """What a read of a loaded module leads to (:func:`_reads_led_to`), or, where it is handed
    positionally to a function the file imports from another module of the project
    (``testing(loader, model, device)`` after ``from test import testing``), the reads of that
    function's parameter in its own module (:func:`_imported_parameter_reads`)."""
    led_to = _reads_led_to(model, read)
    if led_to is not None:
        return [(model, led) for led in led_to]
    parent = model.parent(read)
    return _imported_parameter_reads(model, parent, read) if isinstance(parent, ast.Call) else None


def _reads_led_to(model: SemanticModel, read: ast.expr) -> Optional[List[ast.expr]]:
    """What a read of a loaded module leads to in its own module: the reads of the name it is bound
    to under a constant key or through methods that return it unmoved (``model = checkpoint["model"]``,
    ``model = checkpoint.get("model").eval()``); no further reads for a method call that does not
    move it (a chain of module-returning ones as a statement of its own) or a read of a part of it
    that moves nothing (:func:`_part_read`); the reads of the name or ``self`` attribute it is bound
    to alone, of the parameter of the module's function it is passed to positionally (a function
    bound by one ``def`` only, not a method a subclass may override), or of the items of the list it
    is appended to (:func:`_item_reads`); None for anything else (a move, a container, a call
    gpulint does not read)."""
    module = _module_of(model, read)
    target = _binding_of(model, module) if module is not read else None
    if target is not None:
        return _bound_reads(model, target)
    parent = model.parent(read)
    if isinstance(parent, ast.Attribute) and parent.value is read:
        call = model.parent(parent)
        if isinstance(call, ast.Call) and call.func is parent:
            return [] if _runs_in_place(model, read) else None
        return _part_read(model, parent)
    if isinstance(parent, ast.Subscript) and parent.value is read:
        return _part_read(model, parent)
    if isinstance(parent, ast.Assign) and parent.value is read and len(parent.targets) == 1:
        return model.target_reads(parent.targets[0])
    if not isinstance(parent, ast.Call):
        return None
    if read in parent.args and _value_builtin(model, parent):
        return []
    if parent.args[:1] == [read] and model.resolved_names(parent.func) == {TORCH_SAVE}:
        return []  # pickled where it is: saving neither moves nor keeps it
    appended = parent.func
    if isinstance(appended, ast.Attribute) and appended.attr == "append" and parent.args == [read] and isinstance(appended.value, ast.Name):
        return _item_reads(model, appended.value)
    site = model.site_of.get(id(parent))
    callee = site.callee if site is not None else None
    if site is None or callee is None or not model.defined_once(site.node.func):
        return None
    index = next((position for position, argument in model.positional_arguments(site) if argument is read), None)
    if index is None or index >= len(callee.positional):
        return None
    parameter = callee.scope.resolve(callee.positional[index])
    return [use for use in model.uses(parameter) if isinstance(use.ctx, ast.Load)]


def _imported_parameter_reads(model: SemanticModel, call: ast.Call, read: ast.expr) -> Optional[List[Read]]:
    """The reads of the parameter that ``read``, given positionally (no unpacked argument before
    it), fills in the one undecorated ``def`` of another module of the project that the call names
    through the file's imports (:func:`~gpulint.semantic.project_modules.imported_function`), read
    in that module; None where there is no such function or parameter."""
    index = next((number for number, argument in enumerate(call.args) if argument is read), None)
    if model.path is None or index is None or any(isinstance(argument, ast.Starred) for argument in call.args[: index + 1]):
        return None
    found = imported_function(model, model.path, call.func)
    if found is None or not isinstance(found.statement, ast.FunctionDef) or found.statement.decorator_list:
        return None
    other = model.derived(_ImportedModules).of(found)
    function = other.function(found.statement) if other is not None else None
    if other is None or function is None or index >= len(function.positional):
        return None
    parameter = function.scope.resolve(function.positional[index])
    return [(other, use) for use in other.uses(parameter) if isinstance(use.ctx, ast.Load)]


class _ImportedModules:
    """The semantic models of the project modules whose functions a file's loaded modules are
    handed to, built once per file."""

    def __init__(self, model: SemanticModel) -> None:
        self.built: Dict[Path, Optional[SemanticModel]] = {}  # ``derived`` hands every fact its file's model

    def of(self, found: ImportedDefinition) -> Optional[SemanticModel]:
        """The model of the module ``found`` is in; None where it nests too deeply to analyse."""
        if found.path not in self.built:
            self.built[found.path] = _analysed(found)
        return self.built[found.path]


def _analysed(found: ImportedDefinition) -> Optional[SemanticModel]:
    """The semantic model of the module ``found`` is in, with the scopes and call sites the follow
    reads built; None where the module nests too deeply to analyse."""
    model = SemanticModel(found.tree, found.source, str(found.path))
    try:
        model.function(found.statement)  # builds the scopes and definitions here, where a RecursionError is caught
        model.call_sites  # and the call sites the follow reads
    except RecursionError:
        return None
    return model


def _part_read(model: SemanticModel, part: ast.expr) -> Optional[List[ast.expr]]:
    """A part of the module read (``encoder.hidden_size``, ``model.cnn[2].register_forward_hook(hook)``,
    ``model.cnn[2](x)``): nothing further where no method of the chain moves it and the part is
    neither stored, bound to a name (``head = model.fc``), nor handed to a call; None otherwise."""
    node: ast.expr = part
    while True:
        parent = model.parent(node)
        if isinstance(parent, ast.Subscript) and parent.value is node:
            node = parent
            continue
        if isinstance(parent, ast.Attribute) and parent.value is node:
            call = model.parent(parent)
            if isinstance(call, ast.Call) and call.func is parent:
                return None if parent.attr in DEVICE_MOVES | SUBMODULE_REACHING_METHODS else []
            node = parent
            continue
        break
    if not isinstance(getattr(node, "ctx", None), ast.Load):
        return None
    parent = model.parent(node)
    if isinstance(parent, ast.Call):
        return [] if parent.func is node or (node in parent.args and _keeps_nothing(model, parent)) else None
    return [] if isinstance(parent, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.FormattedValue, ast.Expr)) else None


def _value_builtin(model: SemanticModel, call: ast.Call) -> bool:
    """A builtin that gives a Python value (``print(model)``, ``isinstance(model, Net)``): it neither
    moves nor keeps what it is given."""
    return model.is_builtin(call.func, PYTHON_BUILTINS)


def _keeps_nothing(model: SemanticModel, call: ast.Call) -> bool:
    """A value builtin, or a function of torch's that takes a part's value
    (``torch.zeros(n, encoder.hidden_size)``), not one of its ``nn`` containers: neither moves nor
    keeps a part it is given."""
    if _value_builtin(model, call):
        return True
    names = model.resolved_names(call.func)
    return bool(names) and all(
        name.startswith("torch.") and (not name.startswith("torch.nn.") or name.startswith("torch.nn.functional.")) for name in names
    )


def _item_reads(model: SemanticModel, holder: ast.Name) -> Optional[List[ast.expr]]:
    """The reads of the modules a list holds (``models.append(model)``): its items read by index
    (``models[0]``) and the names a ``for`` loop over it binds; its length and other appends pass.
    None where the list is read any other way (handed on, sliced into another name)."""
    place = model.place(holder)
    if place is None:
        return None
    items: List[ast.expr] = []
    for use in model.uses(place.binding):
        if not isinstance(use.ctx, ast.Load):
            continue
        parent = model.parent(use)
        if isinstance(parent, ast.Subscript) and parent.value is use and isinstance(parent.ctx, ast.Load):
            items.append(parent)
        elif isinstance(parent, ast.Attribute) and parent.value is use and parent.attr == "append":
            continue
        elif isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "len" and parent.args == [use]:
            continue
        elif isinstance(parent, (ast.For, ast.comprehension)) and parent.iter is use and isinstance(parent.target, ast.Name):
            reads = model.target_reads(parent.target)
            if reads is None:
                return None
            items.extend(reads)
        else:
            return None
    return items


def _exclusive(model: SemanticModel, first: ast.AST, second: ast.AST) -> bool:
    """Whether ``first`` and ``second`` lie in different branches of one ``if`` (``if``/``elif``
    chains included), so that no run goes through both, unless a loop around that ``if`` repeats it."""
    branches = _branches(model, first)
    for node, branch in _branches(model, second).items():
        if node in branches and branches[node] != branch:
            return not any(isinstance(outer, (ast.For, ast.AsyncFor, ast.While)) for outer in model.ancestors(node))
    return False


def _branches(model: SemanticModel, node: ast.AST) -> Dict[ast.If, str]:
    """Each ``if`` around ``node``, with the branch (``body`` or ``orelse``) holding it."""
    found: Dict[ast.If, str] = {}
    child = node
    for ancestor in model.ancestors(node):
        if isinstance(ancestor, ast.If) and child is not ancestor.test:
            found[ancestor] = "body" if any(child is part for part in ancestor.body) else "orelse"
        child = ancestor
    return found


def _runs_in_place(model: SemanticModel, read: ast.expr) -> bool:
    """``read(x)``, ``read.half()``, ``read.eval().float()``, ``read.half() if half else
    read.float()`` as a statement: called, or put through methods that return the module without
    moving it, ending in a statement of its own (not bound to another name, which may move it)."""
    node: ast.expr = read
    while True:
        parent = model.parent(node)
        if isinstance(parent, ast.Call) and parent.func is node:
            return True
        if not isinstance(parent, ast.Attribute) or parent.value is not node:
            break
        method = model.parent(parent)
        if not (isinstance(method, ast.Call) and method.func is parent) or parent.attr in DEVICE_MOVES | SUBMODULE_REACHING_METHODS:
            return False
        node = method
        if parent.attr not in MODULE_RETURNING_METHODS:
            return True  # a method that gives something other than the module
    if node is read:
        return False
    statement = model.parent(node)
    if isinstance(statement, ast.IfExp):
        statement = model.parent(statement)
    return isinstance(statement, ast.Expr)
