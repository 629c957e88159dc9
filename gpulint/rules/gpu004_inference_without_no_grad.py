"""GPU004: a model in evaluation mode called with gradients still on."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from functools import partial
from pathlib import PurePath
from typing import Dict, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider, QualifiedNameProvider

from gpulint.analysis.aliases import AliasGroup
from gpulint.analysis.gradients import GradientFlow, mentions
from gpulint.analysis.tensors import MODULE_API, dotted_name
from gpulint.engine.diagnostics import Applicability, Edit, FixOutcome, NoFix
from gpulint.semantic.grad_mode import GradMode, grad_off_mentions
from gpulint.engine.reach import EVERYTHING, Reach
from gpulint.engine.rule import FixAvailability, Rule
from gpulint.semantic.survey import Survey, argument_values, ast_dotted_name, is_false_constant

Scope = Union[cst.Module, cst.FunctionDef]
OUTPUTS_LEAVE = "a value computed from the forward pass leaves the function, and a caller may backpropagate it"
MAY_TRAIN = "the function may also train: it switches a model to training mode or hands one to other code"
MODULE_WRAP = "it wraps module-level statements in a block, and code after them may need their gradients"
"""Why a GPU004 fix is unsafe, as one line of help."""

TEST_FILE = re.compile(r"(test_.*|.*_test|tests|conftest)\.py")
"""pytest's test modules, and ``tests.py``: toy inputs on the CPU, judged trivial in real code."""


def is_test_file(path: str) -> bool:
    """A test module by its name, or any file in a ``tests`` folder."""
    parts = PurePath(path).parts
    return bool(parts) and (TEST_FILE.fullmatch(parts[-1]) is not None or "tests" in parts[:-1])


TRAINING_CALLS = frozenset({"backward", "step"})
"""Methods whose call shows the scope needs gradients (``loss.backward()``, ``optimizer.step()``)."""
FORWARD_METHODS = frozenset({"forward", "inference", "infer"})
"""Methods that run a model's forward pass (``model.inference(x)`` in Tacotron-style models)."""
MODE_PRESERVING = frozenset({"float", "half", "bfloat16", "double", "to", "cuda", "cpu", "eval", "requires_grad_"})
"""Methods that return the module they are called on: ``model.float().eval()`` puts ``model`` in eval mode."""


@dataclass
class _ScopeFacts:
    node: Scope
    owner: Optional[cst.ClassDef] = None
    """The class a method belongs to."""
    mode: Dict[str, bool] = field(default_factory=dict)
    """Dotted name -> whether the code last put it in evaluation mode."""
    forward_calls: List[cst.Call] = field(default_factory=list)
    """Calls of models in evaluation mode, outside any grad-off context, in source order."""
    open_calls: List[Tuple[str, cst.Call]] = field(default_factory=list)
    """Calls, outside any grad-off context, of names whose mode this scope does not set: their mode
    comes from elsewhere (the module, the class, the callers), decided once the module is read."""
    needs_gradients: bool = False

    @property
    def parameters(self) -> Tuple[str, ...]:
        if isinstance(self.node, cst.Module):
            return ()
        params = self.node.params
        return tuple(p.name.value for p in (*params.posonly_params, *params.params))

    @property
    def method_offset(self) -> int:
        """How many leading parameters callers do not pass (``self`` of a method)."""
        return 1 if self.owner is not None and self.parameters[:1] == ("self",) else 0


class InferenceWithoutNoGrad(Rule):
    """Inference with gradients on keeps every activation for a backward pass that never comes."""

    code = "GPU004"
    name = "inference-without-no-grad"
    message = (
        "`{model}` is in evaluation mode but called with gradients on: every activation is kept "
        "for a backward pass that never comes (run it under `torch.no_grad()`)"
    )
    fix_title = "Run the inference under `torch.no_grad()`"
    fix_availability = FixAvailability.SOMETIMES
    tokens = frozenset({"eval", "train"})

    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider, ParentNodeProvider)

    @classmethod
    def reach(cls, survey: Survey) -> Reach:
        """The functions where a name put in evaluation mode is called by the same function (or
        its class bodies and lambdas), those that call such a function by name (which tells
        whether it ever runs with gradients on), those that freeze a model, and those that may turn gradients off (project decorators)."""
        in_eval_mode: Set[Tuple[Optional[str], ast.AST]] = set()
        for call in survey.method_calls("eval", "train"):
            if (call.func.attr == "eval" and not call.args and not call.keywords) or (
                call.func.attr == "train" and any(map(is_false_constant, argument_values(call)))
            ):
                in_eval_mode.add((ast_dotted_name(_ast_module_of(call.func.value)), _facts_scope(survey, call)))
        for assign in survey.nodes(ast.Assign):
            if isinstance(assign.value, ast.Call) and isinstance(assign.value.func, ast.Attribute) and assign.value.func.attr == "eval":
                in_eval_mode.update((ast_dotted_name(target), _facts_scope(survey, assign)) for target in assign.targets)
        if _may_cross_scopes(in_eval_mode, survey):
            return EVERYTHING
        inferences = [call for call in survey.calls() if _may_infer(call, in_eval_mode, survey)]
        functions = {scope.name for scope in map(partial(_facts_scope, survey), inferences) if not isinstance(scope, ast.Module)}
        callers = [call for call in survey.calls() if _called_name(call) in functions]
        learned_from = [*callers, *survey.method_calls("requires_grad_"), *grad_off_mentions(survey)]
        return Reach.of(survey, inferences).around(survey, learned_from)

    def __init__(self, context) -> None:
        super().__init__(context)
        self.scopes: List[_ScopeFacts] = []
        self.finished: List[_ScopeFacts] = []
        self.guards = 0
        self.calls_by_function: Dict[str, List[bool]] = {}
        """Function or method name -> for each call of it in the module, whether gradients were off."""
        self.arguments_in_eval: Dict[str, List[Tuple[bool, ...]]] = {}
        """Function or method name -> for each call of it, which positional arguments were models in evaluation mode."""
        self.class_modes: Dict[int, Dict[str, List[bool]]] = {}
        """Class -> ``self.<attr>`` -> each mode its methods put it in."""
        self.method_names: Dict[int, Set[str]] = {}
        """Class -> the names of its methods."""
        self.frozen: Set[str] = set()
        """Models frozen anywhere in the module (``model.requires_grad_(False)``): calling them with
        inputs that need no gradient builds no graph."""

    def _names(self, node: cst.CSTNode) -> set:
        return {q.name for q in self.get_metadata(QualifiedNameProvider, node, set())}

    def visit_Module(self, node: cst.Module) -> None:
        self.grad_mode = GradMode(node, self._names, self.context.imports.star_modules)
        self.scopes.append(_ScopeFacts(node))

    def leave_Module(self, original_node: cst.Module) -> None:
        module_facts = self.scopes.pop()
        self.finished.append(module_facts)
        for facts in self.finished:
            self._resolve_open_calls(facts, module_facts)
            self._report(facts)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        block = self.get_metadata(ParentNodeProvider, node, None)
        owner = self.get_metadata(ParentNodeProvider, block, None) if block is not None else None
        self.scopes.append(_ScopeFacts(node, owner if isinstance(owner, cst.ClassDef) else None))
        if self.grad_mode.guarded_function(node):
            self.guards += 1

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.finished.append(self.scopes.pop())
        if self.grad_mode.guarded_function(original_node):
            self.guards -= 1

    def visit_With(self, node: cst.With) -> None:
        if self.grad_mode.guarded_with(node):
            self.guards += 1

    def leave_With(self, original_node: cst.With) -> None:
        if self.grad_mode.guarded_with(original_node):
            self.guards -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        value = node.value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "eval":
            for target in node.targets:
                name = dotted_name(target.target)
                if name:
                    self.scopes[-1].mode[name] = True

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.scopes[-1]
        func = node.func
        if isinstance(func, cst.Name):
            self.calls_by_function.setdefault(func.value, []).append(self.guards > 0)
        if isinstance(func, cst.Attribute):
            self.calls_by_function.setdefault(func.attr.value, []).append(self.guards > 0)
            method = func.attr.value
            receiver = dotted_name(_module_of(func.value))
            if method in TRAINING_CALLS or self._names(func) == {"torch.autograd.grad"}:
                facts.needs_gradients = True
            if receiver and method in ("eval", "train"):
                evaluating = not node.args if method == "eval" else bool(node.args) and _is_false(node.args[0].value)
                facts.mode[receiver] = evaluating
                if facts.owner is not None and receiver.startswith("self."):
                    self.class_modes.setdefault(id(facts.owner), {}).setdefault(receiver, []).append(evaluating)
            elif receiver and method == "requires_grad_" and node.args and _is_false(node.args[0].value):
                self.frozen.add(receiver)
            elif receiver and method in FORWARD_METHODS and not self.guards:
                self._forward_call(facts, receiver, node)
        model = dotted_name(func)
        if model and not self.guards:
            self._forward_call(facts, model, node)
        called = _called_name_cst(node)
        if called is not None:
            positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
            self.arguments_in_eval.setdefault(called, []).append(
                tuple(facts.mode.get(dotted_name(arg.value) or "") is True for arg in positional)
            )

    def _forward_call(self, facts: _ScopeFacts, model: str, call: cst.Call) -> None:
        """A call of ``model`` with gradients on: a forward pass if the scope put it, or ``self``
        whose submodule it is, in evaluation mode; left open if the scope never set its mode."""
        if facts.mode.get(model) or (model not in facts.mode and self._submodule_of_evaluating_self(facts, model)):
            facts.forward_calls.append(call)
        elif model not in facts.mode:
            facts.open_calls.append((model, call))

    def _submodule_of_evaluating_self(self, facts: _ScopeFacts, model: str) -> bool:
        """``self.decoder`` after ``self.eval()`` in the same method (not one of the class's methods)."""
        base, _, attribute = model.partition(".")
        if base != "self" or not attribute or "." in attribute or facts.owner is None or not facts.mode.get("self"):
            return False
        methods = self.method_names.get(id(facts.owner))
        if methods is None:
            methods = self.method_names[id(facts.owner)] = _method_names(facts.owner)
        return attribute not in methods and attribute not in MODULE_API

    def _resolve_open_calls(self, facts: _ScopeFacts, module_facts: _ScopeFacts) -> None:
        """Calls whose model is in evaluation mode by facts from outside their scope: a module-level
        model the function reads, a ``self.<attr>`` a method of the class puts in evaluation mode
        (and none puts back in training mode), or a parameter that every call of the function in
        the module passes a model in evaluation mode."""
        if isinstance(facts.node, cst.Module) or facts.node.name.value == "forward":
            return
        local = _bound_names(facts.node) | set(facts.parameters)
        class_modes = self.class_modes.get(id(facts.owner), {}) if facts.owner is not None else {}
        sites = self.arguments_in_eval.get(facts.node.name.value, [])
        resolved = []
        for model, call in facts.open_calls:
            base, _, rest = model.partition(".")
            if base == "self" and facts.owner is not None:
                modes = class_modes.get(model, [])
                in_eval = bool(modes) and all(modes)
            elif base in facts.parameters and rest == "":
                index = facts.parameters.index(base) - facts.method_offset
                in_eval = index >= 0 and bool(sites) and all(index < len(site) and site[index] for site in sites)
            elif base in facts.parameters:
                in_eval = False
            else:
                in_eval = base not in local and module_facts.mode.get(model) is True
            if in_eval:
                resolved.append(call)
        if resolved:
            facts.forward_calls = sorted([*facts.forward_calls, *resolved], key=self._position)

    def _position(self, node: cst.CSTNode) -> Tuple[int, int]:
        start = self.get_metadata(PositionProvider, node).start
        return start.line, start.column

    def _report(self, facts: _ScopeFacts) -> None:
        facts.forward_calls = [
            call for call in facts.forward_calls if _model(call) not in self.frozen and not self._discarded(call)
        ]
        if not facts.forward_calls or facts.needs_gradients:
            return
        if is_test_file(self.context.path) and not self.context.options.get("report-inference-in-tests"):
            return
        if isinstance(facts.node, cst.FunctionDef):
            calls = self.calls_by_function.get(facts.node.name.value, [])
            if calls and all(calls):
                return
        first = facts.forward_calls[0]
        self.report(first, self.message.format(model=_model(first)), self._fix(facts, first))

    def _discarded(self, call: cst.Call) -> bool:
        """A warm-up or profiling pass whose output is dropped at once (``model(x)``, ``_ = model(x)``):
        its graph lives only while the call runs. Not the expression a notebook cell ends with, whose
        value Jupyter displays and keeps (``Out``)."""
        parent = self.get_metadata(ParentNodeProvider, call, None)
        if isinstance(parent, cst.Expr):
            line = self.get_metadata(ParentNodeProvider, parent, None)
            module = self.get_metadata(ParentNodeProvider, line, None) if line is not None else None
            if self.context.path.endswith(".ipynb") and isinstance(module, cst.Module) and isinstance(line, cst.SimpleStatementLine):
                return not _displayed(module.body, list(module.body).index(line))
            return True
        return isinstance(parent, cst.Assign) and all(
            isinstance(target.target, cst.Name) and target.target.value == "_" for target in parent.targets
        )

    def _grad_off_call(self) -> str:
        """``torch.no_grad()`` (or ``torch.inference_mode()``), spelled as this file imports torch."""
        function = "inference_mode" if self.context.options.get("prefer-inference-mode") else "no_grad"
        return f"{self._torch_name() or 'torch'}.{function}()"

    def _torch_name(self) -> Optional[str]:
        for local, qualified in sorted(self.context.imports.bindings.items()):
            if qualified == {"torch"}:
                return local
        return None

    def _fix(self, facts: _ScopeFacts, first: cst.Call) -> FixOutcome:
        import_edit = None if self._torch_name() else self.import_edit("torch")
        if isinstance(facts.node, cst.Module):
            return self._module_fix(facts.node, first, import_edit)
        function = facts.node
        if function.asynchronous is not None:
            return NoFix("a grad-mode decorator does not reach the body of an `async def` across its awaits")
        decorator = cst.Decorator(decorator=cst.parse_expression(self._grad_off_call()))
        decorated = function.with_changes(decorators=[*function.decorators, decorator])
        edits = [self.replacement_edit(function, decorated), import_edit]
        if self._outputs_escape(function, facts):
            return self.make_fix(Applicability.UNSAFE, edits, note=OUTPUTS_LEAVE)
        if _may_train(function, facts):
            return self.make_fix(Applicability.UNSAFE, edits, note=MAY_TRAIN)
        return self.make_fix(Applicability.SAFE, edits)

    @staticmethod
    def _outputs_escape(function: cst.FunctionDef, facts: _ScopeFacts) -> bool:
        """Whether anything computed from a forward output leaves the function (returned, yielded,
        stored on an object or in a caller's container), where a caller might backpropagate it."""
        return GradientFlow(function, set(map(id, facts.forward_calls))).escapes()

    def _module_fix(self, module: cst.Module, first: cst.Call, import_edit: Optional[Edit]) -> FixOutcome:
        """Wrap the module's statements from the first forward call to the last use of its outputs,
        stopping before a comment line that starts a new section (or a notebook's next cell), and
        before the expression a notebook cell ends with (Jupyter displays its value only outside a
        block); no fix where that expression is the forward call's own statement."""
        statement = first
        while self.get_metadata(ParentNodeProvider, statement) is not module:
            statement = self.get_metadata(ParentNodeProvider, statement)
        body = list(module.body)
        start = body.index(statement)
        smalls = [small for line in body if isinstance(line, cst.SimpleStatementLine) for small in line.body]
        own = statement.body if isinstance(statement, cst.SimpleStatementLine) else []
        outputs = [
            target.target.value for small in own if isinstance(small, cst.Assign)
            for target in small.targets if isinstance(target.target, cst.Name)
        ]
        group = AliasGroup(outputs, smalls)
        end = start
        for index in range(start + 1, len(body)):
            if _starts_section(body[index]):
                break
            if mentions(body[index], group.names):
                end = index
        if self.context.path.endswith(".ipynb") and _displayed(body, end):
            end -= 1
            if end < start:
                return NoFix("the forward call is the expression the cell displays, which a `with` block would hide")
        wrapped = cst.With(
            items=[cst.WithItem(item=cst.parse_expression(self._grad_off_call()))],
            body=cst.IndentedBlock(body=[body[start].with_changes(leading_lines=[]), *body[start + 1 : end + 1]]),
            leading_lines=body[start].leading_lines,
        )
        new_module = module.with_changes(body=[*body[:start], wrapped, *body[end + 1 :]])
        return self.make_fix(Applicability.UNSAFE, [self.replacement_edit(module, new_module), import_edit], note=MODULE_WRAP)


def _may_train(function: cst.FunctionDef, facts: _ScopeFacts) -> bool:
    """Whether the function may also train: it switches a model back to training mode, or hands a
    model in evaluation mode to another function (which a decorator would run without gradients)."""
    models = set(facts.mode)
    forward = set(map(id, facts.forward_calls))
    found = []

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if id(node) in forward:
                return
            if isinstance(node.func, cst.Attribute) and node.func.attr.value == "train":
                if not (node.args and _is_false(node.args[0].value)):
                    found.append(node)
            if any(dotted_name(arg.value) in models for arg in node.args):
                found.append(node)

    function.body.visit(Calls())
    return bool(found)


def _model(call: cst.Call) -> Optional[str]:
    """The model a forward call calls: ``model`` in ``model(x)``, ``model.forward(x)`` and ``model.inference(x)``."""
    func = call.func
    return dotted_name(func.value if isinstance(func, cst.Attribute) and func.attr.value in FORWARD_METHODS else func)


def _module_of(node: cst.BaseExpression) -> cst.BaseExpression:
    """``model`` in ``model.float().to(device)``: calls that return the module they are called on."""
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in MODE_PRESERVING:
        node = node.func.value
    return node


def _called_name_cst(call: cst.Call) -> Optional[str]:
    """The name ``calls_by_function`` files a call under: ``f`` for ``f(x)`` and ``obj.f(x)``."""
    if isinstance(call.func, cst.Name):
        return call.func.value
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return None


def _bound_names(function: cst.FunctionDef) -> Set[str]:
    """Names the function binds itself (so a module-level model of that name is not the one it calls)."""
    bound: Set[str] = set()

    class Bindings(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is function

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            bound.update(n.value for n in _names_in_target(node.target))

        def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
            bound.update(n.value for n in _names_in_target(node.target))

        def visit_For(self, node: cst.For) -> None:
            bound.update(n.value for n in _names_in_target(node.target))

        def visit_AsName(self, node: cst.AsName) -> None:
            bound.update(n.value for n in _names_in_target(node.name))

    function.visit(Bindings())
    return bound


def _names_in_target(target: cst.CSTNode) -> List[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [name for element in target.elements for name in _names_in_target(element.value)]
    if isinstance(target, cst.StarredElement):
        return _names_in_target(target.value)
    return []


def _method_names(owner: cst.ClassDef) -> Set[str]:
    return {statement.name.value for statement in owner.body.body if isinstance(statement, cst.FunctionDef)}


def _is_false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def _starts_section(statement: cst.CSTNode) -> bool:
    return any(line.comment is not None for line in getattr(statement, "leading_lines", ()))


def _displayed(body: Sequence[cst.CSTNode], index: int) -> bool:
    """Whether ``body[index]`` is a bare expression that ends a notebook cell, whose value Jupyter shows."""
    statement = body[index]
    last_in_cell = index + 1 == len(body) or _starts_section(body[index + 1])
    return last_in_cell and isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[-1], cst.Expr)


def _facts_scope(survey: Survey, node: ast.AST) -> ast.AST:
    """The function (or module) whose facts the visitor records ``node`` in: class bodies and
    lambdas belong to the function around them."""
    scope = survey.scope_of(node)
    while isinstance(scope, (ast.Lambda, ast.ClassDef)):
        scope = survey.scope_of(scope)
    return scope


def _may_infer(call: ast.Call, in_eval_mode: Set[Tuple[Optional[str], ast.AST]], survey: Survey) -> bool:
    """Whether ``call`` calls (or calls ``forward`` of) a name put in evaluation mode in its scope."""
    func = call.func
    receiver = ast_dotted_name(func.value) if isinstance(func, ast.Attribute) and func.attr in FORWARD_METHODS else None
    scope = _facts_scope(survey, call)
    return any(name is not None and (name, scope) in in_eval_mode for name in (ast_dotted_name(func), receiver))


def _ast_module_of(node: ast.expr) -> ast.expr:
    """:func:`_module_of` on Python's own tree."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MODE_PRESERVING:
        node = node.func.value
    return node


def _may_cross_scopes(in_eval_mode: Set[Tuple[Optional[str], ast.AST]], survey: Survey) -> bool:
    """Whether a model's evaluation mode may reach another scope: set at module level, on ``self``
    or one of its attributes, or passed as an argument to a call; then every function is read."""
    for name, scope in in_eval_mode:
        if name is None:
            continue
        if isinstance(scope, ast.Module) or name == "self" or name.startswith("self."):
            return True
    eval_names = {(name, scope) for name, scope in in_eval_mode}
    return any(
        (ast_dotted_name(arg), _facts_scope(survey, call)) in eval_names
        for call in survey.calls() for arg in call.args
    )


def _called_name(call: ast.Call) -> Optional[str]:
    """The name the visitor files ``call`` under in ``calls_by_function``."""
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None
