"""The base class every rule derives from, and the per-file context rules report into."""

from __future__ import annotations

import ast
import enum
import re
from dataclasses import dataclass, field
from typing import ClassVar, Collection, FrozenSet, List, Mapping, Optional, Sequence, Tuple, Type

import libcst as cst
from libcst import BatchableCSTVisitor
from libcst.metadata import CodeRange, PositionProvider, ProviderT

from gpulint.analysis.names import NameResolver
from gpulint.analysis.scope import ScopeAnalyses
from gpulint.engine.diagnostics import Applicability, Diagnostic, Edit, Fix, FixOutcome, NoFix, Position
from gpulint.edits.import_placement import STDLIB, add_stdlib_import
from gpulint.semantic.import_table import ImportTable
from gpulint.engine.source import quiet_compile
from gpulint.semantic.model import SemanticModel
from gpulint.semantic.survey import Survey


class FixAvailability(enum.Enum):
    """Whether a rule's diagnostics come with a fix (as in ruff)."""

    ALWAYS = "always"
    SOMETIMES = "sometimes"
    NONE = "none"


@dataclass
class FileContext:
    """What one lint pass over one file shares between its rules."""

    path: str
    source: str
    module: cst.Module
    diagnostics: List[Diagnostic] = field(default_factory=list)
    options: Mapping[str, object] = field(default_factory=dict)
    """Rule settings from ``[tool.gpulint]`` (``prefer-inference-mode``...)."""
    import_table: Optional[ImportTable] = None
    """The file's import table, where the caller has it already (read from the whole file)."""
    model: Optional[SemanticModel] = None
    """The file's semantic model, built on the whole file (None where Python's parser rejects it)."""
    _round_trips: Optional[bool] = None
    _analyses: Optional[ScopeAnalyses] = None
    _names: Optional[NameResolver] = None

    @property
    def names(self) -> NameResolver:
        """Qualified names of the module's nodes (from the model where there is one)."""
        if self._names is None:
            self._names = NameResolver(self.module, self.model)
        return self._names

    @property
    def analyses(self) -> ScopeAnalyses:
        """The file's per-scope analyses, shared by the rules that read them."""
        if self._analyses is None:
            self._analyses = ScopeAnalyses(self.module, self.model, self.names)
        return self._analyses

    @property
    def imports(self) -> ImportTable:
        """The file's import table (empty where Python's own parser rejects the file)."""
        if self.import_table is None:
            try:
                self.import_table = ImportTable.from_tree(quiet_compile(self.source, self.path))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self.import_table = ImportTable({}, set())
        return self.import_table

    @property
    def round_trips(self) -> bool:
        """Whether LibCST reproduces the source exactly (it does not for some newline styles);
        edits are only computed where it does."""
        if self._round_trips is None:
            self._round_trips = self.module.code == self.source
        return self._round_trips


class Rule(BatchableCSTVisitor):
    """A lint rule: metadata for users and the registry, and a LibCST visitor that reports.

    Subclasses set the class attributes and implement ``visit_*`` methods that call
    :meth:`report`. All rules of a run share one parse and one metadata resolution per file.
    """

    code: ClassVar[str]
    name: ClassVar[str]
    message: ClassVar[str]
    fix_title: ClassVar[Optional[str]] = None
    fix_availability: ClassVar[FixAvailability] = FixAvailability.NONE
    tokens: ClassVar[FrozenSet[str]]
    """Substrings of which a file must contain at least one for the rule to be able to fire."""
    targets: ClassVar[FrozenSet[str]] = frozenset()
    """Qualified names of the functions whose calls the rule is about; if given, a file with no call
    that its imports can resolve to one of them is skipped."""

    decided_on_model: ClassVar[bool] = False
    """Whether the rule reports from the semantic model alone (:meth:`diagnose`), with fixes built
    from LibCST parses of just the code they change, so the file itself needs no LibCST parse."""

    METADATA_DEPENDENCIES: ClassVar[Collection[ProviderT]] = (PositionProvider,)

    def __init__(self, context: FileContext) -> None:
        super().__init__()
        self.context = context

    @classmethod
    def may_fire(cls, source: str) -> bool:
        """The cheap text prefilter: False means the rule cannot fire on ``source``."""
        return any(token in source for token in cls.tokens)

    @classmethod
    def candidate_calls(cls, survey: Survey) -> List[ast.Call]:
        """The calls that the file's imports may resolve to one of the rule's ``targets``."""
        return [call for call in survey.calls() if survey.qualified_names(call.func) & cls.targets]

    @classmethod
    def seeds(cls, model: SemanticModel) -> Optional[Sequence[ast.AST]]:
        """The nodes where the rule may report, decided on the semantic model before LibCST parses
        the file: none means it cannot fire there, None that it may fire anywhere. The engine reads
        the :func:`~gpulint.engine.reach.closure` of them and blanks the rest; every fact a rule reads
        across functions comes from the model, so the findings stay the same.
        By default: the candidate calls (None for a rule without targets)."""
        return cls.candidate_calls(model) if cls.targets else None

    @classmethod
    def diagnose(cls, model: SemanticModel, path: str, options: Mapping[str, object]) -> List[Diagnostic]:
        """The findings of a rule :attr:`decided_on_model`, on the module of ``model`` read from ``path``."""
        raise NotImplementedError(f"{cls.__name__} is a LibCST visitor")

    @classmethod
    def diagnostic(
        cls,
        path: str,
        span: Tuple[int, int, int, int],
        message: Optional[str] = None,
        fix: Optional[FixOutcome] = None,
    ) -> Diagnostic:
        """A finding of this rule at ``span`` (lines from 1, columns from 0); ``fix`` is its fix, or
        why there is none (every rule with fixes says why)."""
        note = fix.reason if isinstance(fix, NoFix) else fix.note if fix is not None else None
        line, column, end_line, end_column = span
        return Diagnostic(
            path=path,
            start=Position(line, column + 1),
            end=Position(end_line, end_column + 1),
            code=cls.code,
            name=cls.name,
            message=message or cls.message,
            fix=fix if isinstance(fix, Fix) else None,
            fix_note=note,
        )

    def qualified_names(self, node: cst.CSTNode) -> FrozenSet[str]:
        """The qualified names of a name or attribute chain of the module (``torch.cuda.empty_cache``)."""
        return self.context.names.of(self, node)

    def span(self, node: cst.CSTNode) -> Optional[Tuple[int, int, int, int]]:
        """The node's span as the semantic model gives it (:meth:`~gpulint.semantic.model.SemanticModel.span`:
        lines and columns of start and end); None where the node has no position."""
        code_range: Optional[CodeRange] = self.get_metadata(PositionProvider, node, None)
        if code_range is None:
            return None
        return code_range.start.line, code_range.start.column, code_range.end.line, code_range.end.column

    def report(self, node: cst.CSTNode, message: Optional[str] = None, fix: Optional[FixOutcome] = None) -> None:
        """Add a finding; ``fix`` is its fix, or why there is none (every rule with fixes says why)."""
        code_range: CodeRange = self.get_metadata(PositionProvider, node)
        span = (code_range.start.line, code_range.start.column, code_range.end.line, code_range.end.column)
        self.context.diagnostics.append(self.diagnostic(self.context.path, span, message, fix))

    def replacement_edit(self, old: cst.CSTNode, new: cst.CSTNode) -> Optional[Edit]:
        """The text edit that replaces ``old`` by ``new`` in this file."""
        if not self.context.round_trips:
            return None
        replaced = self.context.module.deep_replace(old, new)
        assert isinstance(replaced, cst.Module)
        return Edit.between(self.context.source, replaced.code)

    def import_edit(self, module: str, obj: Optional[str] = None) -> Optional[Edit]:
        """The text edit that adds ``import module`` (or ``from module import obj``) if it is missing;
        a standard-library module goes where an import sorter would put it."""
        if not self.context.round_trips:
            return None
        if obj is None and module in STDLIB:
            placed = add_stdlib_import(self.context.module, module)
            if placed is not None:
                return Edit.between(self.context.source, placed.code)
        from libcst.codemod import CodemodContext  # imported here: it costs more than a warm run
        from libcst.codemod.visitors import AddImportsVisitor, ImportItem

        visitor = AddImportsVisitor(CodemodContext(), [ImportItem(module, obj)])
        return Edit.between(self.context.source, visitor.transform_module(self.context.module).code)

    @classmethod
    def make_fix(
        cls,
        applicability: Applicability,
        edits: Sequence[Optional[Edit]],
        isolation: Optional[str] = None,
        note: Optional[str] = None,
    ) -> FixOutcome:
        """The rule's fix from these edits; ``note`` says why it is unsafe, if it is."""
        present = tuple(edit for edit in edits if edit is not None)
        if cls.fix_title is None:
            return NoFix("this rule has no automatic fix")
        if not present:
            return NoFix(NO_ROUND_TRIP)
        return Fix(cls.fix_title, applicability, present, isolation, note)


NO_ROUND_TRIP = "no fix: LibCST does not reproduce this file exactly, so no edit is made"

_CODE = re.compile(r"[A-Z]+[0-9]{3}")
_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def check_rule_metadata(rule: Type[Rule]) -> List[str]:
    """Problems with a rule class's metadata, as sentences (empty when it is well formed)."""
    problems = []
    if not _CODE.fullmatch(getattr(rule, "code", "")):
        problems.append(f"{rule.__name__}: code must look like GPU001")
    if not _NAME.fullmatch(getattr(rule, "name", "")):
        problems.append(f"{rule.__name__}: name must be kebab-case")
    if not getattr(rule, "message", ""):
        problems.append(f"{rule.__name__}: message is empty")
    if not getattr(rule, "tokens", None):
        problems.append(f"{rule.__name__}: tokens must name at least one substring")
    if (rule.fix_availability is FixAvailability.NONE) != (rule.fix_title is None):
        problems.append(f"{rule.__name__}: fix_title must be set exactly when a fix is available")
    if not rule.__doc__:
        problems.append(f"{rule.__name__}: missing docstring")
    return problems
