"""Frozen models by binding: modules whose parameters the code switches off for gradients and
never switches back on, anywhere in the module.

Freezing is spelt ``model.requires_grad_(False)`` (also at the end of a chain that returns the
module: ``G = copy.deepcopy(net).eval().requires_grad_(False).to(device)`` freezes ``G``), or
``for p in model.parameters(): p.requires_grad = False`` (``p.requires_grad_(False)``, or a loop
over ``named_parameters()``) with the switch directly in the loop's body and no ``continue`` or
``break`` in it (which skip some parameters by name). A model any of whose parts
(or owners) the code switches back on (``requires_grad_()``, ``requires_grad_(True)``, a loop over
``parameters()`` or ``named_parameters()`` switching any on, ``model.trunk.weight.requires_grad =
True``) or replaces by what a call returns (a new head, ``model.classifier[6] = nn.Linear(...)``) is
not frozen, unless the part is replaced in a script's or notebook's straight-line code before the
loop or call that freezes the whole model (``model.fc = nn.Linear(2048, 1)``, then ``for p in
model.parameters(): p.requires_grad = False``: the new part is frozen too). An instance of a
``torch.nn`` module class whose constructor freezes it (:func:`freezes_itself`: pytorch-fid's
``InceptionV3``, LPIPS's ``vgg16``), defined by the module or by a project module it imports, is
frozen where it is built. A parameter is frozen where every call of its function in the module
passes a frozen model (a fixed point over the call graph), as :mod:`gpulint.semantic.evaluation`
does for evaluation mode.

A frozen model builds no autograd graph of its own: calling it with gradients on costs nothing
unless its inputs carry history, and then the graph is what training needs.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

from gpulint.semantic.model import Function, Place, SemanticModel
from gpulint.semantic.model_size import GROWING_METHODS
from gpulint.semantic.project_modules import imported_classes
from gpulint.semantic.survey import ast_dotted_name, is_false_constant, module_of
from gpulint.semantic.torch_api import MODULE_CLASSES, MODULE_RETURNING_METHODS, TORCH_NN_SPELLINGS


def frozen_models(model: SemanticModel) -> FrozenSet[Place]:
    """The places of the module's frozen models (see the module docstring)."""
    built = _built_frozen(model)
    if "requires_grad" not in model.source and not built:
        return frozenset()
    frozen: Set[Place] = set(built)
    unfrozen: Set[Place] = set()
    freezes: Dict[Place, List[ast.AST]] = defaultdict(list)
    for place, switched_on, switch in _switches(model):
        (unfrozen if switched_on else frozen).add(place)
        if not switched_on:
            freezes[place].append(switch)
    if not frozen:
        return frozenset()
    replaced = _replaced_parts(model)
    frozen = {
        place for place in frozen
        if not any(_related(place, other) for other in unfrozen)
        and not any(
            part.binding == place.binding and part.path.startswith(place.path + ".")
            and not _all_run_before(model, replacements, freezes[place])
            for part, replacements in replaced.items()
        )
    }
    return frozenset(frozen | _frozen_parameters(model, frozen))


def _all_run_before(model: SemanticModel, earlier: List[ast.Assign], later: List[ast.AST]) -> bool:
    """Whether each of the statements ``earlier`` is one of the module's top-level statements that
    runs before each of ``later`` (a part replaced, then the whole model frozen, in a script's or
    notebook's straight-line code: the new part is frozen too)."""
    starts = [model.top_level_index(statement) for statement in earlier if model.parent(statement) is model.tree]
    ends = [model.top_level_index(node) for node in later]
    known_starts = [index for index in starts if index is not None]
    known_ends = [index for index in ends if index is not None]
    if not earlier or not later or len(known_starts) != len(earlier) or len(known_ends) != len(later):
        return False
    return max(known_starts) < min(known_ends)


def _built_frozen(model: SemanticModel) -> Set[Place]:
    """The places bound to a new instance of a class that freezes itself (:func:`freezes_itself`),
    where the construction leaves it frozen (``InceptionV3([3])``, not ``InceptionV3([3],
    requires_grad=True)``), also at the start of a module-returning chain
    (``InceptionV3([3]).cuda().eval()``). The class is the module's own, or one a project module
    defines that the file imports (:func:`~gpulint.semantic.project_modules.imported_classes`).
    Every assignment of such a place binds such an instance or another such place (a model cached in
    a global, ``model = FID_MODEL``), and nothing else binds it (``model`` rebound to another
    network later is not one of them)."""
    values: Dict[Place, List[ast.expr]] = defaultdict(list)
    for assign in model.nodes(ast.Assign):
        for place in map(model.place, assign.targets):
            if place is not None:
                values[place].append(assign.value)
    known: Dict[Tuple[Optional[str], str], Optional[Freezing]] = {}
    built = {
        id(value) for assigned in values.values() for value in assigned
        if _builds_frozen(model, value, known)
    }
    references = {
        id(value): _reference(model, value) for assigned in values.values() for value in assigned if id(value) not in built
    }
    candidates = {
        place for place, assigned in values.items()
        if (place.path or len(model.binders(place.binding)) == len(assigned))
        and all(id(value) in built or references[id(value)] is not None for value in assigned)
    }
    changed = True
    while changed:
        dropped = {
            place for place in candidates
            if any(id(value) not in built and references[id(value)] not in candidates for value in values[place])
        }
        candidates -= dropped
        changed = bool(dropped)
    found: Set[Place] = set()
    changed = True
    while changed:
        reached = {
            place for place in candidates - found
            if any(id(value) in built or references[id(value)] in found for value in values[place])
        }
        found |= reached
        changed = bool(reached)
    return found


def _builds_frozen(model: SemanticModel, value: ast.expr, known: Dict[Tuple[Optional[str], str], Optional[Freezing]]) -> bool:
    """Whether ``value`` builds an instance of a class that freezes itself and leaves it frozen."""
    built = module_of(value)
    if not isinstance(built, ast.Call) or not isinstance(built.func, (ast.Name, ast.Attribute)):
        return False
    freezing = _class_freezing(model, built.func, known)
    return freezing is not None and _left_frozen(built, freezing) and not _switched_on_in_chain(value)


def _reference(model: SemanticModel, value: ast.expr) -> Optional[Place]:
    """The place ``value`` names, through a module-returning chain that switches nothing back on."""
    root = _module_of(value)
    return model.place(root) if root is not None and not _switched_on_in_chain(value) else None


def _switched_on_in_chain(value: ast.expr) -> bool:
    """Whether a module-returning chain switches gradients back on (``Frozen().requires_grad_(True).cuda()``)."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in MODULE_RETURNING_METHODS:
        if value.func.attr == "requires_grad_" and _switched_on(value):
            return True
        value = value.func.value
    return False


def _class_freezing(
    model: SemanticModel, func: ast.expr, known: Dict[Tuple[Optional[str], str], Optional[Freezing]],
) -> Optional[Freezing]:
    """How the class ``func`` names freezes itself, None where it does not (or is not a class
    found): decided once per spelling of the name, for a name the module binds only by the class
    statement, or only by imports at its top level (not also by an assignment, a ``def`` or an
    ``except`` fallback: the name may then be another class)."""
    named = func.value if isinstance(func, ast.Attribute) else func
    if not isinstance(named, ast.Name):
        return None
    binding = model.scope_at(named).resolve(named.id)
    binders = model.binders(binding)
    defined = model.defined_class(func)
    if defined is not None:
        return freezes_itself(defined) if binders == [defined] else None
    if model.path is None or binding.scope is not model.root or not binders:
        return None
    if not all(isinstance(binder, (ast.Import, ast.ImportFrom)) for binder in binders):
        return None
    key = (named.id, func.attr) if isinstance(func, ast.Attribute) else (None, named.id)
    if key not in known:
        ways = {freezes_itself(cls) for cls in imported_classes(model, model.path, func)}
        known[key] = ways.pop() if len(ways) == 1 else None
    return known[key]


Freezing = Tuple[Optional[str], int]
"""How a class's constructor freezes it: (None, -1) always, or (parameter, its position after
``self``) where it switches gradients to a parameter that defaults to False."""


def freezes_itself(cls: ast.ClassDef) -> Optional[Freezing]:
    """Whether a ``torch.nn`` module class's ``__init__`` switches gradients off for all its
    parameters at the end (``for p in self.parameters(): p.requires_grad = False``,
    ``self.requires_grad_(False)``, or to a parameter of ``__init__`` that defaults to False and is
    never reassigned: pytorch-fid's ``InceptionV3(..., requires_grad=False)``; or switches them off
    under ``if not flag:`` with such a parameter, as LPIPS's ``vgg16(requires_grad=False)``), with
    no ``return`` before the switch and nothing after it that adds a part; and no other code of the
    class switches any gradient to anything but False, or adds a part outside ``__init__`` (as a
    helper the constructor calls to build a head does). None where it does not, or where a base is
    not a ``torch.nn`` class (an inherited method may switch gradients on)."""
    init = next((node for node in cls.body if isinstance(node, ast.FunctionDef) and node.name == "__init__"), None)
    if init is None or not cls.bases or not all(_is_torch_module_class(base) for base in cls.bases):
        return None
    found = _final_switch(init)
    if found is None:
        return None
    index, value, guard = found
    switch = init.body[index]
    inside = {id(node) for node in ast.walk(switch)}
    if (
        any(_switches_on(node) for node in ast.walk(cls) if id(node) not in inside)
        or any(_adds_a_part(node) for later in init.body[index + 1:] for node in ast.walk(later))
        or any(isinstance(node, ast.Return) for earlier in init.body[:index] for node in _own_nodes(earlier))
        or any(
            _adds_a_part(node) for method in cls.body
            if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)) and method is not init
            for node in ast.walk(method)
        )
    ):
        return None
    if guard is not None:
        freezing = _defaulting_to_false(init.args, guard) if is_false_constant(value) else None
    elif is_false_constant(value):
        return (None, -1)
    else:
        freezing = _defaulting_to_false(init.args, value)
    if freezing is None or (freezing[0] is not None and _stores_name(init, freezing[0])):
        return None
    return freezing


def _final_switch(init: ast.FunctionDef) -> Optional[Tuple[int, ast.expr, Optional[ast.Name]]]:
    """The last statement of ``__init__``'s body that switches all of ``self``'s gradients: its
    index, the value it switches them to, and the flag of an ``if not flag:`` around it."""
    for index in range(len(init.body) - 1, -1, -1):
        statement = init.body[index]
        guard = _unless_asked(statement)
        if isinstance(statement, ast.If):
            value = _self_switch(statement.body[0]) if guard is not None else None
        else:
            value = _self_switch(statement)
        if value is not None:
            return index, value, guard
    return None


def _is_torch_module_class(base: ast.expr) -> bool:
    """``nn.Module``, ``torch.nn.Sequential``, a bare ``Module``: a base whose methods are torch's."""
    dotted = ast_dotted_name(base)
    if dotted is None:
        return False
    namespace, _, name = dotted.rpartition(".")
    return name in MODULE_CLASSES and namespace in TORCH_NN_SPELLINGS


def _own_nodes(statement: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of ``statement`` outside the functions and classes it defines."""
    pending: List[ast.AST] = [statement]
    while pending:
        node = pending.pop()
        yield node
        pending.extend(
            child for child in ast.iter_child_nodes(node)
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
        )


def _stores_name(function: ast.FunctionDef, name: str) -> bool:
    """Whether ``function`` assigns (or deletes) ``name`` anywhere: a parameter changed before use."""
    return any(isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load) for node in ast.walk(function))


def _unless_asked(statement: ast.stmt) -> Optional[ast.Name]:
    """``flag`` in ``if not flag:`` over one statement and no ``else`` (LPIPS's ``if not
    requires_grad:`` around its freezing loop); None for anything else."""
    if not (isinstance(statement, ast.If) and not statement.orelse and len(statement.body) == 1):
        return None
    test = statement.test
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) and isinstance(test.operand, ast.Name):
        return test.operand
    return None


def _self_switch(statement: ast.stmt) -> Optional[ast.expr]:
    """The value ``statement`` switches all of ``self``'s parameters' gradients to (``self.requires_grad_(v)``
    or a loop over ``self.parameters()`` setting each one's ``requires_grad``); None for anything else."""
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        if isinstance(call.func, ast.Attribute) and call.func.attr == "requires_grad_" and _is_self(call.func.value) and len(call.args) == 1:
            return call.args[0]
        return None
    if not isinstance(statement, ast.For) or statement.orelse:
        return None
    iterated, target = statement.iter, statement.target
    if not (
        isinstance(iterated, ast.Call) and not iterated.args and isinstance(iterated.func, ast.Attribute)
        and not iterated.keywords and iterated.func.attr == "parameters" and _is_self(iterated.func.value)
        and isinstance(target, ast.Name)
    ):
        return None
    if any(isinstance(node, (ast.Continue, ast.Break, ast.If)) for inner in statement.body for node in ast.walk(inner)):
        return None
    for inner in statement.body:
        if isinstance(inner, ast.Assign) and len(inner.targets) == 1:
            switched = inner.targets[0]
            if isinstance(switched, ast.Attribute) and switched.attr == "requires_grad" and isinstance(switched.value, ast.Name) and switched.value.id == target.id:
                return inner.value
    return None


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _switches_on(node: ast.AST) -> bool:
    """``x.requires_grad_()``, ``x.requires_grad_(flag)`` or ``x.requires_grad = flag``: a switch to
    anything but False."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "requires_grad_":
        return _switched_on(node)
    if isinstance(node, ast.Assign):
        return any(isinstance(t, ast.Attribute) and t.attr == "requires_grad" for t in node.targets) and not is_false_constant(node.value)
    return False


def _adds_a_part(node: ast.AST) -> bool:
    """Something stored on ``self`` (``self.head = ...``, ``self.blocks[1] = ...``), added to it or
    to a container it holds (``self.add_module(...)``, ``self.register_parameter(...)``,
    ``self.blocks.append(...)``), or set by name (``setattr(self, ...)``): a part that may need
    gradients."""
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        stored = [part for target in targets for part in (target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target])]
        return any(isinstance(part, (ast.Attribute, ast.Subscript)) and _held_by_self(part) for part in stored)
    if not isinstance(node, ast.Call):
        return False
    if isinstance(node.func, ast.Name) and node.func.id == "setattr":
        return bool(node.args) and _is_self(node.args[0])
    return isinstance(node.func, ast.Attribute) and node.func.attr in GROWING_METHODS and _held_by_self(node.func.value)


def _held_by_self(node: ast.expr) -> bool:
    """``self``, or an attribute or item reached from it (``self.blocks[0].layers``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return _is_self(node)


def _defaulting_to_false(arguments: ast.arguments, value: ast.expr) -> Optional[Freezing]:
    """(name, position after ``self``) of the parameter ``value`` names, where it defaults to False."""
    if not isinstance(value, ast.Name):
        return None
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults = dict(zip([a.arg for a in positional][len(positional) - len(arguments.defaults):], arguments.defaults))
    defaults.update((a.arg, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None)
    default = defaults.get(value.id)
    if default is None or not is_false_constant(default):
        return None
    names = [a.arg for a in positional]
    return (value.id, names.index(value.id) - 1 if value.id in names else -1)


def _left_frozen(call: ast.Call, freezing: Freezing) -> bool:
    """Whether a construction leaves the instance frozen: always, or where it passes the switch's
    parameter nothing or False (nothing unpacked that may hold it)."""
    name, position = freezing
    if name is None:
        return True
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return False
    passed = next((k.value for k in call.keywords if k.arg == name), None)
    if passed is None and 0 <= position < len(call.args):
        passed = call.args[position]
    return passed is None or is_false_constant(passed)


def _switches(model: SemanticModel) -> Iterator[Tuple[Place, bool, ast.AST]]:
    """(place, switched on, the switch) for every place the code switches its parameters' gradients
    for (also one parameter: ``model.trunk.weight.requires_grad = True`` switches ``model`` on in part)."""
    for call in model.method_calls("requires_grad_"):
        switched_on = _switched_on(call)
        receiver = _module_of(call.func.value) if isinstance(call.func, ast.Attribute) else None
        place = model.place(receiver) if receiver is not None else None
        if place is not None:
            yield place, switched_on, call
        if not switched_on:
            for target in _bound_to(model, call):
                yield target, False, call
    for loop in model.nodes(ast.For):
        found = _parameter_loop(model, loop)
        if found is not None:
            yield found[0], found[1], loop
    for assign in model.nodes(ast.Assign):
        if not is_false_constant(assign.value):
            for switched in assign.targets:
                receiver = switched.value if isinstance(switched, ast.Attribute) and switched.attr == "requires_grad" else None
                part = model.place(receiver) if isinstance(receiver, (ast.Name, ast.Attribute)) else None
                if part is not None:
                    yield part, True, assign


def _replaced_parts(model: SemanticModel) -> Dict[Place, List[ast.Assign]]:
    """Attributes the code sets to what a call returns (``model.fc = nn.Linear(512, 2)``), or an item
    of (``model.classifier[6] = nn.Linear(4096, 2)``), each with the assignments that do: a part of
    a frozen model replaced that way has parameters that need gradients, unless the whole model is
    frozen after it."""
    found: Dict[Place, List[ast.Assign]] = defaultdict(list)
    for assign in model.nodes(ast.Assign):
        if isinstance(assign.value, ast.Call):
            for target in assign.targets:
                if isinstance(target, ast.Subscript):
                    target = target.value
                place = model.place(target) if isinstance(target, ast.Attribute) else None
                if place is not None:
                    found[place].append(assign)
    return found


def _switched_on(call: ast.Call) -> bool:
    """``requires_grad_()`` and ``requires_grad_(True)`` switch on; ``requires_grad_(False)`` off."""
    argument = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "requires_grad"), None)
    return argument is None or not is_false_constant(argument)


def _bound_to(model: SemanticModel, call: ast.Call) -> List[Place]:
    """The places an assignment binds to ``call`` or to a module-returning chain over it."""
    node: ast.AST = call
    parent = model.parent(node)
    while isinstance(parent, ast.Attribute) and parent.attr in MODULE_RETURNING_METHODS:
        grand = model.parent(parent)
        if not (isinstance(grand, ast.Call) and grand.func is parent):
            return []
        node, parent = grand, model.parent(grand)
    if not (isinstance(parent, ast.Assign) and parent.value is node):
        return []
    places = [model.place(target) for target in parent.targets]
    return [place for place in places if place is not None]


def _module_of(node: ast.expr) -> Optional[ast.expr]:
    """``model`` in ``model.eval().to(device)``; None where the chain starts from anything else."""
    root = module_of(node)
    return root if isinstance(root, (ast.Name, ast.Attribute)) else None


def _parameter_loop(model: SemanticModel, loop: ast.For) -> Optional[Tuple[Place, bool]]:
    """A loop over a model's parameters that switches their gradients: (``model``'s place, False)
    for ``for p in model.parameters(): p.requires_grad = False`` (or ``for k, v in
    model.named_parameters(): v.requires_grad = False``) directly in the loop's body, and (place,
    True) for a loop over ``parameters()`` or ``named_parameters()`` that switches any of them on,
    under an ``if`` too."""
    iterated = loop.iter
    if not (
        isinstance(iterated, ast.Call) and not iterated.args and isinstance(iterated.func, ast.Attribute)
        and iterated.func.attr in ("parameters", "named_parameters")
    ):
        return None
    place = model.place(iterated.func.value)
    target = loop.target
    if iterated.func.attr == "named_parameters" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
        target = target.elts[1]
    if place is None or not isinstance(target, ast.Name):
        return None
    name = target.id
    nested = [node for statement in loop.body for node in ast.walk(statement) if isinstance(node, ast.stmt)]
    if any(_switch_of(statement, name) for statement in nested):
        return place, True
    if any(_switch_of(statement, name) is False for statement in loop.body) and not any(
        isinstance(node, (ast.Continue, ast.Break)) for node in nested
    ):
        return place, False
    return None


def _switch_of(statement: ast.stmt, name: str) -> Optional[bool]:
    """Whether ``statement`` switches ``name``'s gradient on (True) or off (False); None if it does not."""
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target = statement.targets[0]
        if isinstance(target, ast.Attribute) and target.attr == "requires_grad" and isinstance(target.value, ast.Name) and target.value.id == name:
            return not is_false_constant(statement.value)
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        call = statement.value
        if isinstance(call.func, ast.Attribute) and call.func.attr == "requires_grad_" and isinstance(call.func.value, ast.Name) and call.func.value.id == name:
            return _switched_on(call)
    return None


def _related(place: Place, other: Place) -> bool:
    """One place is the other or a part of it (``text_encoder`` and ``text_encoder.embeddings``)."""
    if place.binding != other.binding:
        return False
    shorter, longer = sorted((place.path, other.path), key=len)
    return longer == shorter or longer.startswith(shorter + ".")


def _frozen_parameters(model: SemanticModel, frozen: Set[Place]) -> Set[Place]:
    """The places of parameters that every call of their function passes a frozen model."""
    decided: Dict[Tuple[Function, int], Place] = {}
    changed = bool(frozen) and bool(model.call_sites)
    while changed:
        changed = False
        known = frozen | set(decided.values())
        for function in model.all_functions:
            for index, name in enumerate(function.positional):
                if (function, index) in decided or not function.calls:
                    continue
                if all(_passes(model, site.node, index, known) for site in function.calls):
                    binding = function.scope.resolve(name)
                    decided[(function, index)] = Place(binding)
                    changed = True
    return set(decided.values())


def _passes(model: SemanticModel, call: ast.Call, index: int, known: Set[Place]) -> bool:
    arguments = call.args[:next((i for i, a in enumerate(call.args) if isinstance(a, ast.Starred)), len(call.args))]
    if index >= len(arguments):
        return False
    receiver = _module_of(arguments[index])
    place = model.place(receiver) if receiver is not None else None
    return place is not None and place in known
