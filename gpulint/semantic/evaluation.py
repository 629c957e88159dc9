"""Evaluation mode by binding: which models the code puts in evaluation mode, and which calls run
their forward pass with gradients on.

Each function (its lambdas and class bodies with it) and the module-level code are read in source
order: ``model.eval()``, ``model.train(False)``, ``m = model.float().eval()`` put a value in
evaluation mode, ``model.train()`` takes it out. A call whose mode the function does not set takes
it from outside, decided over the whole module: a module-level model a function reads, a
``self.<attr>`` that the class's methods only ever put in evaluation mode (not in a class that is
itself a model, where that freezes a part of what is trained), a parameter that every
call of the function in the module passes a model in evaluation mode (a fixed point over the call
graph), the value of a call to a function that returns a model it put in evaluation mode.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Dict, FrozenSet, List, Optional, Set, Tuple, Union

from gpulint.semantic.model import Function, GradientWalker, Place, SemanticModel
from gpulint.semantic.scopes import Binding
from gpulint.semantic.survey import ast_dotted_name, forward_model, is_false_constant, module_of, own_nodes
from gpulint.semantic.frozen import frozen_models
from gpulint.semantic.reached_reads import reached_reads
from gpulint.semantic.torch_api import (
    FORWARD_METHODS, HISTORY_FREE_METHODS, MODULE_API, MODULE_CALL_METHOD, MODULE_RETURNING_METHODS, PARAMETER_FREE_LAYERS,
    is_loss_module, nn_class_name,
)

MODE_PRESERVING = MODULE_RETURNING_METHODS - {"train"}
"""Methods that return the module they are called on and keep its mode: ``model.float().eval()`` puts
``model`` in eval mode."""
DEEP_COPY = "copy.deepcopy"
"""A copy of a module, ``training`` flag included."""

DETACHING = frozenset({"detach", "data", "detach_"})
"""What gives a tensor that needs no gradient from one that may (``out.detach()``, ``out.data``)."""

PIPELINE_SUFFIX = "Pipeline"
PIPELINE_FACTORIES = frozenset({"transformers.pipeline", "transformers.pipelines.pipeline"})
"""How Hugging Face pipelines are made: classes named ``...Pipeline`` (diffusers, transformers) and
``transformers.pipeline``. Their ``__call__`` runs the models without gradients."""

Owner = Union[ast.Module, ast.FunctionDef, ast.AsyncFunctionDef]
ArgumentMode = Union[bool, Tuple["ScopeFacts", Place], Function]
"""What a call passes at one position: a model known to be in evaluation mode there or not, one
whose mode comes from outside the caller, or what a function of the module returns."""

CALLED_AS_THE_OBJECT = frozenset({MODULE_CALL_METHOD, "__call__"})
"""The methods that calling the object runs (``model(x)``, ``body(pose)``): a forward pass that a
training caller may backpropagate through, so evaluation mode set elsewhere in the class does not
reach into them."""


@dataclass(eq=False)
class ScopeFacts:
    """What one function (or the module-level code) does with evaluation mode."""

    node: Owner
    function: Optional[Function]
    mode: Dict[Place, bool] = field(default_factory=dict)
    """Each value the code put in or out of evaluation mode, as it last left it."""
    set_modes: Set[str] = field(default_factory=set)
    """How the code spells the values whose mode it sets."""
    forward_calls: List[ast.Call] = field(default_factory=list)
    """Forward passes of models in evaluation mode, with gradients on."""
    open_calls: List[Tuple[Place, ast.Call]] = field(default_factory=list)
    """Calls with gradients on of values whose mode this code does not set."""
    needs_gradients: bool = False
    """The code calls ``backward``, an optimizer ``step`` or ``torch.autograd.grad``."""
    models: Set[Place] = field(default_factory=set)
    """Names the code binds to a value the file shows to be a module (``model = Net()``,
    ``model = torch.load(path)`` where the file calls ``model.parameters()``...)."""
    default_mode_calls: List[ast.Call] = field(default_factory=list)
    """Calls, with gradients on, of such a model whose mode the code never sets: it runs in
    training mode, and builds a graph all the same."""
    training_mode_calls: List[ast.Call] = field(default_factory=list)
    """Calls, with gradients on, of values the code put in training mode (``model.train()``)."""
    outputs: Dict[int, Set[str]] = field(default_factory=dict)
    """For each call (by ``id``) whose value the code binds to names, those names."""
    returned_by: Dict[Place, Optional[Function]] = field(default_factory=dict)
    """Names the code last bound to what a call returns, with the module's function it calls (None
    for any other callee): ``model = load_model(path)``."""
    read_as_numpy: Dict[str, List[ast.Name]] = field(default_factory=dict)
    """Names the code turns into numpy arrays without detaching them (``out[0].cpu().numpy()``),
    with those reads: the tensors read there need no gradient, or the call would raise."""
    detached: Set[str] = field(default_factory=set)
    """Names the code detaches somewhere (``out["boxes"].detach()``, ``out.data``): where the name
    holds one value only, the code takes it to carry a graph, so another part turned into numpy
    undetached (a detector's integer ``labels``, which never require grad) shows nothing of the
    model."""


class EvaluationFacts:
    """Evaluation-mode facts of one module, computed once."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self.scopes: List[ScopeFacts] = []
        self.arguments: Dict[int, Dict[int, ArgumentMode]] = {}
        """For each call site (by ``id`` of its node), what it passes at each positional argument."""
        self.frozen: Set[Place] = set(model.derived(frozen_models))
        """Models that build no graph of their own: frozen models (:mod:`gpulint.semantic.frozen`),
        instances of a class whose ``forward`` runs without gradients, and models whose outputs
        the code turns into numpy arrays without detaching them (which raises on a tensor that
        requires grad: the model's weights need none), unless it detaches them elsewhere
        (:attr:`ScopeFacts.detached`)."""
        self.weightless: Set[Place] = set()
        """Names bound to a ``torch.nn`` layer without weights (``softmax = nn.Softmax(dim=1)``):
        what one computes carries only the graph of its input."""
        self.losses: Set[Place] = set()
        """Names only ever bound to a ``torch.nn`` loss module (``criterion =
        nn.CrossEntropyLoss().cuda()``), which holds no weights and keeps nothing of its inputs: no
        other assignment, loop or ``with`` binds them (:meth:`_resolve_losses`)."""
        self.handed_models: Set[Place] = set()
        """Parameters that every call of their function in the module, one at least, gives a model
        (a name the caller binds to one, or such a parameter in turn): ``testing(loader, net)`` after
        ``net = Net().cuda()`` (:meth:`_resolve_handed_models`)."""
        self.class_modes: Dict[Place, List[bool]] = {}
        """``self.<attr>`` of a class -> each mode its methods put it in."""
        _Walk(self).run()
        self._resolve()

    @cached_property
    def module_facts(self) -> ScopeFacts:
        return next(facts for facts in self.scopes if isinstance(facts.node, ast.Module))

    def _argument_in_eval(self, argument: ArgumentMode, decided: Dict[Tuple[Function, int], bool]) -> bool:
        if isinstance(argument, bool):
            return argument
        if isinstance(argument, Function):
            return argument in self.returning_in_evaluation
        facts, place = argument
        return self._open_in_eval(facts, place, decided)

    def _open_in_eval(self, facts: ScopeFacts, place: Place, decided: Dict[Tuple[Function, int], bool]) -> bool:
        """Whether a value whose mode ``facts`` does not set is in evaluation mode by facts from
        outside: the function that returned it, the class, the callers, the module."""
        if facts.returned_by.get(place) in self.returning_in_evaluation:
            return True
        function = facts.function
        if function is None or function.name in CALLED_AS_THE_OBJECT:
            return False
        binding = place.binding
        if binding.scope.is_class and binding.name == "self":
            if binding.scope.node in self.model.module_classes:
                return False
            modes = self.class_modes.get(place, [])
            return bool(modes) and all(modes)
        owner = function if binding.scope is function.scope else self._enclosing_function(function, binding)
        if owner is not None and binding.name in owner.scope.parameters:
            if place.path or binding.name not in owner.positional or (owner is not function and place in self._facts_of[owner].mode):
                return False
            return decided.get((owner, owner.positional.index(binding.name)), False)
        if binding.scope is self.model.root:
            return self.module_facts.mode.get(place) is True
        return False

    def _enclosing_function(self, function: Function, binding: Binding) -> Optional[Function]:
        """The function around ``function`` whose scope owns ``binding`` (a closure's read of a
        parameter of the function that defines it: ``net`` in ``predict`` nested in ``demo(net)``)."""
        owner = self.model.function_of_scope(binding.scope)
        if owner is None or not any(around is owner.node for around in self.model.ancestors(function.node)):
            return None
        return owner

    @cached_property
    def _facts_of(self) -> Dict[Function, ScopeFacts]:
        return {facts.function: facts for facts in self.scopes if facts.function is not None}

    @cached_property
    def returning_in_evaluation(self) -> FrozenSet[Function]:
        """The module's functions every ``return`` of which gives back a module they switched to
        evaluation mode: ``model.eval()`` then ``return model`` (the mode as the function last left
        it), or ``return model.eval()``."""
        found = set()
        for facts in self.scopes:
            function = facts.function
            if function is None:
                continue
            returns = [node for node in own_nodes(function.node.body) if isinstance(node, ast.Return)]
            if returns and all(node.value is not None and self._in_evaluation_as_left(facts, node.value) for node in returns):
                found.add(function)
        return frozenset(found)

    def _in_evaluation_as_left(self, facts: ScopeFacts, value: ast.expr) -> bool:
        switched = _mode_switched_by(value)
        if switched is not None:
            return switched
        place = self.model.place(module_of(value, MODE_PRESERVING))
        return place is not None and facts.mode.get(place) is True

    def _resolve(self) -> None:
        """The loss modules and the parameters given one at every call (:meth:`_resolve_losses`),
        the parameters given a model at every call (:meth:`_resolve_handed_models`), then the
        parameters in evaluation mode at every call (a least fixed point), then the open calls."""
        self.losses = {place for place in self.losses if self._only_ever_a_loss(place)}
        self._resolve_losses()
        self._resolve_handed_models()
        decided: Dict[Tuple[Function, int], bool] = {}
        changed = True
        while changed:
            changed = False
            for function in self.model.all_functions:
                for index in range(len(function.positional)):
                    if decided.get((function, index)):
                        continue
                    sites = [self.arguments.get(id(site.node), {}) for site in function.calls]
                    if sites and all(index in site and self._argument_in_eval(site[index], decided) for site in sites):
                        decided[(function, index)] = True
                        changed = True
        for facts in self.scopes:
            evidence: Optional[Set[str]] = None
            for call in [*facts.forward_calls, *(call for _, call in facts.open_calls)]:
                place = self.model_place(call)
                if place is None or id(call) not in facts.outputs or not facts.read_as_numpy:
                    continue
                if evidence is None:
                    evidence = set(facts.read_as_numpy) - _detached_once_bound(facts)
                if self._output_read_as_numpy(facts, call, evidence):
                    self.frozen.add(place)
        for facts in self.scopes:
            resolved = [call for place, call in facts.open_calls if self._open_in_eval(facts, place, decided)]
            if resolved:
                facts.forward_calls = sorted([*facts.forward_calls, *resolved], key=lambda call: (call.lineno, call.col_offset))

    def _output_read_as_numpy(self, facts: ScopeFacts, call: ast.Call, names: Set[str]) -> bool:
        """Whether the value the forward ``call`` binds (``out = model(x)``) reaches one of the
        scope's undetached numpy reads of ``names`` as it is, or through names bound to a chain of
        its methods, attributes and items (``probs = out.softmax(1)``), each followed as the
        statements run (:func:`~gpulint.semantic.reached_reads.reached_reads`). A read of the name
        after it is bound to another value (``out = torch.argmax(out, 1)``, then
        ``out.cpu().numpy()``) shows nothing of the model. Where another scope may read a name,
        a numpy read of it anywhere counts."""
        numpy_reads = {id(read) for name in names for read in facts.read_as_numpy.get(name, [])}
        pending = [self.model.parent(call)]
        seen: Set[int] = set()
        while pending:
            assignment = pending.pop()
            if not isinstance(assignment, ast.Assign) or id(assignment) in seen:
                continue
            seen.add(id(assignment))
            for target in assignment.targets:
                place = self.model.place(target) if isinstance(target, ast.Name) else None
                if place is None:
                    continue
                reads = reached_reads(self.model, assignment, place.binding)
                if reads is None:
                    if place.binding.name in names:
                        return True
                    continue
                if any(id(read) in numpy_reads for read in reads):
                    return True
                for read in reads:
                    statement = self.model.parent(read)
                    while statement is not None and not isinstance(statement, ast.stmt):
                        statement = self.model.parent(statement)
                    if isinstance(statement, ast.Assign) and _undetached_root(statement.value) is read:
                        pending.append(statement)
        return False

    def _only_ever_a_loss(self, place: Place) -> bool:
        """Whether every store to the name ``place`` is an assignment of a loss module: a name bound
        again to anything else (``criterion = PDEResidual()`` in one branch) may hold that instead."""
        for use in self.model.uses(place.binding):
            if isinstance(use.ctx, ast.Load):
                continue
            statement = self.model.parent(use)
            if not (
                isinstance(statement, ast.Assign) and use in statement.targets
                and builds_a_loss_module(self.model, statement.value)
            ):
                return False
        return True

    def _resolve_handed_models(self) -> None:
        """Add to :attr:`handed_models` each parameter that every call gives a model: a name the
        calling code binds to one (:attr:`ScopeFacts.models`), or such a parameter in turn."""
        models = {place for facts in self.scopes for place in facts.models}
        self._add_parameters_given(self.handed_models, models)

    def _resolve_losses(self) -> None:
        """Add to :attr:`losses` each parameter that every call gives a value bound to a loss module
        (``validating(loader, net, criterion)`` after ``criterion = nn.CrossEntropyLoss()``) and that
        the function never binds to anything else."""
        self._add_parameters_given(self.losses, set(), self._only_ever_a_loss)

    def _add_parameters_given(
        self, found: Set[Place], values: Set[Place], admits: Callable[[Place], bool] = lambda place: True,
    ) -> None:
        """Add to ``found`` each positional parameter that ``admits`` passes and that every call of
        its function in the module, one at least, gives a name in ``values`` or in ``found``: a least
        fixed point over the module's call graph."""
        changed = True
        while changed:
            changed = False
            for function in self.model.all_functions:
                for index, name in enumerate(function.positional):
                    place = Place(Binding(function.scope, name))
                    if place in found or not function.calls or not admits(place):
                        continue
                    given = [dict(self.model.positional_arguments(site)).get(index) for site in function.calls]
                    if all(argument is not None and self.model.place(argument) in values | found for argument in given):
                        found.add(place)
                        changed = True

    def model_place(self, call: ast.Call) -> Optional[Place]:
        """The model a forward call calls: ``model`` in ``model(x)``, ``model.forward(x)``, ``model.inference(x)``."""
        return self.model.place(forward_model(call))


class _Walk(GradientWalker):
    """Reads each function and the module-level code in source order."""

    def __init__(self, facts: EvaluationFacts) -> None:
        super().__init__(facts.model)
        self.facts = facts
        self.stack: List[ScopeFacts] = []

    def run(self) -> None:
        self._enter(self.model.tree, None)
        self.body(self.model.tree.body)
        self.stack.pop()

    def _enter(self, node: Owner, function: Optional[Function]) -> None:
        scope = ScopeFacts(node, function)
        self.facts.scopes.append(scope)
        self.stack.append(scope)

    def enter_function(self, function: Function) -> None:
        self._enter(function.node, function)

    def leave_function(self, function: Function) -> None:
        self.stack.pop()

    def _set_mode(self, node: ast.expr, evaluating: bool) -> None:
        place = self.model.place(node)
        if place is None:
            return
        facts = self.stack[-1]
        facts.mode[place] = evaluating
        facts.set_modes.add(ast_dotted_name(node) or "")
        if place.binding.scope.is_class and place.binding.name == "self" and place.path:
            self.facts.class_modes.setdefault(place, []).append(evaluating)

    def visit_Assign(self, node: ast.Assign) -> None:
        value = node.value
        if isinstance(value, ast.Call):
            names = {target.id for target in node.targets if isinstance(target, ast.Name)}
            if names:
                self.stack[-1].outputs[id(value)] = names
            for target in node.targets:
                place = self.model.place(target) if isinstance(target, ast.Name) else None
                if place is not None:
                    self.stack[-1].returned_by[place] = self.model.callee(value)
        if self.model.classes_without_grad and self.model.class_built(value) in self.model.classes_without_grad:
            for target in node.targets:
                place = self.model.place(target)
                if place is not None:
                    self.facts.frozen.add(place)
        if builds_a_loss_module(self.model, value):
            self.facts.losses.update(
                place for place in map(self.model.place, node.targets) if place is not None and not place.path
            )
        for target in node.targets:
            if isinstance(target, ast.Name) and target.id in self.model.modules and not (
                self._pipeline(value) or builds_a_loss_module(self.model, value)
            ):
                place = self.model.place(target)
                if place is not None:
                    self.stack[-1].models.add(place)
                    if builds_a_weightless_layer(self.model, value):
                        self.facts.weightless.add(place)
        if self._copy_in_evaluation(value) or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "eval"
        ):
            for target in node.targets:
                if ast_dotted_name(target):
                    place = self.model.place(target)
                    if place is not None:
                        self.stack[-1].mode[place] = True
                        self.stack[-1].set_modes.add(ast_dotted_name(target) or "")
        self.generic_visit(node)

    def _copy_in_evaluation(self, value: ast.expr) -> bool:
        """``copy.deepcopy(model)`` (moved or cast after) of a model this code left in evaluation
        mode: the copy keeps the mode."""
        copied = module_of(value, MODE_PRESERVING)
        if not (isinstance(copied, ast.Call) and len(copied.args) == 1 and self.model.resolved_names(copied.func) == {DEEP_COPY}):
            return False
        source = self.model.place(module_of(copied.args[0], MODE_PRESERVING))
        return source is not None and bool(self.stack[-1].mode.get(source))

    def _pipeline(self, value: ast.expr) -> bool:
        """A Hugging Face pipeline (``StableDiffusionPipeline.from_pretrained(...).to(device)``,
        ``transformers.pipeline(...)``): calling one runs without gradients, as the library makes it."""
        built = module_of(value, MODE_PRESERVING)
        if not isinstance(built, ast.Call):
            return False
        func = built.func
        if isinstance(func, ast.Attribute) and func.attr == "from_pretrained":
            func = func.value
        name = (ast_dotted_name(func) or "").split(".")[-1]
        return name.endswith(PIPELINE_SUFFIX) or bool(self.model.resolved_names(built.func) & PIPELINE_FACTORIES)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in DETACHING:
            root = _chain_root(node.value)
            if root is not None:
                self.stack[-1].detached.add(root)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        facts = self.stack[-1]
        func = node.func
        if self.model.needs_gradients(node):
            facts.needs_gradients = True
        if isinstance(func, ast.Attribute) and func.attr == "numpy":
            undetached = _undetached_root(func.value)
            if undetached is not None:
                facts.read_as_numpy.setdefault(undetached.id, []).append(undetached)
        if isinstance(func, ast.Attribute):
            method = func.attr
            receiver = module_of(func.value, MODE_PRESERVING)
            if ast_dotted_name(receiver) is not None:
                if method in ("eval", "train"):
                    evaluating = not node.args if method == "eval" else bool(node.args) and is_false_constant(node.args[0])
                    self._set_mode(receiver, evaluating)
                elif method in FORWARD_METHODS and not self.grad_off(node):
                    self._forward_call(facts, self.model.place(receiver), node)
        if ast_dotted_name(func) is not None and not self.grad_off(node):
            self._forward_call(facts, self.model.place(func), node)
        site = self.model.site_of.get(id(node))
        if site is not None and site.callee is not None:
            self.facts.arguments[id(node)] = {
                index: self._argument(facts, argument) for index, argument in self.model.positional_arguments(site)
            }
        self.generic_visit(node)

    def _argument(self, facts: ScopeFacts, argument: ast.expr) -> ArgumentMode:
        switched = _mode_switched_by(argument)
        if switched is not None:
            return switched
        callee = self.model.callee(argument) if isinstance(argument, ast.Call) else None
        if callee is not None:
            return callee
        place = self.model.place(argument)
        if place is None:
            return False
        if place in facts.mode:
            return facts.mode[place]
        return (facts, place)

    def _forward_call(self, facts: ScopeFacts, place: Optional[Place], call: ast.Call) -> None:
        """A call with gradients on: a forward pass if the code put the model (or ``self``, whose
        submodule it is) in evaluation mode; left open if it never set its mode."""
        if place is None:
            return
        if facts.mode.get(place) or (place not in facts.mode and self._submodule_of_evaluating_self(facts, place)):
            facts.forward_calls.append(call)
        elif place not in facts.mode:
            facts.open_calls.append((place, call))
            if place in facts.models:
                facts.default_mode_calls.append(call)
        else:
            facts.training_mode_calls.append(call)

    def _submodule_of_evaluating_self(self, facts: ScopeFacts, place: Place) -> bool:
        """``self.decoder`` after ``self.eval()`` in the same method (not one of the class's methods)."""
        binding = place.binding
        if not (binding.scope.is_class and binding.name == "self") or place.path.count(".") != 1:
            return False
        if not facts.mode.get(Place(binding)):
            return False
        attribute = place.path[1:]
        owner = facts.function.owner if facts.function is not None else None
        methods: FrozenSet[str] = frozenset(owner.methods) if owner is not None else frozenset()
        return attribute not in methods and attribute not in MODULE_API


def _mode_switched_by(value: ast.expr) -> Optional[bool]:
    """The mode the last switch of a chain of calls that return their module sets: True for
    ``net.eval()`` and ``net.eval().cuda()``, False for ``net.train()``; None where no call of the
    chain switches one (``net.cuda()``, ``net``)."""
    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in MODULE_RETURNING_METHODS:
        if value.func.attr == "eval":
            return not value.args
        if value.func.attr == "train":
            return bool(value.args) and is_false_constant(value.args[0])
        value = value.func.value
    return None


def builds_a_loss_module(model: SemanticModel, value: ast.expr) -> bool:
    """A torch loss module built (``nn.CrossEntropyLoss(reduction="none")``), moved or switched
    after: it holds no weights, so the graph of what it computes is only that of its inputs, made by
    the model run before it (under ``torch.no_grad()`` in a perplexity script). Calling it is no
    model's forward pass."""
    built = module_of(value, MODE_PRESERVING)
    return isinstance(built, ast.Call) and any(is_loss_module(q) for q in model.qualified_names(built.func))


def builds_a_weightless_layer(model: SemanticModel, value: ast.expr) -> bool:
    """A ``torch.nn`` layer without weights built (``nn.Softmax(dim=1)``, ``nn.Upsample(...)``), moved
    or switched after."""
    built = module_of(value, MODE_PRESERVING)
    return isinstance(built, ast.Call) and any(
        nn_class_name(q) in PARAMETER_FREE_LAYERS for q in model.qualified_names(built.func)
    )


def _undetached_root(node: ast.expr) -> Optional[ast.Name]:
    """The name node a chain of tensor methods, attributes and indexing starts from
    (``out[1][0].sigmoid().cpu()``: ``out``); None if the chain detaches (``.detach()``, ``.data``)
    or computes something that never carries history (``out.argmax(1)``: indices, which never
    require grad, show nothing of the model)."""
    while True:
        if isinstance(node, ast.Name):
            return node
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in DETACHING or node.func.attr in HISTORY_FREE_METHODS:
                return None
            node = node.func.value
        elif isinstance(node, ast.Attribute):
            if node.attr in DETACHING:
                return None
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return None


def _chain_root(node: ast.expr) -> Optional[str]:
    """The name a chain of attributes, method calls and indexing starts from (``pred[0]["boxes"]``: ``pred``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Attribute):
                return None
            node = node.func.value
        else:
            node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _detached_once_bound(facts: ScopeFacts) -> Set[str]:
    """The names of :attr:`ScopeFacts.detached` that the code binds once (a name reused for another
    value may be detached as that one)."""
    body = facts.node.body
    bound: Dict[str, int] = {}
    for node in own_nodes(body):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound[node.id] = bound.get(node.id, 0) + 1
    return {name for name in facts.detached if bound.get(name, 0) <= 1}
