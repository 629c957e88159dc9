"""Which module-level names another module may import, so that a fix must treat their uses as unknown.

None of a notebook's, none of a script's (a file whose name cannot be imported, such as
``train-gpt.py`` or ``01_prepare.py``, or that starts with a ``#!`` line), and none bound under
``if __name__ == "__main__":``. Elsewhere a module-level name is importable unless convention
says it is private: a leading underscore, or an ``__all__`` that does not list it.
"""

from __future__ import annotations

import keyword
from pathlib import PurePath
from typing import Callable, Optional, Sequence

import libcst as cst

Parent = Callable[[cst.CSTNode], Optional[cst.CSTNode]]


def is_main_guard(test: cst.BaseExpression) -> bool:
    """``__name__ == "__main__"``, either way round."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    comparison = test.comparisons[0]
    if not isinstance(comparison.operator, cst.Equal):
        return False
    sides = [test.left, comparison.comparator]
    names = [side for side in sides if isinstance(side, cst.Name) and side.value == "__name__"]
    strings = [side for side in sides if isinstance(side, cst.SimpleString) and side.evaluated_value == "__main__"]
    return len(names) == 1 and len(strings) == 1


def file_is_importable(path: str, source: str) -> bool:
    """Whether other code can ``import`` the file by name: not a notebook, not a ``#!`` script, and
    named like a module (source read from stdin without a name counts as importable)."""
    if path.endswith(".ipynb") or source.startswith("#!"):
        return False
    if path in ("-", "stdin", "<stdin>"):
        return True
    stem = PurePath(path).stem
    return stem.isidentifier() and not keyword.iskeyword(stem)


def _under_main_guard(node: cst.CSTNode, parent: Parent) -> bool:
    current: Optional[cst.CSTNode] = node
    while current is not None and not isinstance(current, cst.Module):
        if isinstance(current, cst.If) and is_main_guard(current.test):
            return True
        current = parent(current)
    return False


def _public_names(module: cst.Module) -> Optional[Sequence[str]]:
    """The names ``__all__`` lists, if the module assigns it a literal list or tuple of strings."""
    for line in module.body:
        if not isinstance(line, cst.SimpleStatementLine):
            continue
        for small in line.body:
            if not (isinstance(small, cst.Assign) and any(
                isinstance(target.target, cst.Name) and target.target.value == "__all__" for target in small.targets
            )):
                continue
            if isinstance(small.value, (cst.List, cst.Tuple)):
                values = [element.value for element in small.value.elements]
                if all(isinstance(value, cst.SimpleString) for value in values):
                    return [str(value.evaluated_value) for value in values if isinstance(value, cst.SimpleString)]
            return None
    return None


def may_be_imported(name: cst.Name, path: str, source: str, module: cst.Module, parent: Parent) -> bool:
    """Whether another module may import the module-level binding ``name``."""
    if not file_is_importable(path, source) or _under_main_guard(name, parent):
        return False
    if name.value.startswith("_"):
        return False
    public = _public_names(module)
    return public is None or name.value in public
