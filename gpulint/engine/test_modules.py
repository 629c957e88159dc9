"""Test modules, as pytest would collect them: rules whose findings there were, on real code, unit
tests running toy models or reading toy files leave them out unless a setting asks.

A name alone does not make a test module: research code calls its evaluation and inference
scripts ``test.py``, ``u2net_test.py`` or ``test_on_image.py``. A module counts when its path looks
like a test's (``test_*.py``, ``*_test.py``, ``tests.py``, ``conftest.py``, or any file in a
``tests`` folder) and its code is a test suite's: it defines a ``test_*`` function or a ``Test*``
class at top level, or imports ``pytest`` or ``unittest``; a ``conftest.py`` always counts.
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePath

TEST_FILE = re.compile(r"(test_.*|.*_test|tests|conftest)\.py")
"""pytest's test modules, and ``tests.py``."""
TEST_FRAMEWORKS = frozenset({"pytest", "unittest"})


def is_test_module(path: str, tree: ast.Module) -> bool:
    """Whether the module at ``path``, parsed as ``tree``, is a test module (see the module docstring)."""
    parts = PurePath(path).parts
    if not parts or not (TEST_FILE.fullmatch(parts[-1]) is not None or "tests" in parts[:-1]):
        return False
    return parts[-1] == "conftest.py" or any(_test_statement(statement) for statement in tree.body)


def _test_statement(statement: ast.stmt) -> bool:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return statement.name.startswith("test")
    if isinstance(statement, ast.ClassDef):
        return statement.name.startswith("Test")
    if isinstance(statement, ast.Import):
        return any(alias.name.split(".")[0] in TEST_FRAMEWORKS for alias in statement.names)
    if isinstance(statement, ast.ImportFrom):
        return (statement.module or "").split(".")[0] in TEST_FRAMEWORKS
    return False
