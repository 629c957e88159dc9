"""The prefilters (text tokens, the survey of Python's own tree) never change what gpulint finds.

Each rule's fixture files are compared in ``test_rule_fixtures.py``; this compares the demo
project and real PyTorch code: the smallest files of the installed ``torch`` package that do what
the rules look for (load checkpoints, empty the cache, switch to evaluation mode, backpropagate).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import List

import pytest

from gpulint.linter import lint_source
from gpulint.rules import ALL_RULES
from tests.helpers import FIXTURES

RELEVANT = re.compile(r"empty_cache|memory_cached|\.eval\(\)|map_location|torch\.load|\.backward\(")
REAL_FILES = 40


def _torch_files() -> List[Path]:
    torch = pytest.importorskip("torch")
    root = Path(torch.__file__).parent
    relevant = [p for p in root.rglob("*.py") if RELEVANT.search(p.read_text(encoding="utf-8", errors="replace"))]
    return sorted(relevant, key=lambda p: (p.stat().st_size, str(p)))[:REAL_FILES]


def _compare(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert lint_source(source, str(path), ALL_RULES) == lint_source(source, str(path), ALL_RULES, prefilter=False)


@pytest.mark.parametrize("path", sorted((FIXTURES / "demo").glob("*.py")), ids=lambda p: p.name)
def test_demo_project(path):
    _compare(path)


def test_real_pytorch_files():
    files = _torch_files()
    assert len(files) == REAL_FILES
    for path in files:
        _compare(path)
