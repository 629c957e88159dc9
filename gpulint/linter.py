"""Lint one source text: prefilter, parse once, resolve metadata once, run the rules, apply noqa."""

from __future__ import annotations

from typing import List, Mapping, Optional, Sequence, Type

import libcst as cst
from libcst.metadata import MetadataWrapper

from gpulint.diagnostics import Diagnostic
from gpulint.import_table import ImportTable
from gpulint.noqa import filter_suppressed
from gpulint.rule import FileContext, Rule
from gpulint.source import quiet_compile


def check_syntax(source: str) -> None:
    """Raise ``libcst.ParserSyntaxError`` if ``source`` does not parse, without building a LibCST tree
    where Python's own (much faster) parser accepts it."""
    try:
        quiet_compile(source, "<gpulint>")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        cst.parse_module(source)


def lint_source(
    source: str,
    path: str,
    rules: Sequence[Type[Rule]],
    prefilter: bool = True,
    options: Optional[Mapping[str, object]] = None,
) -> List[Diagnostic]:
    """Diagnostics of ``rules`` on ``source``; raises ``libcst.ParserSyntaxError`` if it does not parse.

    Name and scope resolution is paid only where a rule can fire: rules whose tokens are absent are
    dropped before parsing, rules whose targets the file's imports cannot reach before metadata.
    ``prefilter=False`` runs every rule in full, the reference the prefilters are tested against.
    """
    candidates = [rule for rule in rules if not prefilter or rule.may_fire(source)]
    if not candidates:
        check_syntax(source)
        return []
    module = cst.parse_module(source)
    if prefilter and any(rule.targets for rule in candidates):
        imports = ImportTable.from_module(module)
        candidates = [r for r in candidates if not r.targets or imports.may_reach(r.targets, source)]
        if not candidates:
            return []
    context = FileContext(path=path, source=source, module=module, options=options or {})
    MetadataWrapper(module, unsafe_skip_copy=True).visit_batched([rule(context) for rule in candidates])
    diagnostics = filter_suppressed(source, context.diagnostics)
    return sorted(diagnostics, key=lambda d: (d.start.line, d.start.column, d.code))
