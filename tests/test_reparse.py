"""The editor's parser (:class:`gpulint.engine.reparse.Reparser`) against Python's parse of the
whole text: after every edit of long random edit sequences, and on the edits that could fool a
parser that reads only part of the text, the tree is the same, positions included; and the
statements an edit did not touch are the previous tree's own."""

from __future__ import annotations

import ast
import random
from pathlib import Path
from typing import List, Optional

import pytest

from gpulint.engine.reparse import Reparser, parse

ROOT = Path(__file__).resolve().parent.parent
PIECES = [
    "\n", "\n\n", "    ", "x", "(", ")", "[", "]", "'", '"""', "#", " = 1", "def g():\n", "    return 2\n", "else:\n",
    "\\\n", "@decorate\n", "class C:\n", "if a:\n", "pass\n", "\r\n", "\r", ":", "\t", "lambda: 0", "async ", "yield",
    "elif b:\n", "try:\n", "except E:\n", "finally:\n", "\f", "\x00", "é", ";", "; y = 2",
]
TRAINING = '''import torch


@torch.no_grad()
def evaluate(model, loader):
    model.eval()
    for batch in loader:
        model(batch)


class Net(torch.nn.Module):
    def forward(self, x):
        return x


if __name__ == "__main__":
    state = torch.load("a.pt")
    try:
        evaluate(Net(), [])
    except RuntimeError:
        pass
'''


def dump(tree: Optional[ast.Module]) -> Optional[str]:
    return None if tree is None else ast.dump(tree, include_attributes=True)


def sources() -> List[str]:
    files = sorted((ROOT / "fixtures").glob("GPU00*/*.py"))
    return [TRAINING] + [path.read_text(encoding="utf-8") for path in files[::7]]


@pytest.mark.parametrize("seed", range(4))
def test_random_edits_parse_as_the_whole_text_does(seed: int):
    chooser = random.Random(seed)
    for original in sources():
        parser, text = Reparser(), original
        parser(text)
        for _ in range(40):
            if chooser.random() < 0.2:
                text = original
            at = chooser.randrange(len(text) + 1)
            if chooser.random() < 0.5:
                text = text[:at] + chooser.choice(PIECES) + text[at:]
            else:
                text = text[:at] + text[at + chooser.randrange(1, 20):]
            assert dump(parser(text)) == dump(parse(text)), text


def typed(text: str, line: int, typing: str) -> List[str]:
    """The versions of ``text`` as ``typing`` is typed, a character at a time, as a new line before ``line``."""
    lines = text.split("\n")
    indent = lines[line][: len(lines[line]) - len(lines[line].lstrip())]
    return ["\n".join(lines[:line] + [indent + typing[:count]] + lines[line:]) for count in range(len(typing) + 1)]


@pytest.mark.parametrize("line", range(len(TRAINING.split("\n"))))
def test_typing_a_statement_anywhere_parses_as_the_whole_text_does(line: int):
    parser = Reparser()
    parser(TRAINING)
    for version in typed(TRAINING, line, 'value = f(a, "s", [1]) if b else """q"""  # c'):
        assert dump(parser(version)) == dump(parse(version)), version


@pytest.mark.parametrize("edit", [
    ('        model(batch)\n', '        model(batch)\n    """\n'),  # a string opened here closes in another statement
    ('        return x\n', '        return x\nelse:\n    pass\n'),
    ('class Net', '@decorate\nclass Net'),
    ('import torch\n', '# leading comment\nimport torch\n'),
    ('        pass\n', '        pass'),  # no newline at the end any more
    ('def forward(self, x):', 'def forward(self, x): \\'),
    ('state = torch.load("a.pt")', 'state = torch.load(\n"a.pt")'),
    ('\n', '\r\n'),
    ('\n\n\nclass', '\r\r\rclass'),
    ('state = torch.load("a.pt")', 'state = torch.load("a.pt"); x = 1'),
])
def test_edits_that_reach_past_the_statements_they_touch(edit):
    before, after = edit
    parser = Reparser()
    parser(TRAINING)
    text = TRAINING.replace(before, after)
    assert dump(parser(text)) == dump(parse(text))


def test_statements_the_edit_did_not_touch_are_the_previous_trees():
    parser = Reparser()
    first = parser(TRAINING)
    assert first is not None
    edited = parser(TRAINING.replace("return x", "return x + 1"))
    assert edited is not None and dump(edited) == dump(parse(TRAINING.replace("return x", "return x + 1")))
    kept = [statement for statement in edited.body if any(statement is old for old in first.body)]
    assert len(kept) == len(first.body) - 3  # the edited class and a statement either side are new
    assert parser(TRAINING.replace("return x", "return x + 1")) is edited


@pytest.mark.parametrize("text, edited", [
    ('import torch\n\nx = 1\ny = 2\nmodel = torch.nn.Linear(4, 1); model.cuda()\nz = 3\n', "y = 2 -> # y = 2"),
    ("a = 1; b = 2\nc = 3\n", "c = 3 -> c = 4"),
    ("x = 1\ny = 2; z = 3\nw = 4\n", "x = 1 -> x = 2"),
    ("x = 1 + \\\n2; y = 3\nz = 4\nw = 5\n", "z = 4 -> z = 5"),
    ("x = 1\n@\\\ndecorate\ndef f(): pass\ny = 2\nz = 3\n", "y = 2 -> y = 3"),  # the @ two lines above
    ("x = 1\n@\\\ndecorate\ndef f(): pass\ny = 2\nz = 3\n", "@ -> @ "),
    ("x = 1 \\\n\ny = 2\nz = 3\n", "\n\ny -> \nq\ny"),  # a line a backslash joins to the one before
])
def test_statements_sharing_lines_are_reparsed_together(text: str, edited: str):
    before, after = edited.split(" -> ")
    parser = Reparser()
    parser(text)
    changed = text.replace(before, after, 1)
    assert changed != text
    assert dump(parser(changed)) == dump(parse(changed))


def test_a_version_that_does_not_parse_is_skipped():
    parser = Reparser()
    first = parser(TRAINING)
    broken = TRAINING.replace("return x", "return (x")
    assert parser(broken) is None
    repaired = TRAINING.replace("return x", "return (x)")
    tree = parser(repaired)
    assert dump(tree) == dump(parse(repaired))
    assert first is not None and tree is not None and tree.body[0] is first.body[0]  # compared with the last that parsed
