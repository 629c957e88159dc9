"""The prefilters (text tokens, the survey of Python's own tree, blanking the functions no rule
reaches) never change what gpulint finds.

Each rule's fixture files are compared in ``test_rule_fixtures.py``; this compares the demo
project and real PyTorch code: the smallest files of the installed ``torch`` package that do what
the rules look for (load checkpoints, empty the cache, switch to evaluation mode, backpropagate),
and the smallest in which the rules reach some functions but not all, so that bodies are blanked.
"""

from __future__ import annotations

import ast
import functools
import operator
import re
from pathlib import Path
from typing import List

import pytest

from gpulint.linter import lint_source
from gpulint.reach import NOTHING
from gpulint.rules import ALL_RULES
from gpulint.survey import Survey
from tests.helpers import FIXTURES

RELEVANT = re.compile(r"empty_cache|memory_cached|\.eval\(\)|map_location|torch\.load|\.backward\(")
REAL_FILES = 40
BLANKED_FILES = 15


def _relevant_torch_files() -> List[Path]:
    """Files of the installed torch that do what the rules look for, smallest first."""
    torch = pytest.importorskip("torch")
    root = Path(torch.__file__).parent
    relevant = [p for p in root.rglob("*.py") if RELEVANT.search(p.read_text(encoding="utf-8", errors="replace"))]
    return sorted(relevant, key=lambda p: (p.stat().st_size, str(p)))


def _partly_reached(path: Path) -> bool:
    """Whether the rules that may fire in the file reach some of its functions, not all."""
    source = path.read_text(encoding="utf-8")
    survey = Survey(ast.parse(source), source)
    reaches = [rule.reach(survey) for rule in ALL_RULES if rule.may_fire(source)]
    reach = functools.reduce(operator.or_, reaches, NOTHING)
    return bool(reach) and not reach.whole_module and len(reach.functions) < len(survey.functions)


def _compare(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert lint_source(source, str(path), ALL_RULES) == lint_source(source, str(path), ALL_RULES, prefilter=False)


@pytest.mark.parametrize("path", sorted((FIXTURES / "demo").glob("*.py")), ids=lambda p: p.name)
def test_demo_project(path):
    _compare(path)


def test_real_pytorch_files():
    files = _relevant_torch_files()[:REAL_FILES]
    assert len(files) == REAL_FILES
    for path in files:
        _compare(path)


def test_real_pytorch_files_with_blanked_functions():
    files = [path for path in _relevant_torch_files() if _partly_reached(path)][:BLANKED_FILES]
    assert len(files) == BLANKED_FILES
    for path in files:
        _compare(path)
