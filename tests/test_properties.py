"""Property tests: checking never raises, and fixing always yields code that parses, is idempotent
and leaves no finding its fixes were meant to remove. ``GPULINT_LONG=1`` runs many more examples."""

from __future__ import annotations

import os
from typing import List

import hypothesmith
import libcst as cst
from hypothesis import HealthCheck, given, settings, strategies as st

from gpulint.engine.diagnostics import Diagnostic
from gpulint.engine.fixer import applicabilities, fix_text
from gpulint.engine.linter import lint_source
from gpulint.rules import ALL_CODES, ALL_RULES
from gpulint.engine.runner import Job, Mode, process_text
from tests.helpers import RULE_FIXTURE_FILES

EXAMPLES = 2000 if os.environ.get("GPULINT_LONG") else 60
PROFILE = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
FIXTURE_SOURCES = sorted(path.read_text(encoding="utf-8") for path in RULE_FIXTURE_FILES)
SPLICED_STATEMENTS = [
    "del model",
    "model = None",
    "return None",
    "continue",
    "break",
    "global model",
    "torch.cuda.empty_cache()",
    "out = model(x)",
    "loss.backward()",
    "total += loss",
    "model.eval()",
    "model.train()",
    "state = torch.load(path)",
    "with torch.no_grad():\n    out = model(x)",
    "for item in items:\n    total += item",
    "if flag:\n    del out",
    "try:\n    x = f()\nexcept Exception:\n    pass",
    "yield out",
    "print(locals())",
]


UNBOUNDED = Job(ALL_CODES, Mode.FIX, True, budget=None)
"""Fix with every rule, unsafe fixes included, however long it takes: no spliced example that must
be fixed can fail for want of speed."""


def _lint(text: str) -> List[Diagnostic]:
    return lint_source(text, "x.py", ALL_RULES)


def _check_settled(fixed: str, remaining: List[Diagnostic]) -> None:
    """``fixed`` (a fix's result, with the findings left in it) parses, fixing it again changes
    nothing, and no finding left has a fix that was meant to be applied."""
    allowed = applicabilities(True)
    cst.parse_module(fixed)
    again = fix_text(fixed, _lint, allowed)
    assert again.text == fixed and again.applied == 0
    assert not [d for d in remaining if d.fix is not None and d.fix.applicability in allowed]


@PROFILE
@given(hypothesmith.from_grammar())
def test_checking_generated_programs_never_raises(source):
    result = process_text("x.py", source, Job(ALL_CODES, Mode.FIX, True))
    assert result.error is None or "internal error" not in result.error.message


def _splice(source: str, statement: str, line: int) -> str:
    lines = source.splitlines(keepends=True)
    line = min(line, len(lines))
    indent = lines[line - 1][: len(lines[line - 1]) - len(lines[line - 1].lstrip())] if lines else ""
    block = "".join(indent + part + "\n" for part in statement.split("\n"))
    return "".join(lines[:line] + [block] + lines[line:])


@PROFILE
@given(st.sampled_from(FIXTURE_SOURCES), st.sampled_from(SPLICED_STATEMENTS), st.integers(min_value=1, max_value=200))
def test_fixes_of_spliced_fixtures_parse_and_settle(source, statement, line):
    spliced = _splice(source, statement, line)
    try:
        compile(spliced, "x.py", "exec")
    except SyntaxError:
        return
    result = process_text("x.py", spliced, UNBOUNDED)
    assert result.error is None, result.error
    _check_settled(result.text, result.diagnostics)
