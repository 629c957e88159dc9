"""``semantic.confined``: whether what a loop computes is seen after it. The loop under test is the
one whose header ends with ``# here``."""

from __future__ import annotations

import ast
import textwrap

import pytest

from gpulint.semantic.confined import stays_inside
from gpulint.semantic.model import SemanticModel


def _stays(source: str) -> bool:
    source = textwrap.dedent(source)
    tree = ast.parse(source)
    line = next(number for number, text in enumerate(source.splitlines(), 1) if text.rstrip().endswith("# here"))
    loop = next(node for node in ast.walk(tree) if isinstance(node, (ast.For, ast.While)) and node.lineno == line)
    return stays_inside(SemanticModel(tree, source), loop)


STAYS = {
    "rebound by the next turn's training step": """
        def f(batches, valid):
            for x in batches:
                out = net(x)
                out.sum().backward()
                for x in valid:  # here
                    out = net(x)
    """,
    "read only as a Python number": """
        def f(valid):
            total = 0.0
            for x in valid:  # here
                total += net(x).sum().item()
            print(total)
    """,
    "numbers and masks collected": """
        def f(valid):
            hits, losses = [], []
            for x, y in valid:  # here
                out = net(x)
                losses.append(float(out.mean()))
                hits.append((out.argmax(-1) == y).sum())
            return hits, losses
    """,
    "a name read in the other branch of an if": """
        def f(valid, flag):
            if flag:
                for x in valid:  # here
                    out = net(x)
            else:
                print(out)
    """,
    "a container the loop makes and drops": """
        def f(valid):
            for x in valid:  # here
                kept = []
                kept.append(net(x))
                print(len(kept))
    """,
    "read before the loop only": """
        def f(valid, out):
            print(out)
            for x in valid:  # here
                out = net(x)
    """,
    "a name rebound by a with statement": """
        def f(valid):
            for x in valid:  # here
                out = net(x)
            with open("log") as out:
                print(out)
    """,
}

SEEN = {
    "read after the loop": """
        def f(valid):
            for x in valid:  # here
                out = net(x)
            return out
    """,
    "read at the top of the next turn": """
        def f(batches, valid):
            out = 0.0
            for x in batches:
                (net(x).sum() + out).backward()
                for v in valid:  # here
                    out = net(v).mean()
    """,
    "read in the test of a while loop around it": """
        def f(valid):
            gap = 1.0
            while gap > 0.1:
                for v in valid:  # here
                    gap = net(v).mean()
    """,
    "bound again only on one branch": """
        def f(valid, flag):
            for x in valid:  # here
                out = net(x)
            if flag:
                out = None
            print(out)
    """,
    "read by a nested function": """
        def f(valid):
            for x in valid:  # here
                out = net(x)
            return lambda: out
    """,
    "read by a function defined before it": """
        def f(valid):
            def show():
                print(out)
            for x in valid:  # here
                out = net(x)
            show()
    """,
    "read by a lambda made before it": """
        def f(valid):
            show = lambda: print(out)
            for x in valid:  # here
                out = net(x)
            show()
    """,
    "appended to an outer list": """
        def f(valid):
            kept = []
            for x in valid:  # here
                kept.append(net(x))
    """,
    "stored in an attribute": """
        def f(self, valid):
            for x in valid:  # here
                self.last = net(x)
    """,
    "a global": """
        def f(valid):
            global out
            for x in valid:  # here
                out = net(x)
    """,
    "returned from inside": """
        def f(valid):
            for x in valid:  # here
                return net(x)
    """,
    "yielded": """
        def f(valid):
            for x in valid:  # here
                yield net(x)
    """,
    "read in a handler of a try around it": """
        def f(valid):
            try:
                for x in valid:  # here
                    out = net(x)
            except ValueError:
                print(out)
    """,
}


@pytest.mark.parametrize("source", list(STAYS.values()), ids=list(STAYS))
def test_values_that_stay_inside(source):
    assert _stays(source)


@pytest.mark.parametrize("source", list(SEEN.values()), ids=list(SEEN))
def test_values_seen_after_the_loop(source):
    assert not _stays(source)
