"""GPU004: a model in evaluation mode called with gradients still on."""

from __future__ import annotations

import ast
import bisect
import builtins
from itertools import takewhile
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple, Union

import libcst as cst
from libcst.metadata import ParentNodeProvider, PositionProvider

from gpulint.analysis.aliases import AliasGroup
from gpulint.analysis.gradients import GradientFlow, mentions
from gpulint.analysis.tensors import dotted_name
from gpulint.edits.statements import wrapping_indent
from gpulint.engine.diagnostics import Applicability, Edit, FixOutcome, NoFix
from gpulint.engine.rule import FixAvailability, Rule
from gpulint.engine.test_modules import is_test_module
from gpulint.semantic.backward import backpropagated_functions
from gpulint.semantic.reached_reads import reached_reads
from gpulint.semantic.confined import stays_in_statements, stays_inside
from gpulint.semantic.decorated_methods import runs_without_grad_by_its_decorator
from gpulint.semantic.dead_code import never_runs
from gpulint.semantic.evaluation import EvaluationFacts, ScopeFacts
from gpulint.semantic.explained_models import differentiated_elsewhere
from gpulint.semantic.fabricated_inputs import given_only_cpu_fabrications
from gpulint.semantic.cpu_models import runs_on_the_cpu
from gpulint.semantic.gradient_twins import has_a_grad_free_twin
from gpulint.semantic.library_inference import runs_its_own_inference
from gpulint.semantic.forward_methods import forward_methods
from gpulint.semantic.forward_values import hands_on, keeps_nothing_from
from gpulint.semantic.called_back import called_back_without_grad
from gpulint.semantic.history import AutogradHistory
from gpulint.semantic.model import Function, Place, SemanticModel
from gpulint.semantic.project_callers import called_only_without_grad
from gpulint.semantic.project_modules import project_modules
from gpulint.semantic.one_example import keeps_activations, registers_hooks, runs_one_example
from gpulint.semantic.tiny_batches import on_tiny_images
from gpulint.semantic.weightless_passes import weightless_pass_on_historyless_inputs
from gpulint.semantic.survey import ast_dotted_name, forward_model, own_nodes, position
from gpulint.semantic.torch_api import (
    DEVICE_KEEPING_TENSOR_METHODS, ELEMENTWISE_METHODS, EXECUTOR_MODULES, FORWARD_METHODS, FUNCTIONAL_NAMESPACE, TENSOR_TO_ARRAY_METHODS, HISTORY_FREE_METHODS, LAYOUT_METHODS,
    GRAD_MODE_ATTRIBUTES, GRAD_REQUIRING_TENSOR_METHODS, LOSS_FUNCTIONS, MODULE_METHODS, OPTIMIZER_NAMESPACE, TENSOR_METADATA_ATTRIBUTES, TENSOR_SHAPE_METHODS,
)

OUTPUTS_LEAVE = "a value computed from the forward pass leaves the function, and a caller may backpropagate it"
HANDED_ON = "the function hands values to code that may keep them or take gradients through them (a callable object, a logger)"
MAY_TRAIN = "the function may also train: it switches a model to training mode or hands one to other code"
MODULE_WRAP = "it wraps module-level statements in a block, and code after them may need their gradients"
"""Why a GPU004 fix is unsafe, as one line of help."""

LOOP_IN_TRAINING = "the code around the loop trains, and a value the loop computes must not reach a backward pass later"
TENSOR_HOOKS_NEED_GRAD = (
    "the file or a project module it imports registers hooks on tensors (`attention.register_hook(...)`) "
    "or keeps their gradients (`.retain_grad()`), which raise under `torch.no_grad()` on a tensor that then "
    "requires no gradient"
)
DIFFERENTIATED_ELSEWHERE = (
    "the class differentiates through this model in another method without training it (an explanation "
    "or an attack), and a model used so may register hooks on its tensors, which raise under `torch.no_grad()`"
)
HOOKS_KEEP_OUTPUTS = (
    "the file registers module hooks, which may hand the forward pass's activations to code that takes "
    "gradients through them (an attack's `torch.autograd.grad`)"
)
TAIL_IN_TRAINING = "the function trains before this code, and a value it computes must not reach a backward pass later"
TAIL_OF_A_TRAINING_LOOP = "the loop around it trains, and a value this code computes must not reach a backward pass later"
CUT_IN_TRAINING = "the code around it trains, and grad mode also reaches whatever else the statement runs"
SAMPLED_IN_TRAINING = "the code around it trains the model, and its mode stays as it is (batch statistics still update)"
CUT_WHERE_MODE_UNSET = (
    "the model runs in whatever mode its caller left it (batch statistics may still update), and grad mode "
    "also reaches whatever else its forward pass runs"
)
CUT_NOTES = frozenset({CUT_IN_TRAINING, SAMPLED_IN_TRAINING, CUT_WHERE_MODE_UNSET})
"""The notes of statements wrapped because every read of a forward call's output cuts it."""
CUT_STATEMENT_RUNS_MORE = (
    "the statement runs more than the forward pass whose output it cuts (a body, a model being "
    "trained), which gradients must reach; wrap just that forward pass in `torch.no_grad()`"
)
BUILTIN_NAMES = frozenset(dir(builtins))
RECEIVER_ALONE_METHODS = (
    HISTORY_FREE_METHODS | LAYOUT_METHODS | DEVICE_KEEPING_TENSOR_METHODS | ELEMENTWISE_METHODS | TENSOR_TO_ARRAY_METHODS
)
"""Methods whose result is made of the receiver alone (its arguments are dimensions, devices,
dtypes, or compared with it to give a mask)."""
MAX_FACTORY_DEPTH = 4
"""How many factories deep :func:`_returned_by_its_factory` follows what they return."""

Candidate = Tuple[ScopeFacts, List[ast.Call], Optional[Tuple[ast.stmt, str]]]
"""A scope's forward calls with gradients on and, where the scope trains, the statement the fix
wraps (an evaluation loop, the evaluation after a training step, a statement that cuts the output
at once) with why that fix is unsafe (None: the scope itself is the candidate)."""
LOOPS = (ast.For, ast.AsyncFor, ast.While)
GRAD_SWITCHES = frozenset({"requires_grad_", "enable_grad", "set_grad_enabled"})
"""Calls that switch gradients on inside an evaluation loop (a saliency map, an adversarial input)."""

NOTEBOOK_CELL = "# gpulint-cell "
"""The line that starts each cell in a notebook's Python text: a file with one may be a notebook."""


def restored_calls(model: SemanticModel, scope: ScopeFacts) -> List[ast.Call]:
    """In a function outside classes that never trains (no backward pass, optimizer step or
    ``autograd.grad``, and not one :attr:`~gpulint.semantic.model.SemanticModel.training_functions`
    counts), the calls in a loop, with gradients on and in whatever mode, of a model the function
    binds and loads trained weights into itself (``model = Net()``,
    ``model.load_state_dict(torch.load(path))``, then ``for batch in loader: output = model(x)``):
    it restores a model to run it over data, in a file that trains it elsewhere. Not where the
    function builds a ``torch.optim`` optimizer, nor where the outermost loop around the call may
    train (:func:`_may_train_inside`: ``train_one_epoch(model, loader, optimizer)`` in the epoch loop
    around a validation loop)."""
    function = scope.function
    if function is None or function.owner is not None or scope.needs_gradients or function in model.training_functions:
        return []
    restored = set()
    for node in own_nodes(function.node.body):
        if not isinstance(node, ast.Call):
            continue
        if any(name.startswith(OPTIMIZER_NAMESPACE) for name in model.resolved_names(node.func)):
            return []
        if isinstance(node.func, ast.Attribute) and node.func.attr == "load_state_dict":
            place = model.place(node.func.value)
            if place is not None and place in scope.models:
                restored.add(place)
    return [
        call for call in scope.default_mode_calls
        if model.in_loop(call) and model.place(forward_model(call)) in restored
        and not _may_train_inside(model, _outermost_loop(model, call), [call])
    ] if restored else []


def _beside_weighted_models(model: SemanticModel, facts: EvaluationFacts, calls: List[ast.Call]) -> List[ast.Call]:
    """The calls, less those of layers without weights (``softmax(logits)``) where a model with
    weights is called beside them: such a layer records only its input's graph, which that model's
    reported call made. Where no such call is seen (the input comes from a generator's bound
    ``decode``), the layer's call is where the graph shows, and it stays."""
    weighted = [call for call in calls if model.place(call.func) not in facts.weightless]
    return weighted or calls


def _one_per_line(calls: List[cst.Call], line_of: Callable[[cst.Call], int]) -> List[cst.Call]:
    """The first of the calls on each line: each forward pass is reported where it is written
    (``encoder(x)`` and then ``decoder(memory)``), one finding per line, as a line's ``noqa``
    silences them."""
    lines: Set[int] = set()
    chosen = []
    for call in calls:
        line = line_of(call)
        if line not in lines:
            lines.add(line)
            chosen.append(call)
    return chosen


def _outermost_loop(model: SemanticModel, node: ast.AST) -> ast.stmt:
    """The outermost ``for`` or ``while`` loop of its own function around ``node`` (which is in one)."""
    found: Optional[ast.stmt] = None
    current = model.parent(node)
    while current is not None and not isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
        if isinstance(current, (ast.For, ast.AsyncFor, ast.While)):
            found = current
        current = model.parent(current)
    assert found is not None
    return found


def _forward_of_a_model(model: SemanticModel, function: Function) -> bool:
    """``forward`` of a class that is a model, or a method of the class it runs
    (:func:`~gpulint.semantic.forward_methods.forward_methods`): its callers may backpropagate what
    it returns, and evaluation mode there freezes batch-norm statistics (a perceptual loss's feature
    network)."""
    return function in model.derived(forward_methods)


class InferenceWithoutNoGrad(Rule):
    """Inference with gradients on keeps every activation for a backward pass that never comes."""

    code = "GPU004"
    name = "inference-without-no-grad"
    message = (
        "`{model}` is in evaluation mode but called with gradients on: every activation is kept "
        "for a backward pass that never comes (run it under `torch.no_grad()`)"
    )
    inference_program_message = (
        "`{model}` is called with gradients on in a program that never trains: every activation is "
        "kept for a backward pass that never comes (run it under `torch.no_grad()`)"
    )
    restored_message = (
        "`{model}` is called with gradients on in a function that loads its weights and never trains: "
        "every activation is kept for a backward pass that never comes (run it under `torch.no_grad()`)"
    )
    sampled_message = (
        "`{model}` is called with gradients on, but every read of its output cuts it from the graph "
        "(`.data`, `.detach()`, `.item()`): every activation is kept for a backward pass that never "
        "comes (run it under `torch.no_grad()`)"
    )
    fix_title = "Run the inference under `torch.no_grad()`"
    fix_availability = FixAvailability.SOMETIMES
    tokens = frozenset({"eval", "train", "to", "cuda", "float", "half", "nn", *MODULE_METHODS})
    """Evaluation mode, or what shows a value to be a module (an inference-only program's model)."""

    METADATA_DEPENDENCIES = (PositionProvider, ParentNodeProvider)

    @staticmethod
    def candidates(model: SemanticModel, program: bool = False) -> List[Candidate]:
        """Each function (or the module-level code) that runs a model in evaluation mode with
        gradients on, with those forward calls: not where the code also trains (``backward``, an
        optimizer ``step``), nor in a function whose result a backward pass may start from, nor in
        a model's own ``forward`` or a method it runs (what its callers may backpropagate), nor in a function that
        always runs with gradients off, nor in one that runs its model once on one example it makes
        of Python data and lets nothing of it out (:func:`runs_one_example`), nor in one only handed to other code to call back, nor in one a factory makes that the code calls back only with gradients off (:func:`~gpulint.semantic.called_back.called_back_without_grad`), nor on a frozen model, nor on a model the module builds in
        a module that never puts anything on an accelerator (its graph takes host memory, not the
        GPU's). In an inference-only program (``program``: a notebook, or a file with an
        ``if __name__ == "__main__":`` block or whose module-level code parses the command line;
        nothing in the file trains or builds an optimizer, and it loads weights), a
        model the code binds and calls in a loop without ever setting its mode counts too, outside
        classes; so it does in the module-level code of any file that never trains and loads
        weights (no caller can turn gradients off around it). In code that trains, an evaluation loop counts on its own (:func:`_evaluation_loops`)."""
        never_trains = model.loads_weights and not (model.trains or model.builds_an_optimizer)
        inference_only = never_trains and (program or model.has_main_guard or model.parses_the_command_line)
        if not never_trains and not model.method_calls("load_state_dict") and not any(
            call.func.attr == "eval" or call.args for call in model.method_calls("eval", "train")
            if isinstance(call.func, ast.Attribute)
        ):
            return _without_weightless_passes(model, _cut_where_mode_unset(model, _sampled_in_training(model, [])))
        facts = model.derived(EvaluationFacts)
        found: List[Candidate] = []
        for scope in facts.scopes:
            forward = scope.forward_calls
            program_calls = [call for call in scope.default_mode_calls if model.in_loop(call)] if (
                not scope.needs_gradients and (
                    inference_only and (scope.function is None or scope.function.owner is None)
                    or never_trains and scope.function is None
                )
            ) else restored_calls(model, scope)
            if program_calls:
                forward = sorted([*forward, *program_calls], key=lambda call: (call.lineno, call.col_offset))
            calls = _beside_weighted_models(model, facts, [
                call for call in forward
                if _may_build_a_graph(model, facts, call) and not _a_shape_check(model, call) and not on_tiny_images(model, call)
                and not never_runs(model, call)
            ])
            if not calls or (scope.function is not None and (
                scope.function in model.runs_without_grad or _forward_of_a_model(model, scope.function)
                or _only_handed_over(model, scope.function) or called_back_without_grad(model, scope.function)
                or scope.function in model.derived(backpropagated_functions)
                or runs_one_example(model, scope.function, calls)
            )):
                continue
            if scope.needs_gradients or (scope.function is not None and scope.function in model.training_functions):
                evaluation = [
                    *((statement, part, LOOP_IN_TRAINING) for statement, part in _evaluation_loops(model, scope, calls)),
                    *((statement, part, TAIL_IN_TRAINING) for statement, part in _evaluation_tails(model, scope, calls)),
                ]
                covered = {id(call) for _, part, _ in evaluation for call in part}
                evaluation.extend(
                    (statement, part, TAIL_OF_A_TRAINING_LOOP)
                    for statement, part in _training_loop_tails(model, scope, [call for call in calls if id(call) not in covered])
                )
                covered = {id(call) for _, part, _ in evaluation for call in part}
                evaluation.extend(
                    (statement, part, CUT_IN_TRAINING)
                    for statement, part in _cut_at_once(model, [call for call in calls if id(call) not in covered])
                )
                found.extend((scope, part, (statement, note)) for statement, part, note in evaluation)
            else:
                found.extend((scope, part, None) for part in _by_cell(model, calls, program and scope.function is None))
        return _without_weightless_passes(model, _cut_where_mode_unset(model, _sampled_in_training(model, found)))

    @classmethod
    def seeds(cls, model: SemanticModel) -> List[ast.AST]:
        """The candidate forward calls: every fact from elsewhere comes from the model."""
        notebook = NOTEBOOK_CELL in model.source
        return [call for _, calls, _ in cls.candidates(model, program=notebook) for call in calls]

    def visit_Module(self, node: cst.Module) -> None:
        self.forward: Dict[Tuple[int, int, int, int], int] = {}
        """Each candidate forward call's span -> the index of its candidate."""
        self.found: Dict[int, List[cst.Call]] = {}
        self.found_candidates: List[Candidate] = []
        self.default_mode: Set[Tuple[int, int, int, int]] = set()
        """Calls of models whose mode the code never sets (an inference-only program's)."""
        self.restored: Set[Tuple[int, int, int, int]] = set()
        """Those of them in a function that loads the model's weights and never trains (:func:`restored_calls`)."""
        model = self.context.model
        if model is None:
            return
        if is_test_module(self.context.path, model.tree) and not self.context.options.get("report-inference-in-tests"):
            return
        if model.runs_another_framework:
            return
        self.found_candidates = self.candidates(model, self.context.path.endswith(".ipynb"))
        if not self.context.options.get("report-inference-in-exports"):
            self.found_candidates = _beyond_the_export(model, self.found_candidates)
        self.found_candidates = [
            candidate for candidate in self.found_candidates
            if candidate[0].function is None or not called_only_without_grad(model, self.context.path, candidate[0].function)
        ]
        for index, (scope, calls, _) in enumerate(self.found_candidates):
            for call in calls:
                self.forward[model.span(call.func)] = index
            self.default_mode.update(model.span(call.func) for call in calls if call in scope.default_mode_calls)
            restored = restored_calls(model, scope)
            self.restored.update(model.span(call.func) for call in calls if call in restored)

    def visit_Call(self, node: cst.Call) -> None:
        if not self.forward:
            return
        span = self.span(node.func)
        index = self.forward.get(span) if span is not None else None
        if index is not None:
            self.found.setdefault(index, []).append(node)

    def leave_Module(self, original_node: cst.Module) -> None:
        model = self.context.model
        if model is None:
            return
        for key, calls in self.found.items():
            calls = [call for call in calls if not self._discarded(call)]
            if not calls:
                continue
            first = calls[0]
            scope, _, wrapped = self.found_candidates[key]
            if registers_hooks(model):
                fix: FixOutcome = NoFix(HOOKS_KEEP_OUTPUTS)
            elif _registers_tensor_hooks(model, self.context.path):
                fix = NoFix(TENSOR_HOOKS_NEED_GRAD)
            elif any(differentiated_elsewhere(model, node) for node in self._ast_calls(calls)):
                fix = NoFix(DIFFERENTIATED_ELSEWHERE)
            elif wrapped is not None and wrapped[1] in CUT_NOTES and not _runs_only_the_cut(
                model, wrapped[0], self.found_candidates[key][1]
            ):
                fix = NoFix(CUT_STATEMENT_RUNS_MORE)
            elif wrapped is not None:
                fix = self._statement_fix(first, model.span(wrapped[0])[:2], wrapped[1])
            else:
                fix = self._fix(scope, calls)
            for call in _one_per_line(calls, lambda node: self.get_metadata(PositionProvider, node).start.line):
                self.report(call, self._message(call, wrapped).format(model=_model(call)), fix)

    def _message(self, call: cst.Call, wrapped: Optional[Tuple[ast.stmt, str]]) -> str:
        """The message for one forward call: a sample taken in training, a pass of a model whose
        weights the function restores, one of an inference-only program's, or one in evaluation mode."""
        if wrapped is not None and wrapped[1] in (SAMPLED_IN_TRAINING, CUT_WHERE_MODE_UNSET):
            return self.sampled_message
        code_range = self.get_metadata(PositionProvider, call.func)
        span = (code_range.start.line, code_range.start.column, code_range.end.line, code_range.end.column)
        if span in self.restored:
            return self.restored_message
        return self.inference_program_message if span in self.default_mode else self.message

    def _ast_calls(self, calls: List[cst.Call]) -> Iterator[ast.Call]:
        """The semantic model's calls for these forward calls."""
        model = self.context.model
        for call in calls:
            span = self.span(call)
            found = model.call_at(span) if model and span else None
            if found is not None:
                yield found

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

    def _grad_off_call(self, inference_mode: bool = True) -> str:
        """``torch.no_grad()`` (or ``torch.inference_mode()`` where preferred and ``inference_mode``
        allows it), spelled as this file imports torch."""
        function = "inference_mode" if inference_mode and self.context.options.get("prefer-inference-mode") else "no_grad"
        return f"{self._torch_name() or 'torch'}.{function}()"

    def _torch_name(self) -> Optional[str]:
        for local, qualified in sorted(self.context.imports.bindings.items()):
            if qualified == {"torch"}:
                return local
        return None

    def _scope_node(self, call: cst.Call) -> Union[cst.Module, cst.FunctionDef]:
        """The function (or module) a forward call is in; lambdas and class bodies belong to the
        function around them."""
        node: Optional[cst.CSTNode] = call
        while node is not None and not isinstance(node, (cst.FunctionDef, cst.Module)):
            node = self.get_metadata(ParentNodeProvider, node, None)
        return node if node is not None else self.context.module

    def _fix(self, facts: ScopeFacts, calls: List[cst.Call]) -> FixOutcome:
        first = calls[0]
        import_edit = None if self._torch_name() else self.import_edit("torch")
        scope = self._scope_node(first)
        if isinstance(scope, cst.Module):
            return self._module_fix(scope, first, import_edit)
        function = scope
        if function.asynchronous is not None:
            return NoFix("a grad-mode decorator does not reach the body of an `async def` across its awaits")
        decorator = cst.Decorator(decorator=cst.parse_expression(self._grad_off_call()))
        decorated = function.with_changes(decorators=[*function.decorators, decorator])
        edits = [self.replacement_edit(function, decorated), import_edit]
        forward = set(map(id, calls))
        if GradientFlow(function, forward).escapes():
            return self.make_fix(Applicability.UNSAFE, edits, note=OUTPUTS_LEAVE)
        if _may_train(function, facts.set_modes, forward):
            return self.make_fix(Applicability.UNSAFE, edits, note=MAY_TRAIN)
        model = self.context.model
        if model is not None and facts.function is not None and hands_on(model, facts.function, facts.forward_calls):
            return self.make_fix(Applicability.UNSAFE, edits, note=HANDED_ON)
        return self.make_fix(Applicability.SAFE, edits)

    def _statement_fix(self, first: cst.Call, start: Tuple[int, int], note: str) -> FixOutcome:
        """Wrap the statement around the first forward call that starts at ``start`` (line and
        column: an evaluation loop, the evaluation after a function's training step, or a statement
        that cuts the output at once; ``note`` says why the fix is unsafe) in
        ``torch.no_grad()``, never ``inference_mode``: the code around it trains, and a tensor made
        in inference mode (a mask, an index) cannot be saved for backward."""
        statement: Optional[Union[cst.BaseCompoundStatement, cst.SimpleStatementLine]] = None
        node: Optional[cst.CSTNode] = first
        while node is not None and not isinstance(node, (cst.FunctionDef, cst.Module)):
            if isinstance(node, (cst.BaseCompoundStatement, cst.SimpleStatementLine)):
                code_range = self.get_metadata(PositionProvider, node)
                if (code_range.start.line, code_range.start.column) == start:
                    statement = node
            node = self.get_metadata(ParentNodeProvider, node, None)
        if statement is None:
            return NoFix("the evaluation code could not be found")
        if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) > 1:
            return NoFix("the line holds other statements after `;`, which a `with` block would take in too")
        if _suspends(statement):
            return NoFix("the code yields or awaits, and grad mode would stay off in whatever runs meanwhile")
        wrapped = cst.With(
            items=[cst.WithItem(item=cst.parse_expression(self._grad_off_call(inference_mode=False)))],
            body=cst.IndentedBlock(
                body=[statement.with_changes(leading_lines=[])], indent=wrapping_indent(self, statement, [statement]),
            ),
            leading_lines=statement.leading_lines,
        )
        import_edit = None if self._torch_name() else self.import_edit("torch")
        return self.make_fix(Applicability.UNSAFE, [self.replacement_edit(statement, wrapped), import_edit], note=note)

    def _module_fix(self, module: cst.Module, first: cst.Call, import_edit: Optional[Edit]) -> FixOutcome:
        """Wrap the module's statements from the first forward call to the last use of its outputs,
        stopping before a comment line that starts a new section (or a notebook's next cell), and
        before the expression a notebook cell ends with (Jupyter displays its value only outside a
        block); no fix where that expression is the forward call's own statement."""
        statement: cst.CSTNode = first
        while self.get_metadata(ParentNodeProvider, statement) is not module:
            statement = self.get_metadata(ParentNodeProvider, statement)
        body = list(module.body)
        start = [id(line) for line in body].index(id(statement))
        smalls: List[cst.CSTNode] = [small for line in body if isinstance(line, cst.SimpleStatementLine) for small in line.body]
        own: Sequence[cst.BaseSmallStatement] = statement.body if isinstance(statement, cst.SimpleStatementLine) else ()
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
            body=cst.IndentedBlock(
                body=[body[start].with_changes(leading_lines=[]), *body[start + 1 : end + 1]],
                indent=wrapping_indent(self, body[start], body[start : end + 1]),
            ),
            leading_lines=body[start].leading_lines,
        )
        new_module = module.with_changes(body=[*body[:start], wrapped, *body[end + 1 :]])
        return self.make_fix(Applicability.UNSAFE, [self.replacement_edit(module, new_module), import_edit], note=MODULE_WRAP)


def _without_weightless_passes(model: SemanticModel, found: List[Candidate]) -> List[Candidate]:
    """The candidates less the passes of networks without weights given only inputs without
    history (:func:`weightless_pass_on_historyless_inputs`), which build no graph at all."""
    kept: List[Candidate] = []
    for scope, calls, wrapped in found:
        calls = [call for call in calls if not weightless_pass_on_historyless_inputs(model, call)]
        if calls:
            kept.append((scope, calls, wrapped))
    return kept


def _beyond_the_export(model: SemanticModel, found: List[Candidate]) -> List[Candidate]:
    """The candidates less the forward calls of a scope that exports a model
    (:attr:`SemanticModel.exporting_scopes`: they check the export against an example input, or
    trace it), but those in a loop over data (a ``for`` loop over anything but ``range(...)``): a
    conversion script's passes over every image of a folder, made to build its example inputs,
    are inference over the data all the same."""
    kept: List[Candidate] = []
    for scope, calls, wrapped in found:
        if (scope.function.node if scope.function is not None else model.tree) in model.exporting_scopes:
            calls = [call for call in calls if _in_a_data_loop(model, call)]
        if calls:
            kept.append((scope, calls, wrapped))
    return kept


def _in_a_data_loop(model: SemanticModel, node: ast.AST) -> bool:
    """Whether ``node`` runs in a ``for`` loop of its scope over anything but ``range(...)``."""
    scope = model.scope_at(node).node
    for ancestor in _ancestors(model, node, scope):
        if isinstance(ancestor, (ast.For, ast.AsyncFor)) and not (
            isinstance(ancestor.iter, ast.Call) and ast_dotted_name(ancestor.iter.func) == "range"
        ):
            return True
    return False


def _only_handed_over(model: SemanticModel, function: Function) -> bool:
    """A function the module never calls but hands to a method of an object it made
    (``diffusion.p_sample_loop(model_fn, shape)``, where ``diffusion`` is what a factory returned):
    that object's code calls it back under its own grad mode (a sampler runs it without gradients).
    Also a function its enclosing function returns (:func:`_returned_by_its_factory`).
    Not a function handed to a builtin (``map``), to an import (``threading.Thread``,
    ``gr.Interface``), to a pool or executor (``mp.Pool(4).map``: :func:`_an_executor`) or to code
    of the module, which run it with gradients on."""
    if function.calls or function.owner is not None:
        return False
    reads = _reads_of(model, function)
    return bool(reads) and all(
        _handed_to_an_objects_method(model, use) or _returned_by_its_factory(model, function, use) for use in reads
    )


def _returned_by_its_factory(model: SemanticModel, function: Function, node: ast.expr, depth: int = 0) -> bool:
    """``return model_fn`` in the function that defines ``model_fn`` (score SDE's ``get_model_fn``):
    the factory's callers call it back, each under its own grad mode (a sampler without gradients,
    a likelihood under ``enable_grad`` taking ``torch.autograd.grad`` through it). Only where the
    module reads the factory's name nowhere but in calls, and binds each call's result to a name it
    only calls, from functions that are in turn returned by their own factories this way (score
    SDE's ``score_fn``, which ``get_score_fn`` returns): a result handed on, stored, aliased or
    returned may be called with gradients on."""
    parent = model.parent(node)
    factory = model.function_of_scope(function.scope.parent) if function.scope.parent is not None else None
    if not (
        isinstance(parent, ast.Return) and parent.value is node and factory is not None and factory.owner is None
        and model.scope_at(node) is function.scope.parent and depth <= MAX_FACTORY_DEPTH
    ):
        return False
    calls = {id(site.node) for site in factory.calls}
    return all(id(_called_by(model, read)) in calls for read in _reads_of(model, factory)) and all(
        _called_only_from_factories(model, site.node, depth) for site in factory.calls
    )


def _reads_of(model: SemanticModel, function: Function) -> List[ast.Name]:
    """The names that read a function of the module, by its binding."""
    scope = function.scope.parent
    uses = [] if scope is None else model.uses(scope.resolve(function.name))
    return [use for use in uses if isinstance(use.ctx, ast.Load)]


def _called_by(model: SemanticModel, name: ast.Name) -> Optional[ast.Call]:
    """The call ``name`` is the callee of (``name(...)``), None where it is read otherwise."""
    parent = model.parent(name)
    return parent if isinstance(parent, ast.Call) and parent.func is name else None


def _called_only_from_factories(model: SemanticModel, made: ast.Call, depth: int) -> bool:
    """Whether ``made`` is bound by a plain assignment to a name that the module only calls, each
    call in a function its own factory returns (:func:`_returned_by_its_factory`)."""
    statement = model.parent(made)
    if not (isinstance(statement, ast.Assign) and statement.value is made and len(statement.targets) == 1):
        return False
    place = model.place(statement.targets[0]) if isinstance(statement.targets[0], ast.Name) else None
    if place is None:
        return False
    for use in model.uses(place.binding):
        if use is statement.targets[0]:
            continue
        call = _called_by(model, use)
        caller = model.innermost_function(call) if call is not None else None
        if caller is None or caller.owner is not None:
            return False
        returns = _reads_of(model, caller)
        if not returns or not all(_returned_by_its_factory(model, caller, read, depth + 1) for read in returns):
            return False
    return True


def _handed_to_an_objects_method(model: SemanticModel, node: ast.expr) -> bool:
    parent = model.parent(node)
    if isinstance(parent, ast.keyword):
        parent = model.parent(parent)
    elif not (isinstance(parent, ast.Call) and any(argument is node for argument in parent.args)):
        return False
    return (
        isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute)
        and not model.resolved_names(parent.func) and model.callee(parent) is None
        and model.class_built(parent.func.value) is None and not _an_executor(model, parent.func.value)
    )


def _an_executor(model: SemanticModel, receiver: ast.expr) -> bool:
    """Whether ``receiver`` is made by a pool, an executor or a thread of
    :data:`~gpulint.semantic.torch_api.EXECUTOR_MODULES` (``mp.Pool(4)``, or a name some assignment
    or ``with`` binds to one), which runs what it is handed with gradients on."""
    made: List[ast.expr] = [receiver]
    place = model.place(receiver) if isinstance(receiver, ast.Name) else None
    if place is not None:
        for use in model.uses(place.binding):
            statement = model.parent(use)
            if isinstance(statement, ast.Assign) and use in statement.targets:
                made.append(statement.value)
            elif isinstance(statement, ast.withitem) and statement.optional_vars is use:
                made.append(statement.context_expr)
    return any(_made_by_an_executor_module(model, value, depth=0) for value in made)


def _made_by_an_executor_module(model: SemanticModel, value: ast.expr, depth: int) -> bool:
    """``mp.Pool(4)``, or a method call on what such a call made (``mp.get_context("spawn").Pool(2)``,
    ``ctx.Pool(2)`` with ``ctx = mp.get_context("spawn")``), a few steps deep."""
    if depth > 3 or not isinstance(value, ast.Call):
        return False
    if any(name.startswith(module + ".") for name in model.resolved_names(value.func) for module in EXECUTOR_MODULES):
        return True
    if not isinstance(value.func, ast.Attribute):
        return False
    receiver = value.func.value
    if isinstance(receiver, ast.Name):
        bound = [
            statement.value for use in model.uses(model.scope_at(receiver).resolve(receiver.id))
            for statement in [model.parent(use)] if isinstance(statement, ast.Assign) and use in statement.targets
        ]
        return any(_made_by_an_executor_module(model, made, depth + 1) for made in bound)
    return _made_by_an_executor_module(model, receiver, depth + 1)


PRINT = "print"
LENGTH = "len"
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
"""Loops a forward call in an expression may run in."""


def _a_shape_check(model: SemanticModel, call: ast.Call) -> bool:
    """A forward call, outside any loop, whose outputs are only printed or asserted on for their
    metadata: ``print(net(x).shape)``, or ``out, aux = net(x)`` and then only ``print(out.shape)``,
    ``print(aux.size(1))``, ``print(len(out))``, ``assert out[0].shape == ...`` (a model file's
    ``__main__`` self-test), in a module whose models keep nothing of a forward pass elsewhere (no
    hook, no model storing on its instance). Nothing of the result is used."""
    if model.in_loop(call) or keeps_activations(model) or any(isinstance(node, COMPREHENSIONS) for node in model.ancestors(call)):
        return False
    parent = model.parent(call)
    if isinstance(parent, ast.Assign) and parent.value is call and len(parent.targets) == 1:
        names = [parent.targets[0]] if isinstance(parent.targets[0], ast.Name) else (
            list(parent.targets[0].elts) if isinstance(parent.targets[0], ast.Tuple) else []
        )
        if not names or not all(isinstance(name, ast.Name) for name in names):
            return False
        bindings = [model.scope_at(name).resolve(name.id) for name in names if isinstance(name, ast.Name)]
        if any(binding.name in binding.scope.globals | binding.scope.nonlocals for binding in bindings):
            return False
        reads = [use for binding in bindings for use in model.uses(binding) if isinstance(use.ctx, ast.Load)]
        return bool(reads) and all(_shown_metadata(model, read) for read in reads)
    return _shown_metadata(model, call)


def _shown_metadata(model: SemanticModel, value: ast.expr) -> bool:
    """``value.shape``, ``value.size(1)``, ``len(value)``, of ``value`` or an item of it at a
    constant index (``value[0].shape``), printed or asserted on: a look at what a tensor is, not
    at its values."""
    read = _metadata_read(model, value)
    if read is None:
        return False
    node: ast.AST = read
    while not isinstance(node, ast.stmt):
        parent = model.parent(node)
        if parent is None:
            return False
        if isinstance(parent, ast.Call) and node is not parent.func and model.is_builtin(parent.func, (PRINT,)):
            statement = model.parent(parent)
            return isinstance(statement, ast.Expr) and statement.value is parent
        node = parent
    return isinstance(node, ast.Assert)


def _metadata_read(model: SemanticModel, value: ast.expr) -> Optional[ast.expr]:
    """The expression reading ``value``'s metadata, or None."""
    parent = model.parent(value)
    if isinstance(parent, ast.Subscript) and parent.value is value:
        index = parent.slice.operand if isinstance(parent.slice, ast.UnaryOp) and isinstance(parent.slice.op, ast.USub) else parent.slice
        constant = isinstance(index, ast.Constant) and isinstance(index.value, int)
        return _metadata_read(model, parent) if constant else None
    if isinstance(parent, ast.Attribute) and parent.value is value:
        if parent.attr in TENSOR_METADATA_ATTRIBUTES:
            return parent
        method_call = model.parent(parent)
        if parent.attr in TENSOR_SHAPE_METHODS and isinstance(method_call, ast.Call) and method_call.func is parent:
            return method_call
        return None
    if isinstance(parent, ast.Call) and parent.args == [value] and not parent.keywords and model.is_builtin(parent.func, (LENGTH,)):
        return parent
    return None


def _may_build_a_graph(model: SemanticModel, facts: EvaluationFacts, call: ast.Call) -> bool:
    """Whether a forward call may build a graph worth reporting: not of a frozen model, nor a method
    its class runs without gradients by its decorator (:func:`runs_without_grad_by_its_decorator`),
    nor a pass given only tensors the code makes up on the CPU (:func:`given_only_cpu_fabrications`:
    a smoke test or shape probe, which a model on the GPU would reject), nor of a model the scope
    still holds on the CPU (:func:`runs_on_the_cpu`: a tutorial's
    pass before its ``net.to(device)``), nor a library model's own inference method, which switches
    gradients off itself (:func:`runs_its_own_inference`: ``SentenceTransformer(...).encode(texts)``),
    nor a call the code runs with gradients on purpose, in the branch of an ``if`` whose other
    branch runs it under ``torch.no_grad()`` (:func:`has_a_grad_free_twin`: a fine-tuning branch)."""
    place = facts.model_place(call)
    if place in facts.frozen or runs_without_grad_by_its_decorator(model, call):
        return False
    if given_only_cpu_fabrications(model, call) or runs_on_the_cpu(model, call) or runs_its_own_inference(model, call):
        return False
    return not has_a_grad_free_twin(model, call)


def _training_calls(model: SemanticModel, function: Optional[Function]) -> List[ast.Call]:
    """The calls of ``function`` (None: the module-level code) that train: ``backward``, an
    optimizer ``step``, ``torch.autograd.grad``, or a call of a function of the module that trains
    (``update(loss)`` whose body runs the backward pass)."""
    return [
        site.node for site in model.call_sites
        if site.caller is function and (model.needs_gradients(site.node) or site.callee in model.training_functions)
    ]


def _evaluation_loops(model: SemanticModel, scope: ScopeFacts, calls: List[ast.Call]) -> List[Tuple[ast.stmt, List[ast.Call]]]:
    """In a scope that trains, the evaluation loops: around forward calls of a model in evaluation
    mode, the outermost loop that holds no call that trains (``backward``, an optimizer ``step``,
    ``autograd.grad``), where nothing in it may train (no call of a function of the module that
    trains, none handed one of the loop's models: ``train_one_epoch(model, loader)``, ``fgsm(model,
    x, y)``; no ``requires_grad_``, ``enable_grad`` or ``set_grad_enabled``), and where nothing it
    computes may reach a backward pass: it comes after every call that trains and no loop around it
    trains (a test loop after the training loop of a notebook or script), or what it computes stays
    in it (:func:`stays_inside`: a validation loop inside the training loop whose outputs the
    training step binds afresh)."""
    training = _training_calls(model, scope.function)
    training_loops = {id(node) for step in training for node in _ancestors(model, step, scope.node) if isinstance(node, LOOPS)}
    loops: Dict[int, Tuple[ast.stmt, List[ast.Call], bool]] = {}
    for call in calls:
        chosen: Optional[ast.stmt] = None
        nested = False
        for node in _ancestors(model, call, scope.node):
            if not isinstance(node, LOOPS):
                continue
            if id(node) in training_loops:
                nested = True
                break
            chosen = node
        if chosen is not None:
            loops.setdefault(id(chosen), (chosen, [], nested))[1].append(call)
    return [
        (loop, loop_calls) for loop, loop_calls, nested in loops.values()
        if not _may_train_inside(model, loop, loop_calls) and (
            (not nested and all(position(step) < position(loop) for step in training)) or stays_inside(model, loop)
        )
    ]


def _evaluation_tails(model: SemanticModel, scope: ScopeFacts, calls: List[ast.Call]) -> List[Tuple[ast.stmt, List[ast.Call]]]:
    """In a function that trains, the evaluation after its training step (``train(epoch)``: a
    backward pass and a step, then ``model.eval()`` and a validation forward pass): around forward
    calls outside any loop of the function, the statement of the function's body that holds them,
    where every call that trains in the function comes before it, nothing in it may train
    (:func:`_may_train_inside`), and nothing from it on can keep a value past the function
    (:func:`~gpulint.semantic.forward_values.keeps_nothing_from`). Then no backward pass can reach
    what it computes."""
    function = scope.function
    if function is None:
        return []
    body = function.node.body
    training = _training_calls(model, function)
    tails: Dict[int, Tuple[ast.stmt, List[ast.Call]]] = {}
    for call in calls:
        around = list(_ancestors(model, call, function.node))
        if any(isinstance(node, LOOPS) for node in around):
            continue
        statement = next((node for node in around if any(node is part for part in body)), None)
        if isinstance(statement, ast.stmt):
            tails.setdefault(id(statement), (statement, []))[1].append(call)
    return [
        (statement, tail_calls) for statement, tail_calls in tails.values()
        if all(position(step) < position(statement) for step in training)
        and not _may_train_inside(model, statement, tail_calls)
        and keeps_nothing_from(model, function, body[next(i for i, part in enumerate(body) if part is statement):], scope.forward_calls)
    ]


def _training_loop_tails(model: SemanticModel, scope: ScopeFacts, calls: List[ast.Call]) -> List[Tuple[ast.stmt, List[ast.Call]]]:
    """In a scope that trains, the evaluation at the end of each turn of a training loop (an epoch
    loop whose body runs the training steps, then ``generator.eval()`` and sample or validation
    forward passes): the statements of the loop's body after the last one that trains, each of
    those that holds forward calls, where nothing in the tail may train (:func:`_may_train_inside`)
    and nothing the tail computes that may carry history is seen after it — after the loop, or by
    the next turn's training (:func:`~gpulint.semantic.confined.stays_in_statements`) — in a module
    whose models keep no activations (a forward hook may hand them to a backward pass)."""
    if keeps_activations(model):
        return []
    training = _training_calls(model, scope.function)
    loops = {
        id(node): node for step in training for node in _ancestors(model, step, scope.node) if isinstance(node, LOOPS)
    }
    found: List[Tuple[ast.stmt, List[ast.Call]]] = []
    for loop in loops.values():
        body = loop.body
        last = max(
            (index for index, statement in enumerate(body) if any(step is node for step in training for node in ast.walk(statement))),
            default=None,
        )
        if last is None or last + 1 >= len(body):
            continue
        tail = body[last + 1:]
        inside = {id(node) for statement in tail for node in ast.walk(statement)}
        tail_calls = [call for call in calls if id(call) in inside]
        if not tail_calls or any(_may_train_inside(model, statement, tail_calls) for statement in tail) or not stays_in_statements(model, tail):
            continue
        for statement in tail:
            part = [call for call in tail_calls if any(call is node for node in ast.walk(statement))]
            if part:
                found.append((statement, part))
    return found


def _by_cell(model: SemanticModel, calls: List[ast.Call], notebook: bool) -> List[List[ast.Call]]:
    """The calls of a notebook's top-level code grouped by the cell they are in (each cell is read,
    run and fixed on its own); any other scope's calls as one group."""
    if not notebook:
        return [calls]
    starts = [number for number, line in enumerate(model.source.split("\n"), start=1) if line.startswith(NOTEBOOK_CELL)]
    cells: Dict[int, List[ast.Call]] = {}
    for call in calls:
        cells.setdefault(bisect.bisect_right(starts, call.lineno), []).append(call)
    return list(cells.values())


def _sampled_in_training(model: SemanticModel, found: List[Candidate]) -> List[Candidate]:
    """``found``, and in each scope that trains, the calls of a model in training mode (or whose
    mode the code never sets) bound to a name that every read cuts from the graph
    (:func:`_bound_then_only_cut`), where the scope also calls the same model for its training, an
    output it reads uncut (``fake = G(z)`` read by ``D(fake)``): a GAN's samples saved each epoch,
    ``fake_test = G(z_test)`` then ``save_image(fake_test.data, ...)``. A model called only once in
    the scope may pass on its training some other way (``model.loss.backward()``, a
    ``PackedSequence`` whose ``.data`` carries history). Not a criterion's call (a loss taken
    only as a number tells nothing of a forward pass), nor a call already found, nor in a statement
    that may train (:func:`_may_train_inside`), nor a small network's pass on tiny inputs
    (:func:`on_tiny_images`: a sample grid's latent noise), nor in a module whose models keep
    activations."""
    if "backward" not in model.source and "grad" not in model.source:
        return found
    facts, covered, criteria = model.derived(EvaluationFacts), _calls_in(found), model.derived(AutogradHistory).criteria
    sampled: List[Candidate] = []
    for scope in facts.scopes:
        if not scope.needs_gradients:
            continue
        trained = [
            call for place, call in scope.open_calls if place in scope.models or _model_name(call) in model.modules
        ] + scope.training_mode_calls
        for call in sorted(trained, key=lambda call: (call.lineno, call.col_offset)):
            if id(call) in covered or _model_name(call) in criteria or not _bound_then_only_cut(model, call):
                continue
            if not _also_trained_in(model, scope, call) or _read_into_computation(model, call, criteria):
                continue
            statement = model.parent(call)
            if isinstance(statement, ast.stmt) and _may_build_a_graph(model, facts, call) and not (
                _may_train_inside(model, statement, [call]) or on_tiny_images(model, call, outputs_cut=True)
            ):
                sampled.append((scope, [call], (statement, SAMPLED_IN_TRAINING)))
    return _added(model, found, sampled)


def _cut_where_mode_unset(model: SemanticModel, found: List[Candidate]) -> List[Candidate]:
    """``found``, and in a module that trains, in code that does not (module-level code, or a
    function outside classes that the module calls, that never trains, calls no function that
    trains and passes the rest of the rule's tests for a function), the statements around calls in
    a loop, with gradients on, of a model whose mode that code never sets, whose output every read
    cuts from the graph (:func:`_output_cut_at_once`): a training script's ``testing(loader, net)``,
    handed the model by the epoch loop, reading ``criterion(logits, y).item()`` and
    ``logits.data.max(1)``. Whatever the model's mode, no backward pass can reach what such a call
    computes. Not where the outermost loop around the call, or its statement, may train
    (:func:`_may_train_inside`), nor a criterion's call, nor a call already found, nor a small
    network's pass on tiny inputs, nor in a module whose models keep activations or where a
    method of a class needs gradients (a model whose ``forward`` takes ``torch.autograd.grad`` of
    its output, or steps an optimizer as it runs: test-time adaptation). The model is one by
    :func:`_a_model`."""
    if not model.trains or any(function.owner is not None for function in model.training_functions):
        return found
    facts, covered, criteria = model.derived(EvaluationFacts), _calls_in(found), model.derived(AutogradHistory).criteria
    cut: List[Candidate] = []
    for scope in facts.scopes:
        if scope.needs_gradients or not (scope.function is None or _tests_what_others_train(model, scope.function)):
            continue
        for place, call in scope.open_calls:
            if id(call) in covered or _model_name(call) in criteria or place in facts.losses or not model.in_loop(call):
                continue
            if not _a_model(model, facts, scope, place, call) or not _output_cut_at_once(model, call):
                continue
            statement = next(node for node in model.ancestors(call) if isinstance(node, ast.stmt))
            if _may_train_inside(model, _outermost_loop(model, call), [call]):
                continue
            if _may_build_a_graph(model, facts, call) and not (
                _a_shape_check(model, call) or on_tiny_images(model, call, outputs_cut=True)
            ):
                cut.append((scope, [call], (statement, CUT_WHERE_MODE_UNSET)))
    return _added(model, found, cut)


def _calls_in(found: List[Candidate]) -> Set[int]:
    """The forward calls (by ``id``) that the candidates found so far hold."""
    return {id(call) for _, calls, _ in found for call in calls}


def _added(model: SemanticModel, found: List[Candidate], more: List[Candidate]) -> List[Candidate]:
    """``found`` and ``more``, unless the module's models keep activations (a forward hook may hand
    them to a backward pass): then none of ``more``."""
    return found if more and keeps_activations(model) else found + more


def _a_model(model: SemanticModel, facts: EvaluationFacts, scope: ScopeFacts, place: Place, call: ast.Call) -> bool:
    """Whether the value a call calls is a model: a name the code (or the module's own code) binds to
    one, a parameter that every call of its function in the module gives one
    (:attr:`~gpulint.semantic.evaluation.EvaluationFacts.handed_models`: ``testing(loader, classifier)``
    for ``def testing(loader, net)``), or, as elsewhere in the rule, a name spelt like one the module
    shows to be a module (a model a factory returns in a tuple, a parameter of a function that other
    files call)."""
    return place in scope.models | facts.module_facts.models | facts.handed_models or _model_name(call) in model.modules


def _tests_what_others_train(model: SemanticModel, function: Function) -> bool:
    """A function outside classes that the module calls, that never trains and calls no function
    that trains, and that the rule does not leave alone for what it is (a model's ``forward``, a
    function always run without gradients, one only handed to other code or called back without
    gradients, one whose result a backward pass may start from)."""
    return (
        function.owner is None and bool(function.calls) and function not in model.training_functions
        and function not in model.runs_without_grad and not _only_handed_over(model, function)
        and not called_back_without_grad(model, function) and function not in model.derived(backpropagated_functions)
    )


def _read_into_computation(model: SemanticModel, call: ast.Call, criteria: Set[str]) -> bool:
    """Whether a read of the name ``call``'s output is bound to, that the output may reach, lies
    inside a call of a model or a criterion of the module, or of ``torch.nn.functional``: a cut
    there (``head(out[0].data)``) may be a packed sequence's ``.data``, which carries history into
    the loss."""
    kept = _kept_whole(model, call)
    statement = model.parent(kept)
    if not isinstance(statement, ast.Assign) or statement.value is not kept or not isinstance(statement.targets[0], ast.Name):
        return False
    for use in _reads_of_the_output(model, statement):
        for node in model.ancestors(use):
            if isinstance(node, ast.stmt):
                break
            if isinstance(node, ast.Call) and (
                _model_name(node) in model.modules or _model_name(node) in criteria
                or any(name.startswith(FUNCTIONAL_NAMESPACE) for name in model.resolved_names(node.func))
            ):
                return True
    return False


def _also_trained_in(model: SemanticModel, scope: ScopeFacts, call: ast.Call) -> bool:
    """Whether the scope calls the model of ``call`` again, in its own code, with an output that is
    not bound to a name every read of which cuts it, nor cut by the expression around it."""
    name = _model_name(call)
    owner = scope.function.node if scope.function is not None else model.tree
    for other in own_nodes(owner.body):
        if (
            isinstance(other, ast.Call) and other is not call and _model_name(other) == name
            and not _bound_then_only_cut(model, other) and _cut_of(model, other) is None
        ):
            return True
    return False


def _model_name(call: ast.Call) -> Optional[str]:
    """``model`` in ``model(x)`` and ``model.forward(x)``, as the semantic model spells it."""
    return ast_dotted_name(forward_model(call))


def _cut_at_once(model: SemanticModel, calls: List[ast.Call]) -> List[Tuple[ast.stmt, List[ast.Call]]]:
    """In a scope that trains, the statements around forward calls whose output the same expression
    cuts from the graph (``model(image).cpu().data.numpy()``, ``net(x).argmax(1).item()``:
    :func:`_output_cut_at_once`), inside a training loop or not, holding nothing that may train
    (:func:`_may_train_inside`), in a module whose models keep no activations (a forward hook may
    hand them to a backward pass). No backward pass can reach what such a call computes, yet with
    gradients on it keeps every activation until the expression ends."""
    if keeps_activations(model):
        return []
    statements: Dict[int, Tuple[ast.stmt, List[ast.Call]]] = {}
    for call in calls:
        statement = next((node for node in model.ancestors(call) if isinstance(node, ast.stmt)), None)
        if statement is not None and _output_cut_at_once(model, call):
            statements.setdefault(id(statement), (statement, []))[1].append(call)
    return [(statement, cut) for statement, cut in statements.values() if not _may_train_inside(model, statement, cut)]


def _output_cut_at_once(model: SemanticModel, call: ast.Call) -> bool:
    """Whether the expression around ``call`` cuts its output from the graph before anything can
    hold it (:func:`_cut_of`), or the output is bound to a name that every read cuts
    (:func:`_bound_then_only_cut`)."""
    return _cut_of(model, call) is not None or _bound_then_only_cut(model, call)


def _bound_then_only_cut(model: SemanticModel, call: ast.Call) -> bool:
    """``out = model(x)`` where every read of ``out`` that this value may reach
    (:func:`_reads_of_the_output`), one at least, cuts it from the graph at once (``out.data.max(1)``,
    ``out.argmax(1).item()``), whatever else the name is bound to: an attack's clean pass before the
    loop that takes gradients, a GAN's samples saved every hundred steps in a loop that binds
    ``fake = G(noise)`` again for training at the top of each iteration. Reads of what the output is
    rather than of its values (``len(out)``, ``out.shape[0]``: :func:`_reads_only_what_it_is`) keep nothing of
    it and may sit beside the cuts (a test loop counting ``total += len(outputs)``). The output may be
    bound moved or reshaped, history and all (``fake = G(noise).cpu()``: :func:`_kept_whole`)."""
    kept = _kept_whole(model, call)
    statement = model.parent(kept)
    if not (isinstance(statement, ast.Assign) and statement.value is kept and len(statement.targets) == 1):
        return False
    target = statement.targets[0]
    if not isinstance(target, ast.Name):
        return False
    binding = model.scope_at(target).resolve(target.id)
    if binding.name in binding.scope.parameters:
        return False
    reads = _reads_of_the_output(model, statement)
    cut = [read for read in reads if _cut_of(model, read) is not None]
    return bool(cut) and all(read in cut or _reads_only_what_it_is(model, read) for read in reads)


def _reads_only_what_it_is(model: SemanticModel, read: ast.Name) -> bool:
    """Whether ``read`` only looks at the output's shape, dtype or device (:func:`_metadata_read`),
    which a forward pass under ``torch.no_grad()`` leaves as it was: not ``out.requires_grad``, which
    it changes, nor a store into an attribute (``out.requires_grad = True``)."""
    metadata = _metadata_read(model, read)
    if metadata is None:
        return False
    return not (isinstance(metadata, ast.Attribute) and (
        metadata.attr in GRAD_MODE_ATTRIBUTES or not isinstance(metadata.ctx, ast.Load)
    ))


def _kept_whole(model: SemanticModel, call: ast.Call) -> ast.expr:
    """The end of the chain from ``call`` through indexing and methods that keep the output's
    history whole (``.cpu()``, ``.to(device)``, ``.squeeze()``, ``.softmax(-1)``), before any link
    that cuts it or takes something else in."""
    top: ast.expr = call
    for link, node in _links(model, call):
        if link != INDEXING and link not in LAYOUT_METHODS | DEVICE_KEEPING_TENSOR_METHODS | ELEMENTWISE_METHODS:
            break
        top = node
    return top


def _reads_of_the_output(model: SemanticModel, statement: ast.Assign) -> List[ast.Name]:
    """The reads of the name ``statement`` binds (one plain name) that its value may reach
    (:func:`~gpulint.semantic.reached_reads.reached_reads`: not those after the name is bound
    again, ``fake = G(z)`` at the top of the next iteration), or every read of the name where that
    is not decided."""
    target = statement.targets[0]
    assert isinstance(target, ast.Name)
    binding = model.scope_at(target).resolve(target.id)
    reached = reached_reads(model, statement, binding)
    return reached if reached is not None else [use for use in model.uses(binding) if isinstance(use.ctx, ast.Load)]


def _cut_of(model: SemanticModel, call: ast.expr) -> Optional[ast.expr]:
    """The expression that cuts ``call``'s output from the graph, reached through indexing and
    methods that make a tensor of the receiver alone (``.cpu()``, ``[0]``, ``.softmax(-1)``,
    ``.mean()``), and through a torch loss that takes it (:func:`_loss_taking`:
    ``criterion(out, y).item()``): ``.data``, or a call of a method whose result carries no history
    (``.detach()``, ``.item()``, ``.argmax()``). None where something else takes the output first."""
    top = call
    while True:
        for link, node in _links(model, top):
            if link == "data" or link in HISTORY_FREE_METHODS:
                return node
            if link != INDEXING and link not in LAYOUT_METHODS | DEVICE_KEEPING_TENSOR_METHODS | ELEMENTWISE_METHODS:
                return None
            top = node
        loss = _loss_taking(model, top)
        if loss is None:
            return None
        top = loss


def _loss_taking(model: SemanticModel, node: ast.expr) -> Optional[ast.Call]:
    """The call of a torch loss that takes ``node`` as an argument (``criterion(out, y)``, with
    ``criterion`` bound to a ``torch.nn`` loss module, or ``F.cross_entropy(out, y)``): it holds no
    weights and keeps nothing of its inputs, so a cut of its result cuts ``node``'s history too."""
    parent = model.parent(node)
    if isinstance(parent, ast.keyword):
        parent = model.parent(parent)
    if not isinstance(parent, ast.Call) or parent.func is node:
        return None
    if model.place(parent.func) in model.derived(EvaluationFacts).losses or model.resolved_names(parent.func) & LOSS_FUNCTIONS:
        return parent
    return None


def _chain_top(model: SemanticModel, node: ast.expr) -> ast.expr:
    """The end of the chain that starts at the cut ``node`` and goes on only through indexing,
    ``.data`` and methods of the receiver alone (``.numpy()``, ``.item()``, ``.sum()``, ``.eq(y)``):
    ``out.data[0].numpy()`` whole, but not ``.sub(other)``, whose result may carry ``other``'s history."""
    top = node
    for link, outer in _links(model, node):
        if link not in (INDEXING, "data") and link not in RECEIVER_ALONE_METHODS:
            break
        top = outer
    return top


INDEXING = "[]"
"""The link of :func:`_links` that indexes the value (``out[0]``)."""


def _links(model: SemanticModel, node: ast.expr) -> Iterator[Tuple[str, ast.expr]]:
    """The chain of indexing (:data:`INDEXING`), ``.data`` and method calls that starts at ``node``:
    each link's name with the expression it ends (``out[0].cpu()``: ``[]``, then ``cpu``)."""
    while True:
        parent = model.parent(node)
        if isinstance(parent, ast.Subscript) and parent.value is node:
            node = parent
            yield INDEXING, node
            continue
        if not (isinstance(parent, ast.Attribute) and parent.value is node):
            return
        if parent.attr == "data":
            node = parent
            yield "data", node
            continue
        method = model.parent(parent)
        if not (isinstance(method, ast.Call) and method.func is parent):
            return
        node = method
        yield parent.attr, node


def _runs_only_the_cut(model: SemanticModel, statement: ast.stmt, calls: List[ast.Call]) -> bool:
    """Whether ``statement`` binds plain names to, or just evaluates, an expression that cuts a
    forward call's output at once (:func:`_chain_top` of its cut), binds a name every read of
    which cuts it (:func:`_bound_then_only_cut`), or a builtin's call of such
    expressions and constants (``print(net(x).argmax(1).item())``): nothing in it carries history
    whatever grad mode computes it in, so ``torch.no_grad()`` around it changes no value. Not a
    compound statement, whose body may train, nor an operator or a call combining the cut value with
    another (``out - teacher(x).detach()``, a distillation loss), nor a store into an item or an
    attribute, nor ``+=``, which may change a tensor that training backpropagates through."""
    if isinstance(statement, ast.Assign) and all(isinstance(target, ast.Name) for target in statement.targets):
        value = statement.value
    elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value is not None:
        value = statement.value
    elif isinstance(statement, ast.Expr):
        value = statement.value
    else:
        return False
    tops = {id(_chain_top(model, cut)) for call in calls for cut in [_cut_of(model, call)] if cut is not None}
    if id(value) in tops or any(value is _kept_whole(model, call) and _bound_then_only_cut(model, call) for call in calls):
        return True
    return isinstance(value, ast.Call) and model.is_builtin(value.func, BUILTIN_NAMES) and all(
        id(argument) in tops or isinstance(argument, ast.Constant)
        for argument in [*value.args, *(keyword.value for keyword in value.keywords)]
    )


def _ancestors(model: SemanticModel, node: ast.AST, scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes around ``node`` up to ``scope``, innermost first."""
    return takewhile(lambda ancestor: ancestor is not scope, model.ancestors(node))


def _may_train_inside(model: SemanticModel, loop: ast.stmt, forward: List[ast.Call]) -> bool:
    """Whether something in ``loop`` may need gradients: a call of a function of the module that
    trains, a call handed a model the loop calls, or a switch of gradients on."""
    models = {_model_name(call) for call in forward}
    for node in ast.walk(loop):
        if not isinstance(node, ast.Call):
            continue
        site = model.site_of.get(id(node))
        if site is not None and site.callee in model.training_functions:
            return True
        if any(ast_dotted_name(argument) in models for argument in [*node.args, *(keyword.value for keyword in node.keywords)]):
            return True
        name = (ast_dotted_name(node.func) or "").rpartition(".")[2]
        if name in GRAD_SWITCHES and not _switched_off(node):
            return True
    return False


def _switched_off(switch: ast.Call) -> bool:
    """Whether a switch of gradients is given a literal ``False`` (``x.requires_grad_(False)``,
    ``torch.set_grad_enabled(False)``): it turns them off, never on."""
    values = [*switch.args[:1], *(k.value for k in switch.keywords if k.arg in ("requires_grad", "mode"))]
    return bool(values) and all(isinstance(v, ast.Constant) and v.value is False for v in values)


def _may_train(function: cst.FunctionDef, models: Set[str], forward: Set[int]) -> bool:
    """Whether the function may also train: it switches a model back to training mode, or hands a
    model whose mode it sets to another function (which a decorator would run without gradients)."""
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


def _suspends(loop: Union[cst.BaseCompoundStatement, cst.SimpleStatementLine]) -> bool:
    """An ``async for`` or ``async with``, or a statement that yields or awaits: a grad-off block
    around it would stay in force in the code that runs while it is suspended."""
    if isinstance(loop, (cst.For, cst.With)) and loop.asynchronous is not None:
        return True
    found: List[cst.CSTNode] = []

    class Suspensions(cst.CSTVisitor):
        def visit_Yield(self, node: cst.Yield) -> None:
            found.append(node)

        def visit_Await(self, node: cst.Await) -> None:
            found.append(node)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    loop.visit(Suspensions())
    return bool(found)


def _model(call: cst.Call) -> Optional[str]:
    """The model a forward call calls: ``model`` in ``model(x)``, ``model.forward(x)`` and ``model.inference(x)``."""
    func = call.func
    return dotted_name(func.value if isinstance(func, cst.Attribute) and func.attr.value in FORWARD_METHODS else func)


def _is_false(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "False"


def _starts_section(statement: cst.CSTNode) -> bool:
    return any(line.comment is not None for line in getattr(statement, "leading_lines", ()))


def _displayed(body: Sequence[cst.CSTNode], index: int) -> bool:
    """Whether ``body[index]`` is a bare expression that ends a notebook cell, whose value Jupyter shows."""
    statement = body[index]
    last_in_cell = index + 1 == len(body) or _starts_section(body[index + 1])
    return last_in_cell and isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[-1], cst.Expr)


def _registers_tensor_hooks(model: SemanticModel, path: str) -> bool:
    """Whether the file, or a project module it imports (:func:`project_modules`), calls
    ``<tensor>.register_hook(...)`` or ``.retain_grad()``
    (:data:`~gpulint.semantic.torch_api.GRAD_REQUIRING_TENSOR_METHODS`): a forward pass that does
    (an explanation method keeping attention gradients) cannot run with gradients off. Decided
    once per file."""
    return model.derived(_GradRequiringCalls).anywhere(path)


class _GradRequiringCalls:
    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self.found: Dict[str, bool] = {}

    def anywhere(self, path: str) -> bool:
        if path not in self.found:
            self.found[path] = _calls_grad_requiring_methods(self.model.calls()) or any(
                _calls_grad_requiring_methods(node for node in ast.walk(module) if isinstance(node, ast.Call))
                for module in project_modules(self.model, path)
            )
        return self.found[path]


def _calls_grad_requiring_methods(calls: Iterable[ast.Call]) -> bool:
    return any(isinstance(call.func, ast.Attribute) and call.func.attr in GRAD_REQUIRING_TENSOR_METHODS for call in calls)
