"""Lint one source text: prefilter, build the semantic model, run the rules decided on it, blank
what no other rule reads, parse once with LibCST, resolve metadata once, run the visitor rules,
apply noqa."""

from __future__ import annotations

import ast
import functools
import operator
from typing import List, Mapping, Optional, Sequence, Type

import libcst as cst
from libcst.metadata import MetadataWrapper

from gpulint.engine.blanking import blank_bodies
from gpulint.engine.diagnostics import Diagnostic
from gpulint.engine.noqa import filter_suppressed
from gpulint.engine.reach import Reach, closure
from gpulint.engine.rule import FileContext, Rule
from gpulint.engine.reparse import Parse, parse as parse_whole
from gpulint.semantic.model import SemanticModel


def check_syntax(source: str, parse: Parse = parse_whole) -> None:
    """Raise ``libcst.ParserSyntaxError`` if ``source`` does not parse, without building a LibCST tree
    where Python's own parser accepts it."""
    if parse(source) is None:
        cst.parse_module(source)


def lint_source(
    source: str,
    path: str,
    rules: Sequence[Type[Rule]],
    prefilter: bool = True,
    options: Optional[Mapping[str, object]] = None,
    parse: Parse = parse_whole,
) -> List[Diagnostic]:
    """Diagnostics of ``rules`` on ``source``; raises ``libcst.ParserSyntaxError`` if it does not parse.
    ``parse`` gives Python's tree of ``source`` (an editor's :class:`~gpulint.engine.reparse.Reparser`
    reparses only what changed since the previous version).

    LibCST is paid for only where a visitor rule can fire: rules whose tokens are absent are dropped
    before parsing, rules that the semantic model rules out before the LibCST parse, rules decided
    on the model report from it (their fixes parse only the code they change), and the bodies of
    the functions that no remaining rule reaches are blanked (see :mod:`gpulint.engine.reach`). Where Python's parser rejects the source, LibCST decides, and every
    remaining rule runs on all of it. ``prefilter=False`` runs every rule on all of the source,
    the reference the prefilters are tested against.
    """
    candidates = [rule for rule in rules if not prefilter or rule.may_fire(source)]
    if not candidates:
        check_syntax(source, parse)
        return []
    tree = parse(source)
    visitors = [rule for rule in candidates if not rule.decided_on_model]
    if tree is None:
        return _lint(source, source, path, visitors, options, None) if visitors else _checked(source)
    model = SemanticModel(tree, source, path)
    if not prefilter:
        found = _lint(source, source, path, visitors, options, model) if visitors else []
        return _sorted(found + _diagnose(model, path, candidates, options))
    reaches = {rule: closure(model, rule.seeds(model)) for rule in candidates}
    candidates = [rule for rule in candidates if reaches[rule]]
    if not candidates:
        return []
    decided = _diagnose(model, path, candidates, options)
    visitors = [rule for rule in candidates if not rule.decided_on_model]
    if not visitors:
        return _sorted(decided)
    reach = functools.reduce(operator.or_, (reaches[rule] for rule in visitors))
    blanked = blank_bodies(source, _unreached_functions(model, reach, source))
    if blanked.spans:
        try:
            diagnostics = _lint(blanked.text, source, path, visitors, options, model)
        except cst.ParserSyntaxError:
            diagnostics = None
        if diagnostics is not None and not any(
            blanked.touches(edit.start, edit.end) for d in diagnostics if d.fix for edit in d.fix.edits
        ):
            return _sorted(diagnostics + decided)
    return _sorted(_lint(source, source, path, visitors, options, model) + decided)


def _checked(source: str) -> List[Diagnostic]:
    """No findings, once LibCST has checked that ``source`` parses."""
    cst.parse_module(source)
    return []


def _diagnose(
    model: SemanticModel, path: str, rules: Sequence[Type[Rule]], options: Optional[Mapping[str, object]],
) -> List[Diagnostic]:
    """The findings of the rules decided on the model (``noqa`` applied)."""
    found = [d for rule in rules if rule.decided_on_model for d in rule.diagnose(model, path, options or {})]
    return filter_suppressed(model.source, found) if found else []


def _sorted(diagnostics: List[Diagnostic]) -> List[Diagnostic]:
    return sorted(diagnostics, key=lambda d: (d.start.line, d.start.column, d.code))


def _unreached_functions(survey: SemanticModel, reach: Reach, source: str) -> List[ast.AST]:
    """The outermost functions whose bodies no rule reads. None where a function declares a name
    ``global`` (its body binds names every function may read), nor where ``\\r`` may end a line
    (LibCST and Python's parser may not count lines the same)."""
    if reach.whole_module or "\r" in source or survey.nodes(ast.Global):
        return []
    return [function for function in survey.functions if function not in reach.functions]


def _lint(
    text: str,
    source: str,
    path: str,
    rules: Sequence[Type[Rule]],
    options: Optional[Mapping[str, object]],
    model: Optional[SemanticModel],
) -> List[Diagnostic]:
    """Run ``rules`` on ``text`` (``source`` or a blanking of it); ``noqa`` comments are read in ``source``."""
    module = cst.parse_module(text)
    context = FileContext(
        path=path, source=text, module=module, options=options or {},
        import_table=model.imports if model is not None else None, model=model,
    )
    MetadataWrapper(module, unsafe_skip_copy=True).visit_batched([rule(context) for rule in rules])
    return _sorted(filter_suppressed(source, context.diagnostics))
