"""Test modules, as pytest would collect them: rules whose findings there were, on real code, unit
tests running toy models or reading toy files leave them out unless a setting asks.

A name alone does not make a test module: research code calls its evaluation and inference
scripts ``test.py``, ``u2net_test.py`` or ``test_on_image.py``. A module counts when its path looks
like a test's (``test_*.py``, ``*_test.py``, ``tests.py``, ``conftest.py``, or any file in a
``tests`` folder) and its code is a test suite's: it imports ``pytest`` or ``unittest``, or it
defines a ``test*`` function or a ``Test*`` class at top level and is no script — it has no ``if
__name__ == "__main__":`` block and its module-level code does not parse the command line (an
evaluation script with a ``def test(model, loader)`` is a script); a ``conftest.py`` always counts.
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePath

from gpulint.semantic.model import is_main_guard, parses_the_command_line

TEST_FILE = re.compile(r"(test_.*|.*_test|tests|conftest)\.py")
"""pytest's test modules, and ``tests.py``."""
TEST_FRAMEWORKS = frozenset({"pytest", "unittest"})


def is_test_module(path: str, tree: ast.Module) -> bool:
    """Whether the module at ``path``, parsed as ``tree``, is a test module (see the module docstring)."""
    parts = PurePath(path).parts
    if not parts or not (TEST_FILE.fullmatch(parts[-1]) is not None or "tests" in parts[:-1]):
        return False
    if parts[-1] == "conftest.py" or any(_imports_a_test_framework(statement) for statement in tree.body):
        return True
    script = parses_the_command_line(tree) or any(isinstance(statement, ast.If) and is_main_guard(statement.test) for statement in tree.body)
    return not script and any(_test_definition(statement) for statement in tree.body)


def _test_definition(statement: ast.stmt) -> bool:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return statement.name.startswith("test")
    return isinstance(statement, ast.ClassDef) and statement.name.startswith("Test")


def _imports_a_test_framework(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Import):
        return any(alias.name.split(".")[0] in TEST_FRAMEWORKS for alias in statement.names)
    return isinstance(statement, ast.ImportFrom) and (statement.module or "").split(".")[0] in TEST_FRAMEWORKS
