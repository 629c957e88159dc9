"""A statement-level control-flow graph of one scope's body.

Each step is a small statement or the header of a compound statement (an ``if`` test, a ``for``
target and iterable, an ``except`` clause...), with the local names it reads, binds and deletes.
Nested function and class bodies are their own scopes: only their definition is a step here.
Exceptions are modelled conservatively: every step inside a ``try`` may jump to its handlers and
``finally``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Union

import libcst as cst
from libcst import MetadataDependent
from libcst.metadata import (
    ComprehensionScope,
    ExpressionContext,
    ExpressionContextProvider,
    ScopeProvider,
)

from gpulint.analysis.names import QualifiedNames

METADATA_DEPENDENCIES = (ExpressionContextProvider, ScopeProvider)

NON_SUPPRESSING_CONTEXTS = frozenset({
    "open", "builtins.open", "io.open", "torch.no_grad", "torch.enable_grad", "torch.inference_mode",
    "torch.set_grad_enabled", "torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast",
    "torch.cpu.amp.autocast", "torch.cuda.device", "torch.cuda.stream", "torch.device",
    "torch.autograd.profiler.profile", "torch.autograd.profiler.record_function", "torch.profiler.profile",
    "torch.profiler.record_function", "torch.random.fork_rng", "torch.backends.cuda.sdp_kernel",
    "torch.nn.attention.sdpa_kernel", "torch.autograd.detect_anomaly", "torch.autograd.set_detect_anomaly",
    "contextlib.nullcontext", "threading.Lock", "tempfile.TemporaryDirectory", "warnings.catch_warnings",
    "tqdm.tqdm", "tqdm.trange", "tqdm.auto.tqdm", "tqdm.auto.trange", "tqdm.notebook.tqdm",
    "tqdm.notebook.trange", "tqdm.std.tqdm", "tqdm.std.trange",
})
"""Context managers known never to swallow exceptions (each one's ``__exit__`` returns nothing
true): a progress bar around a training loop (``with tqdm(loader) as bar:``) no more hides an
exception than ``open`` does. Checked against the installed libraries by the tests."""

Body = Union[cst.BaseSuite, cst.Module]


@dataclass(eq=False)
class Step:
    """One node of the graph."""

    node: Optional[cst.CSTNode] = field(repr=False)
    reads: Set[str] = field(default_factory=set)
    binds: Set[str] = field(default_factory=set)
    deletes: Set[str] = field(default_factory=set)
    successors: List["Step"] = field(default_factory=list, repr=False)
    predecessors: List["Step"] = field(default_factory=list, repr=False)

    def link(self, successor: "Step") -> None:
        if successor not in self.successors:
            self.successors.append(successor)
            successor.predecessors.append(self)


def statements_of(body: Body) -> Sequence[cst.CSTNode]:
    """The statements of a block; for a one-line suite (``if x: a; b``), its small statements."""
    if isinstance(body, cst.SimpleStatementSuite):
        return body.body
    return body.body


class _NameCollector(cst.CSTVisitor):
    """Collects the names one step reads, binds and deletes, without entering nested scopes' bodies."""

    def __init__(self, owner: MetadataDependent, step: Step) -> None:
        super().__init__()
        self.owner = owner
        self.step = step

    def visit_Name(self, node: cst.Name) -> bool:
        if self._comprehension_local(node):
            return False
        context = self.owner.get_metadata(ExpressionContextProvider, node, None)
        if context is ExpressionContext.STORE:
            self.step.binds.add(node.value)
        elif context is ExpressionContext.DEL:
            self.step.deletes.add(node.value)
        elif context is ExpressionContext.LOAD:
            self.step.reads.add(node.value)
        return False

    def _comprehension_local(self, node: cst.Name) -> bool:
        scope = self.owner.get_metadata(ScopeProvider, node, None)
        if not isinstance(scope, ComprehensionScope):
            return False
        return any(assignment.scope is scope for assignment in scope.assignments[node.value])

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_NamedExpr(self, node: cst.NamedExpr) -> bool:
        """``(x := v)`` binds ``x`` in the enclosing function, even inside a comprehension."""
        if isinstance(node.target, cst.Name):
            self.step.binds.add(node.target.value)
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_AnnAssign(self, node: cst.AnnAssign) -> bool:
        """A bare annotation (``x: int``) binds nothing."""
        node.annotation.visit(self)
        if node.value is not None:
            node.target.visit(self)
            node.value.visit(self)
        return False

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name):
            self.step.reads.add(node.target.value)

    def visit_Import(self, node: cst.Import) -> bool:
        for alias in node.names:
            bound: cst.BaseExpression = alias.asname.name if alias.asname else alias.name
            while isinstance(bound, cst.Attribute):
                bound = bound.value
            if isinstance(bound, cst.Name):
                self.step.binds.add(bound.value)
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        if not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                bound = alias.asname.name if alias.asname else alias.name
                if isinstance(bound, cst.Name):
                    self.step.binds.add(bound.value)
        return False

    def visit_Global(self, node: cst.Global) -> bool:
        return False

    def visit_Nonlocal(self, node: cst.Nonlocal) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        for param in [*node.params.params, *node.params.kwonly_params, *node.params.posonly_params]:
            if param.default is not None:
                param.default.visit(self)
        return False


def _header_parts(node: cst.CSTNode) -> List[cst.CSTNode]:
    """The parts of a compound statement evaluated in the enclosing scope, outside its bodies."""
    if isinstance(node, (cst.If, cst.While)):
        return [node.test]
    if isinstance(node, cst.For):
        return [node.target, node.iter]
    if isinstance(node, cst.With):
        return list(node.items)
    if isinstance(node, cst.ExceptHandler):
        return [part for part in (node.type, node.name) if part is not None]
    if isinstance(node, cst.Match):
        return [node.subject]
    if isinstance(node, cst.MatchCase):
        return [part for part in (node.pattern, node.guard) if part is not None]
    if isinstance(node, cst.FunctionDef):
        parts: List[cst.CSTNode] = [d.decorator for d in node.decorators]
        params = node.params
        for param in [*params.posonly_params, *params.params, *params.kwonly_params]:
            parts.extend(p for p in (param.default, param.annotation) if p is not None)
        if node.returns is not None:
            parts.append(node.returns)
        return parts
    if isinstance(node, cst.ClassDef):
        return [*(d.decorator for d in node.decorators), *node.bases, *node.keywords]
    return []


class ControlFlowGraph:
    """Steps of one scope's body, linked by the order they may run in."""

    def __init__(
        self, owner: MetadataDependent, body: Body, names: QualifiedNames, parameters: Sequence[str] = (),
    ) -> None:
        self.owner = owner
        self.names = names
        self.entry = Step(None, binds=set(parameters))
        self.exit = Step(None)
        self.steps: List[Step] = [self.entry]
        self.step_of: Dict[cst.CSTNode, Step] = {}
        self.exits_of: Dict[cst.CSTNode, List[Step]] = {}
        """Each statement -> the steps through which control leaves it normally."""
        self.steps_in: Dict[cst.CSTNode, Set[Step]] = {}
        """Each statement -> the steps it is made of."""
        self._loops: List[tuple] = []
        self._handlers: List[List[Step]] = []
        ends = self._block(statements_of(body), [self.entry])
        for end in ends:
            end.link(self.exit)

    def _step(self, node: cst.CSTNode, parts: Sequence[cst.CSTNode], predecessors: Sequence[Step]) -> Step:
        step = Step(node)
        collector = _NameCollector(self.owner, step)
        for part in parts:
            part.visit(collector)
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            step.binds.add(node.name.value)
        for predecessor in predecessors:
            predecessor.link(step)
        for handlers in self._handlers:
            for handler in handlers:
                step.link(handler)
        self.steps.append(step)
        self.step_of[node] = step
        return step

    def _block(self, statements: Sequence[cst.CSTNode], predecessors: List[Step]) -> List[Step]:
        for statement in statements:
            first = len(self.steps)
            predecessors = self._statement(statement, predecessors)
            self.exits_of[statement] = predecessors
            self.steps_in[statement] = set(self.steps[first:])
        return predecessors

    def _statement(self, node: cst.CSTNode, predecessors: List[Step]) -> List[Step]:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                predecessors = self._statement(small, predecessors)
            return predecessors
        if isinstance(node, cst.BaseSmallStatement):
            return self._small(node, predecessors)
        if isinstance(node, cst.If):
            return self._if(node, predecessors)
        if isinstance(node, (cst.For, cst.While)):
            return self._loop(node, predecessors)
        if isinstance(node, (cst.Try, cst.TryStar)):
            return self._try(node, predecessors)
        if isinstance(node, cst.Match):
            header = self._step(node, _header_parts(node), predecessors)
            ends = [header]
            for case in node.cases:
                case_header = self._step(case, _header_parts(case), [header])
                ends.extend(self._block(statements_of(case.body), [case_header]))
            return ends
        if isinstance(node, cst.With):
            header = self._step(node, _header_parts(node), predecessors)
            first = len(self.steps)
            ends = self._block(statements_of(node.body), [header])
            if self._may_suppress(node):
                ends = ends + [header] + [step for step in self.steps[first:] if step not in ends]
            return ends
        return [self._step(node, _header_parts(node), predecessors)]

    def _may_suppress(self, node: cst.With) -> bool:
        """Whether a context manager might swallow an exception, so that control can leave the
        ``with`` block from any point in it. Only well-known ones are trusted not to."""
        for item in node.items:
            call = item.item.func if isinstance(item.item, cst.Call) else item.item
            names = self.names(call)
            if not names or not names <= NON_SUPPRESSING_CONTEXTS:
                return True
        return False

    def _small(self, node: cst.BaseSmallStatement, predecessors: List[Step]) -> List[Step]:
        step = self._step(node, [node], predecessors)
        if isinstance(node, (cst.Return, cst.Raise)):
            step.link(self.exit)
            return []
        if isinstance(node, cst.Break) and self._loops:
            self._loops[-1][1].append(step)
            return []
        if isinstance(node, cst.Continue) and self._loops:
            step.link(self._loops[-1][0])
            return []
        return [step]

    def _if(self, node: cst.If, predecessors: List[Step]) -> List[Step]:
        header = self._step(node, _header_parts(node), predecessors)
        ends = self._block(statements_of(node.body), [header])
        if isinstance(node.orelse, cst.If):
            ends = ends + self._if(node.orelse, [header])
        elif isinstance(node.orelse, cst.Else):
            ends = ends + self._block(statements_of(node.orelse.body), [header])
        else:
            ends = ends + [header]
        return ends

    def _loop(self, node: Union[cst.For, cst.While], predecessors: List[Step]) -> List[Step]:
        """The header is where the loop is left; a ``for`` binds its target only on entering the body."""
        if isinstance(node, cst.For):
            header = self._step(node, [node.iter], predecessors)
            entry = self._step(node.target, [node.target], [header])
        else:
            header = entry = self._step(node, _header_parts(node), predecessors)
        breaks: List[Step] = []
        self._loops.append((header, breaks))
        for end in self._block(statements_of(node.body), [entry]):
            end.link(header)
        self._loops.pop()
        ends = [header]
        if node.orelse is not None:
            ends = self._block(statements_of(node.orelse.body), [header])
        return ends + breaks

    def _try(self, node: Union[cst.Try, cst.TryStar], predecessors: List[Step]) -> List[Step]:
        handlers: Sequence[Union[cst.ExceptHandler, cst.ExceptStarHandler]] = node.handlers
        handler_steps = [Step(handler) for handler in handlers]
        finally_entry = Step(node.finalbody) if node.finalbody is not None else None
        targets = handler_steps + ([finally_entry] if finally_entry else [])
        for predecessor in predecessors:
            for target in targets:
                predecessor.link(target)
        self._handlers.append(targets)
        ends = self._block(statements_of(node.body), predecessors)
        self._handlers.pop()
        if finally_entry is not None:
            self._handlers.append([finally_entry])
        if node.orelse is not None:
            ends = self._block(statements_of(node.orelse.body), ends)
        for handler, step in zip(handlers, handler_steps):
            collector = _NameCollector(self.owner, step)
            for part in _header_parts(handler):
                part.visit(collector)
            self.steps.append(step)
            self.step_of[handler] = step
            ends = ends + self._block(statements_of(handler.body), [step])
        if finally_entry is None or node.finalbody is None:
            return ends
        self._handlers.pop()
        for end in ends:
            end.link(finally_entry)
        self.steps.append(finally_entry)
        finally_ends = self._block(statements_of(node.finalbody.body), [finally_entry])
        for end in finally_ends:
            end.link(self.exit)
        return finally_ends
