"""Which module-level names another module may import, so that a fix must treat their uses as unknown.

None of a notebook's, none of a script's (a file whose name cannot be imported, such as
``train-gpt.py`` or ``01_prepare.py``, or that starts with a ``#!`` line), and none bound under
``if __name__ == "__main__":``. Elsewhere a module-level name is importable unless convention
says it is private: a leading underscore, or an ``__all__`` that does not list it.
"""

from __future__ import annotations

import ast
import keyword
from pathlib import PurePath
from typing import List, Optional

from gpulint.semantic.model import SemanticModel


def file_is_importable(path: str, source: str) -> bool:
    """Whether other code can ``import`` the file by name: not a notebook, not a ``#!`` script, and
    named like a module (source read from stdin without a name counts as importable)."""
    if path.endswith(".ipynb") or source.startswith("#!"):
        return False
    if path in ("-", "stdin", "<stdin>"):
        return True
    stem = PurePath(path).stem
    return stem.isidentifier() and not keyword.iskeyword(stem)


def _public_names(tree: ast.Module) -> Optional[List[str]]:
    """The names ``__all__`` lists, if the module assigns it a literal list or tuple of strings."""
    for statement in tree.body:
        if not (isinstance(statement, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in statement.targets
        )):
            continue
        if isinstance(statement.value, (ast.List, ast.Tuple)):
            values = statement.value.elts
            if all(isinstance(value, ast.Constant) and isinstance(value.value, str) for value in values):
                return [str(value.value) for value in values if isinstance(value, ast.Constant)]
        return None
    return None


def may_be_imported(model: SemanticModel, name: ast.Name, path: str) -> bool:
    """Whether another module may import the module-level binding ``name`` (where it is assigned)."""
    if not file_is_importable(path, model.source) or model.under_main_guard(name):
        return False
    if name.id.startswith("_"):
        return False
    public = _public_names(model.tree)
    return public is None or name.id in public
