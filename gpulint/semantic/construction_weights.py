"""Loads of the weights a network is built with.

Code that builds a network and loads a file into it as it does so builds it with the weights it
ships with: a published pretrained network (an ImageNet backbone, a converted detector or pose
stage), saved from the CPU. A checkpoint of the user's own training is loaded after the network is
built, by the code that trains or runs it. Three shapes are taken for this:

- the ``__init__`` of a network (a class of ``nn.Module``) that hands what it loads to
  ``load_state_dict`` there (``self.load_state_dict(torch.load(weights_path))``,
  ``net.load_state_dict(...)`` of a backbone the constructor builds). The constructor of any other
  class (an inference wrapper's, a predictor's) loads whatever checkpoint it is given, as a script
  would: it is checked;
- a function that builds a network, returns it, and loads weights into it only when a parameter
  asks for them (``if checkpoint is not None:``, ``if pretrained:``): an optional initialisation. A
  test whose branch builds the network and then loads whatever file of it exists picks which network
  to build and restores a run's checkpoint of it (``if name == "AlexNet": model = AlexNet8(10)``,
  then ``if os.path.exists(path):`` and the load);
- a method of a network that initialises it from pretrained weights, as its name or a parameter
  spells ``pretrain`` (``init_weights(self, pretrained="")``, ``load_pretrained_model``; no
  parameter named for a resume), loading into the instance or a network it constructs.

The network loaded into must be one the function builds: the instance itself, or a name or
attribute every assignment of which in the function calls a constructor (not a parameter the
caller fills, not a ``torch.optim`` optimizer or scheduler). The value a load gives is followed
through the local names of the function it is bound to, and the fresh local values it is merged
into (``model_dict.update(pretrained)`` after ``model_dict = net.state_dict()``, a local bound only
to calls that build anew), or stores items into (``renamed[key] = weights[key]`` after ``renamed =
{}``, ``dict()`` or ``OrderedDict()``, or in the load itself, ``state_dict[new] =
state_dict.pop(old)``); the fresh values' every read, also before the load, is checked in turn,
while a read of any other name in a statement that ends before the load's, outside any loop around
it, reads something else. It is no such case
when any of it is used otherwise — stored in an attribute, another item or a global, handed to another
call, returned or yielded (``self.start_epoch = checkpoint["epoch"]`` shows a training resume) —
nor when it restores an optimizer (a receiver or key that spells ``optim``): a resume, not an
initialisation.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, Iterable, Iterator, List, Optional, Set, Tuple

from gpulint.semantic.model import Function, SemanticModel
from gpulint.semantic.survey import ast_dotted_name, module_of, own_nodes
from gpulint.semantic.torch_api import DICT_CLASSES, OPTIMIZER_NAMESPACE

WORD = re.compile(r"[a-z0-9]+")

CONSTRUCTOR = "__init__"
LOADS_INTO = "load_state_dict"
MERGE = "update"
TRAINING_STATE_WORDS = ("optim", "opt", "scaler", "sched")
"""What a receiver or key that restores training state spells (``optimizer``, ``"opt"``,
``self.scaler``, ``"scheduler"``), as a whole word or a part of one."""
STORING_FUNCTIONS = frozenset({"setattr", "print", "exec", "eval", "vars", "globals", "locals"})
STORING_METHODS = frozenset({"update", "append", "extend", "setdefault", "insert", "add", "__setitem__"})
PRETRAINED_WORD = "pretrain"
"""What a method of a network, or a parameter of it, that initialises the network from published
weights spells (``init_weights(self, pretrained)``, ``load_pretrained_model``)."""
RESUME_WORDS = ("resume", "restore", "continue", "last")
"""What a parameter asking to resume a run spells (``resume=False``): its checkpoint is the run's own."""
EXISTENCE_TESTS = frozenset({"exists", "isfile", "is_file"})
"""What a call that asks whether a file exists is named (``os.path.exists``, ``Path.is_file``)."""
TEST_PARTS = (ast.Name, ast.Constant, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Load, ast.Not, ast.And, ast.Or,
              ast.Is, ast.IsNot, ast.Eq, ast.NotEq)
"""What a test that asks for weights by a parameter is made of (``if checkpoint is not None:``)."""


def loaded_while_built(model: SemanticModel, call: ast.Call) -> bool:
    """Whether ``call`` loads the weights a network's constructor, or a function that builds and
    returns a network, builds it with."""
    function = model.innermost_function(call)
    if function is None:
        return False
    nodes = list(own_nodes(function.node.body))
    if not any(node is call for node in nodes):
        return False  # in a lambda of its own scope
    built = _built(model, nodes, set(function.scope.parameters))
    constructed = {name for name, calls in built.items() if not any(_makes_an_optimizer(model, made) for made in calls)}
    if function.name == CONSTRUCTOR and function.receiver is not None and function.owner is not None and (
        function.owner.node in model.module_classes
    ):
        networks = constructed | {function.receiver}
    elif function.receiver is not None and _initialises_from_pretrained(model, function):
        networks = constructed | {function.receiver}
    elif _asked_for_by_a_parameter(model, function, call, constructed & _returned_names(nodes)):
        networks = constructed & _returned_names(nodes)
    else:
        return False
    parameters = set(function.scope.parameters)
    dicts = _new_dicts(model, nodes, parameters)
    fresh = {name for name in built if "." not in name} | dicts
    holders = dicts | _parts_of_load(nodes, call, parameters)
    carriers = _carriers(nodes, call, fresh)
    receivers = [
        node for node in nodes
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == LOADS_INTO
        and any(_carries(argument, call, carriers) for argument in _arguments(node))
    ]
    if not receivers or not _only_loaded(model, function, nodes, call, carriers, fresh, holders):
        return False
    return all(_loads_into(node) in networks and not _restores_training_state(node) for node in receivers)


def _initialises_from_pretrained(model: SemanticModel, function: Function) -> bool:
    """Whether ``function`` is a method of a network that initialises it from pretrained weights by
    its name: the method's name or a parameter of it spells ``pretrain`` (``init_weights(self,
    pretrained="")``, ``load_pretrained_model(self, data, name)``), and no parameter is named for a
    resume."""
    if function.receiver is None or function.owner is None or function.owner.node not in model.module_classes:
        return False
    parameters = [name.lower() for name in function.scope.parameters if name != function.receiver]
    if any(word in name for name in parameters for word in RESUME_WORDS):
        return False
    return any(PRETRAINED_WORD in name for name in [function.name.lower(), *parameters])


def _loads_into(call: ast.Call) -> str:
    """``self.model`` of ``self.model.cuda().load_state_dict(...)``; ``""`` where no name spells it."""
    receiver = module_of(call.func.value) if isinstance(call.func, ast.Attribute) else None
    return (ast_dotted_name(receiver) or "") if receiver is not None else ""


def _built(model: SemanticModel, nodes: List[ast.AST], parameters: Set[str]) -> Dict[str, List[ast.Call]]:
    """The names and attribute chains (``net``, ``self.model``) every assignment of which among
    ``nodes`` (one at least) calls a constructor or a function that builds anew (see
    :func:`_hands_over`), or moves or re-moulds the same value (``net = net.cuda()``), each with
    those calls; never a parameter."""
    values: Dict[str, List[Optional[ast.expr]]] = {}
    for node in nodes:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                dotted = ast_dotted_name(target) if isinstance(target, (ast.Name, ast.Attribute)) else None
                if dotted is not None:
                    values.setdefault(dotted, []).append(node.value)
        elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            dotted = ast_dotted_name(node)
            if dotted is not None and not isinstance(model.parent(node), ast.Assign):
                values.setdefault(dotted, []).append(None)  # a loop, `with`, unpacking or `del` target
    found: Dict[str, List[ast.Call]] = {}
    for dotted, assigned in values.items():
        if dotted in parameters:
            continue
        calls: List[ast.Call] = []
        for value in assigned:
            inner = module_of(value) if value is not None else None
            if isinstance(inner, (ast.Name, ast.Attribute)) and ast_dotted_name(inner) == dotted and inner is not value:
                continue
            if not isinstance(inner, ast.Call) or _hands_over(inner, parameters):
                break
            calls.append(inner)
        else:
            if calls:
                found[dotted] = calls
    return found


def _makes_an_optimizer(model: SemanticModel, call: ast.Call) -> bool:
    """``torch.optim.SGD(...)``, ``lr_scheduler.StepLR(...)``: training state, not a network."""
    return any(name.startswith(OPTIMIZER_NAMESPACE) for name in model.resolved_names(call.func))


def _hands_over(call: ast.Call, parameters: Set[str]) -> bool:
    """Whether a call may give back something the caller handed in rather than build anew: its first
    argument is a parameter whole (``nn.DataParallel(model)``, ``copy.deepcopy(model)``,
    ``getattr(self, "history")``, ``vars(self)``), or it is a method of a parameter
    (``kwargs.pop("net")``, ``self.get_config()``). Options passed by keyword
    (``ResNet(Bottleneck, layers, norm_layer=norm_layer)``) build anew."""
    root = call.func
    while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
        root = root.func if isinstance(root, ast.Call) else root.value
    if isinstance(root, ast.Name) and root.id in parameters and isinstance(call.func, ast.Attribute):
        return True
    return bool(call.args) and isinstance(call.args[0], ast.Name) and call.args[0].id in parameters


def _asked_for_by_a_parameter(model: SemanticModel, function: Function, call: ast.Call, returned: Set[str]) -> bool:
    """Whether the load is in an ``if`` of the function whose test asks for weights by one of its
    parameters (``self`` aside), as it is: ``if pretrained:``, ``if checkpoint is not None:``,
    ``if pretrain_path != "":``; not ``if os.path.isfile(path):`` nor ``if args.resume:``. An ``if``
    whose branch builds a network it returns (assigns one of the ``returned`` names) and then loads
    whatever file of it exists (the load under an existence test, :data:`EXISTENCE_TESTS`) picks
    which network to build and restores a run's checkpoint of it (``if name == "AlexNet": model =
    AlexNet8(10)``, then ``if os.path.exists(path): model.load_state_dict(torch.load(path))``)."""
    rebound = {node.id for node in own_nodes(function.node.body) if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)}
    parameters = {
        name for name in set(function.scope.parameters) - {function.receiver} - rebound
        if not any(word in name.lower() for word in RESUME_WORDS)
    }
    guarded = False
    child: ast.AST = call
    parent = model.parent(call)
    while parent is not None and parent is not function.node:
        if isinstance(parent, ast.If) and child in parent.body and _tests_existence(parent.test):
            guarded = True
        elif isinstance(parent, ast.If) and all(isinstance(part, TEST_PARTS) for part in ast.walk(parent.test)) and any(
            isinstance(part, ast.Name) and part.id in parameters for part in ast.walk(parent.test)
        ) and not (guarded and _builds_one_of(parent.body if child in parent.body else parent.orelse, returned)):
            return True
        child, parent = parent, model.parent(parent)
    return False


def _tests_existence(test: ast.expr) -> bool:
    """Whether an ``if`` test asks whether a file exists (``os.path.exists(path)``, ``path.is_file()``)."""
    return any(
        isinstance(part, ast.Call) and (ast_dotted_name(part.func) or "").rsplit(".", 1)[-1] in EXISTENCE_TESTS
        for part in ast.walk(test)
    )


def _builds_one_of(block: List[ast.stmt], names: Set[str]) -> bool:
    """Whether a statement of ``block`` (at any depth, outside nested scopes) assigns one of ``names``."""
    return any(
        isinstance(node, ast.Assign) and any(ast_dotted_name(target) in names for target in node.targets if isinstance(target, (ast.Name, ast.Attribute)))
        for node in own_nodes(block)
    )


def _returned_names(nodes: Iterable[ast.AST]) -> Set[str]:
    """The names a ``return`` of the function reads (``sam`` of ``return sam``,
    ``backbone`` of ``return BackboneWithFPN(backbone, ...)``)."""
    return {
        part.id for node in nodes if isinstance(node, ast.Return) and node.value is not None
        for part in ast.walk(node.value) if isinstance(part, ast.Name)
    }


def _arguments(call: ast.Call) -> Iterable[ast.expr]:
    yield from call.args
    yield from (keyword.value for keyword in call.keywords)


def _carries(expression: ast.AST, call: ast.Call, carriers: Set[str]) -> bool:
    """Whether ``expression`` holds the load or reads a name bound to what it gave."""
    return any(
        part is call or (isinstance(part, ast.Name) and isinstance(part.ctx, ast.Load) and part.id in carriers)
        for part in ast.walk(expression)
    )


def _single_bindings(nodes: List[ast.AST], parameters: Set[str]) -> Dict[str, List[ast.expr]]:
    """The local names, not parameters, every binding of which among ``nodes`` (one at least) is an
    assignment to that name alone, each with the values assigned."""
    values: Dict[str, List[ast.expr]] = {}
    assigned: Set[int] = set()
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned.add(id(node.targets[0]))
            values.setdefault(node.targets[0].id, []).append(node.value)
    for node in nodes:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in assigned:
            values.pop(node.id, None)
            parameters = parameters | {node.id}
    return {name: assigned_values for name, assigned_values in values.items() if name not in parameters}


def _new_dicts(model: SemanticModel, nodes: List[ast.AST], parameters: Set[str]) -> Set[str]:
    """The local names bound only to new dicts (``renamed = {}``, ``OrderedDict()``, ``dict()``):
    fresh local values, which nothing else holds when they are made."""
    return {
        name for name, values in _single_bindings(nodes, parameters).items()
        if all(isinstance(value, ast.Dict) or _makes_a_dict(model, value) for value in values)
    }


def _makes_a_dict(model: SemanticModel, value: ast.expr) -> bool:
    return isinstance(value, ast.Call) and not value.args and not value.keywords and (
        model.is_builtin(value.func, ("dict",)) or bool(model.resolved_names(value.func) & DICT_CLASSES)
    )


def _parts_of_load(nodes: List[ast.AST], call: ast.Call, parameters: Set[str]) -> Set[str]:
    """The local names bound only to the load or items of it (``state_dict = checkpoint["model"]``):
    what the load gave, which nothing else holds."""
    bindings = _single_bindings(nodes, parameters)
    parts: Set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, values in bindings.items():
            if name not in parts and all(_item_of(value, call, parts) for value in values):
                parts.add(name)
                changed = True
    return parts


def _item_of(value: ast.expr, call: ast.Call, parts: Set[str]) -> bool:
    while isinstance(value, ast.Subscript):
        value = value.value
    return value is call or (isinstance(value, ast.Name) and value.id in parts)


def _aliases(nodes: List[ast.AST], names: Set[str]) -> Set[str]:
    """The names bound, directly or through one another, from an expression that reads one of
    ``names`` (``alias = kept``, ``for part in kept.values()``): they may hold the same objects."""
    found = set(names)
    changed = True
    while changed:
        changed = False
        for value, target in _bound_from(nodes):
            if any(isinstance(part, ast.Name) and part.id in found for part in ast.walk(value)):
                for part in ast.walk(target):
                    if isinstance(part, ast.Name) and part.id not in found:
                        found.add(part.id)
                        changed = True
    return found - names


def _bound_from(nodes: List[ast.AST]) -> Iterator[Tuple[ast.expr, ast.expr]]:
    """Each binding among ``nodes`` as (what it binds from, its target)."""
    for node in nodes:
        if isinstance(node, ast.Assign):
            yield from ((node.value, target) for target in node.targets)
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and node.value is not None:
            yield node.value, node.target
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            yield node.iter, node.target
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            yield from ((item.context_expr, item.optional_vars) for item in node.items if item.optional_vars is not None)


def _stored_in(target: ast.expr, holders: Set[str]) -> bool:
    """``renamed[key[7:]]`` of ``renamed[key[7:]] = weights[key]``: an item of a new local dict or of
    a part of the load (whose own uses are checked, as it then carries the load)."""
    return isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id in holders


def _merged_into(node: ast.AST, fresh: Set[str]) -> Optional[str]:
    """``own`` of ``own.update(...)``: a merge into a fresh local value."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
        if node.func.value.id in fresh and node.func.attr == MERGE:
            return node.func.value.id
    return None


def _carriers(nodes: Iterable[ast.AST], call: ast.Call, fresh: Set[str]) -> Set[str]:
    """The local names bound to what the load gave, or to something computed from it (not the report
    ``load_state_dict`` gives back), and the fresh local values a method call merges it into
    (``model_dict.update(pretrained)``): a fixed point."""
    nodes = list(nodes)
    carriers: Set[str] = set()
    changed = True
    while changed:
        changed = False
        targets = [
            target for value, target in _bound_from(nodes)
            if _carries(value, call, carriers) and not _load_report(value)
        ] + [
            node.func for node in nodes
            if isinstance(node, ast.Call) and _merged_into(node, fresh) is not None
            and any(_carries(argument, call, carriers) for argument in _arguments(node))
        ]
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name) and name.id not in carriers:
                    carriers.add(name.id)
                    changed = True
    return carriers


def _load_report(value: ast.expr) -> bool:
    """``model.load_state_dict(weights)`` as a value bound (``msg = ...``, ``missing, unexpected =
    ...``): what it gives back names the keys that did not fit, and holds nothing of the weights."""
    return isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == LOADS_INTO


def _only_loaded(
    model: SemanticModel, function: Function, nodes: List[ast.AST], call: ast.Call, carriers: Set[str], fresh: Set[str], holders: Set[str],
) -> bool:
    """Whether every use of the load, and of the names bound to it, goes towards ``load_state_dict``:
    an argument of it, the value of an assignment to local names, the iterable of a loop, the
    context of a ``with``, the test of an ``if`` or ``assert``, an argument of a method merging it
    into a fresh local value, or an item of a new local dict or of a part of the load (``holders``).
    Anything else (an attribute, an item of another value, a global, another call, a ``return``)
    keeps some of it. A read in a statement that ends before the load's, outside any loop around
    it, reads another value of its name (``for m in self.modules()``), unless the name is a fresh
    local value or may hold one (``alias = kept``), which exists before the load does."""
    if carriers & (function.scope.globals | function.scope.nonlocals):
        return False
    own = {id(node) for node in nodes}
    if any(
        isinstance(node, ast.Name) and node.id in carriers and id(node) not in own
        for node in ast.walk(function.node) if node is not function.node
    ):
        return False  # read by a nested function or lambda, which may keep it
    loops = _enclosing_loops(model, function, call)
    existing = fresh | _aliases(nodes, fresh)
    uses = [call] + [
        node for node in nodes
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in carriers
        and (node.id in existing or _may_follow(model, function, node, call, loops))
    ]
    return all(_towards_loading(model, function, use, fresh, holders) for use in uses)


def _enclosing_loops(model: SemanticModel, function: Function, node: ast.AST) -> Set[int]:
    loops: Set[int] = set()
    parent = model.parent(node)
    while parent is not None and parent is not function.node:
        if isinstance(parent, (ast.For, ast.AsyncFor, ast.While)):
            loops.add(id(parent))
        parent = model.parent(parent)
    return loops


def _may_follow(model: SemanticModel, function: Function, use: ast.AST, call: ast.Call, loops: Set[int]) -> bool:
    """Whether a read may run after the load: its statement does not end before the load's begins
    (within one statement, evaluation order is not source order: a comprehension's element, an
    ``if`` expression's test), or a loop holds both. A name reused before the load, ``for m in
    self.modules()``, reads something else there."""
    before, after = _statement_of(model, use), _statement_of(model, call)
    if (before.end_lineno or before.lineno, before.end_col_offset or 0) >= (after.lineno, after.col_offset):
        return True
    return bool(loops & _enclosing_loops(model, function, use))


def _statement_of(model: SemanticModel, node: ast.AST) -> ast.stmt:
    while not isinstance(node, ast.stmt):
        parent = model.parent(node)
        assert parent is not None, "an expression is always inside a statement"
        node = parent
    return node


def _towards_loading(model: SemanticModel, function: Function, use: ast.AST, fresh: Set[str], holders: Set[str]) -> bool:
    child: ast.AST = use
    parent = model.parent(use)
    while parent is not None and parent is not function.node:
        if isinstance(parent, ast.Call) and child is parent.func and _merged_into(parent, fresh) is not None:
            return isinstance(model.parent(parent), ast.Expr)  # ``own.update(pretrained)``
        if isinstance(parent, ast.Call) and child is not parent.func:
            return isinstance(parent.func, ast.Attribute) and (parent.func.attr == LOADS_INTO or _merged_into(parent, fresh) is not None) or (
                _only_transforms(parent, function.receiver) and _towards_loading(model, function, parent, fresh, holders)
            )
        if isinstance(parent, ast.AugAssign):
            target = parent.target
            return child is parent.value and (
                _stored_in(target, holders) or isinstance(target, ast.Name) and target.id in holders
            )
        if isinstance(parent, (ast.Assign, ast.AnnAssign)):
            targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
            if child is not parent.value:
                return any(child is target and _stored_in(target, holders) for target in targets)
            return all(
                _stored_in(target, holders)
                or all(isinstance(part, (ast.Name, ast.Tuple, ast.List, ast.Store)) for part in ast.walk(target))
                for target in targets
            )
        if isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)):
            return child is parent.iter or isinstance(parent, ast.comprehension)
        if isinstance(parent, ast.withitem):
            return True
        if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)) and child is parent.test:
            return True
        if isinstance(parent, ast.stmt):
            return False
        child, parent = parent, model.parent(parent)
    return False


def _only_transforms(call: ast.Call, receiver: Optional[str]) -> bool:
    """Whether a call only computes a new value from its arguments for the call around it: a
    function (``transfer(self.model, weights)``, ``zip(...)``) or a method of a plain name that is
    not the instance (``state.items()``), never one that stores (``setattr``, ``update``,
    ``append``) nor a method of the instance (``self.restore(ckpt)``, which may keep it)."""
    if isinstance(call.func, ast.Name):
        return call.func.id not in STORING_FUNCTIONS
    return (
        isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
        and call.func.value.id != receiver and call.func.attr not in STORING_METHODS
    )


def _restores_training_state(call: ast.Call) -> bool:
    """Whether a ``load_state_dict`` call restores training state: its receiver or a key it reads
    spells one of :data:`TRAINING_STATE_WORDS` (``self.optimizer``, ``ckpt["scaler"]``)."""
    dotted = ast_dotted_name(call.func.value) if isinstance(call.func, ast.Attribute) else None
    spelt = [dotted or ""] + [
        part.value for argument in _arguments(call) for part in ast.walk(argument)
        if isinstance(part, ast.Constant) and isinstance(part.value, str)
    ]
    return any(word.startswith(TRAINING_STATE_WORDS) for text in spelt for word in WORD.findall(text.lower()))
