"""Lint one source text: prefilter, parse once, resolve metadata once, run the rules, apply noqa."""

from __future__ import annotations

import ast
from typing import List, Mapping, Optional, Sequence, Type

import libcst as cst
from libcst.metadata import MetadataWrapper

from gpulint.diagnostics import Diagnostic
from gpulint.noqa import filter_suppressed
from gpulint.rule import FileContext, Rule
from gpulint.source import quiet_compile
from gpulint.survey import Survey


def python_tree(source: str) -> Optional[ast.Module]:
    """Python's own (much faster) parse of ``source``, or None where it rejects it."""
    try:
        return quiet_compile(source, "<gpulint>")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def check_syntax(source: str) -> None:
    """Raise ``libcst.ParserSyntaxError`` if ``source`` does not parse, without building a LibCST tree
    where Python's own parser accepts it."""
    if python_tree(source) is None:
        cst.parse_module(source)


def lint_source(
    source: str,
    path: str,
    rules: Sequence[Type[Rule]],
    prefilter: bool = True,
    options: Optional[Mapping[str, object]] = None,
) -> List[Diagnostic]:
    """Diagnostics of ``rules`` on ``source``; raises ``libcst.ParserSyntaxError`` if it does not parse.

    LibCST is paid for only where a rule can fire: rules whose tokens are absent are dropped before
    parsing, rules that a survey of Python's own syntax tree rules out before the LibCST parse.
    Where Python's parser rejects the source, LibCST decides, and every remaining rule runs.
    ``prefilter=False`` runs every rule in full, the reference the prefilters are tested against.
    """
    candidates = [rule for rule in rules if not prefilter or rule.may_fire(source)]
    if not candidates:
        check_syntax(source)
        return []
    if prefilter:
        tree = python_tree(source)
        if tree is not None:
            survey = Survey(tree, source)
            candidates = [rule for rule in candidates if rule.may_fire_in(survey)]
            if not candidates:
                return []
    module = cst.parse_module(source)
    context = FileContext(path=path, source=source, module=module, options=options or {})
    MetadataWrapper(module, unsafe_skip_copy=True).visit_batched([rule(context) for rule in candidates])
    diagnostics = filter_suppressed(source, context.diagnostics)
    return sorted(diagnostics, key=lambda d: (d.start.line, d.start.column, d.code))
