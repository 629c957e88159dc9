"""Blanking the functions no rule reaches: positions stay exact, and findings stay the same.

Each case below has a function ``candidate`` where a rule may fire, and another function whose body
decides the finding (a caller that turns gradients off, a model frozen elsewhere, a backward pass
on a returned sum, a module built in ``__init__``, a ``global`` rebinding). Blanking every body but
the candidate's changes the finding, which shows the case matters; the engine's own blanking
(each rule's reach) must not.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from gpulint.engine.blanking import PLACEHOLDER, blank_bodies
from gpulint.engine.linter import lint_source
from gpulint.rules import ALL_RULES
from gpulint.semantic.model import SemanticModel

REAL_FILES = 40

SOURCE = textwrap.dedent('''\
    import torch

    def kept(x):  # a comment
        return torch.load(x)

    def blanked(x):
        """Déjà vu: non-ASCII before the code."""
        y = "é" + x  # trailing comment
        return y; pass

    class C:
        def one_line(self): return 1
        def m(self):
            if True:
                return 2

    def decorating(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            return fn(*args)
        return wrapper

    def tiny(): 0
''')


def _blank(source: str, *names: str):
    tree = ast.parse(source)
    functions = [f for f in SemanticModel(tree, source).functions if f.name in names]
    return blank_bodies(source, functions)


def test_blanking_keeps_every_position_and_parses():
    blanked = _blank(SOURCE, "blanked", "one_line", "m", "decorating", "tiny")
    assert len(blanked.text) == len(SOURCE)
    assert [len(line) for line in blanked.text.split("\n")] == [len(line) for line in SOURCE.split("\n")]
    assert blanked.text.count(PLACEHOLDER) == 4
    assert "@functools" not in blanked.text
    assert "def tiny(): 0" in blanked.text
    assert "déjà" not in blanked.text.lower() and "é" not in blanked.text
    assert "return torch.load(x)" in blanked.text and "# trailing comment" not in blanked.text
    ast.parse(blanked.text)
    assert cst.parse_module(blanked.text).code == blanked.text
    for start, end in blanked.spans:
        assert blanked.text[start : start + 3] == PLACEHOLDER and not blanked.text[start + 3 : end].strip()


def test_blanking_every_function_of_real_code_still_parses():
    torch = pytest.importorskip("torch")
    files = sorted((Path(torch.__file__).parent / "testing" / "_internal").rglob("*.py"))[:REAL_FILES]
    assert len(files) == REAL_FILES
    for path in files:
        source = path.read_text(encoding="utf-8")
        blanked = blank_bodies(source, SemanticModel(ast.parse(source), source).functions)
        assert len(blanked.text) == len(source), path
        ast.parse(blanked.text)
        cst.parse_module(blanked.text)


def test_blanked_bodies_are_reported_as_touched_edges_included():
    blanked = _blank(SOURCE, "blanked")
    ((start, end),) = blanked.spans
    assert blanked.touches(start - 5, start) and blanked.touches(end, end + 1) and blanked.touches(start + 1, start + 2)
    assert not blanked.touches(0, start - 1) and not blanked.touches(end + 1, len(SOURCE))


CASES = {
    "gpu004-caller-turns-gradients-off": '''
        import torch

        def candidate(model, x):
            model.eval()
            return model(x.cuda())

        def caller(model, x):
            with torch.no_grad():
                return candidate(model, x)
    ''',
    "gpu004-model-frozen-elsewhere": '''
        model = Net()

        def freeze():
            model.requires_grad_(False)

        def candidate(x):
            model.eval()
            y = model(x.cuda())
            print(y)
    ''',
    "gpu005-caller-backpropagates-the-sum": '''
        import torch.nn.functional as F

        def candidate(model, batches):
            total = 0
            for x, y in batches:
                total += F.cross_entropy(model(x), y)
            return total

        def train(model, batches, optimizer):
            candidate(model, batches).backward()
            optimizer.step()
    ''',
    "gpu003-module-built-in-another-method": '''
        import torch

        class Trainer:
            def build(self):
                self.net = make().cuda()

            def candidate(self, x):
                out = self.net(x)
                print(out)
                torch.cuda.empty_cache()
    ''',
    "global-rebinds-the-loader": '''
        from torch import load

        def setup(other):
            global load
            load = other

        def candidate(path):
            return load(path)
    ''',
}


@pytest.mark.parametrize("source", CASES.values(), ids=CASES.keys())
def test_facts_from_other_functions_are_read(source):
    source = textwrap.dedent(source)
    full = lint_source(source, "case.py", ALL_RULES, prefilter=False)
    survey = SemanticModel(ast.parse(source), source)
    naive = blank_bodies(source, [f for f in survey.functions if f.name != "candidate"])
    assert lint_source(naive.text, "case.py", ALL_RULES, prefilter=False) != full
    assert lint_source(source, "case.py", ALL_RULES) == full
