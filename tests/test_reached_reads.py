"""The reads of a name one assignment's value may reach (``gpulint.semantic.reached_reads``)."""

from __future__ import annotations

import ast
import textwrap
from typing import List, Optional

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.reached_reads import reached_reads


def _reached(source: str, line: int) -> Optional[List[int]]:
    """The lines of the reads reached from the assignment on ``line`` (1-based in ``source``)."""
    text = textwrap.dedent(source)
    tree = ast.parse(text)
    model = SemanticModel(tree, text)
    assignment = next(node for node in ast.walk(tree) if isinstance(node, ast.Assign) and node.lineno == line)
    target = assignment.targets[0]
    assert isinstance(target, ast.Name)
    found = reached_reads(model, assignment, model.scope_at(target).resolve(target.id))
    return None if found is None else sorted(read.lineno for read in found)


def test_a_plain_rebinding_ends_the_walk():
    source = """\
        x = f()
        use(x)
        x = g(x)
        use(x)
    """
    assert _reached(source, 1) == [2, 3]


def test_the_next_iteration_binds_the_name_before_reading_it():
    source = """\
        for batch in loader:
            x = f(batch)
            train(x)
            if step(batch):
                x = g()
                save(x)
        keep(x)
    """
    assert _reached(source, 5) == [6, 7]
    assert _reached(source, 2) == [3, 7]


def test_a_jump_before_the_rebinding_keeps_the_walk_going():
    source = """\
        for batch in loader:
            if batch is None:
                continue
            x = f(batch)
            train(x)
            if step(batch):
                x = g()
                save(x)
    """
    assert _reached(source, 7) == [5, 8]


def test_a_rebinding_in_a_try_body_may_be_skipped_by_an_exception():
    source = """\
        x = f()
        try:
            x = g()
        except ValueError:
            pass
        use(x)
    """
    assert _reached(source, 1) == [6]


def test_a_rebinding_inside_a_branch_does_not_end_the_walk():
    source = """\
        x = f()
        if cond:
            x = g()
        use(x)
    """
    assert _reached(source, 1) == [4]


def test_a_loop_target_of_the_same_name_binds_it_each_turn():
    source = """\
        for x in items:
            use(x)
            x = f()
            keep(x)
        after(x)
    """
    assert _reached(source, 3) == [4, 5]


def test_a_while_loops_test_is_read():
    source = """\
        x = 0
        while x < 10:
            x = x + 1
    """
    assert _reached(source, 3) == [2, 3]


def test_a_name_another_scope_reads_is_not_decided():
    source = """\
        def show():
            print(x)
        x = f()
        show()
    """
    assert _reached(source, 3) is None
