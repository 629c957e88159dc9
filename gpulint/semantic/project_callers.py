"""Whether the project calls a function of a module only with gradients off, read from disk around it.

A trainer's ``sample`` method that its own module never calls runs where the training script calls
it: ``with torch.no_grad(): outputs = trainer.sample(a, b)`` in ``train.py``. A reader looks for
those calls; so does gpulint. The files looked through are the project's around the module: the
``.py`` files under the folder that holds its package (the nearest folder above it without an
``__init__.py``), :data:`MAX_FILES` at most. A function counts as called only with gradients off when
the files there call a function or method of its name at least once, and every such call, in any of
them and in the module itself, runs with gradients off in its own file
(:meth:`~gpulint.semantic.model.SemanticModel.gradients_off_at`). Any other mention of the name
(``fn = trainer.sample``, a callback), a notebook that spells it, a file that spells it but cannot
be parsed, or a project too large to look through leaves it undecided: not so.

Each file and folder looked at is recorded (:mod:`gpulint.engine.consulted`), so that a result cached
for the module is used only while they are unchanged.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

from gpulint.engine.consulted import digest_of, digest_of_listing, record
from gpulint.semantic.model import Function, SemanticModel
from gpulint.semantic.project_modules import read_module

MAX_FILES = 400
"""The most files (Python modules and notebooks) looked through for one module's callers."""
SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules", "site-packages", "build", "dist"})
"""Folders that hold no code of the project's own."""

_models: Dict[Tuple[str, int, int], SemanticModel] = {}
"""Other files' semantic models, by path, modification time and size."""
_MODELS_KEPT = 64


def called_only_without_grad(model: SemanticModel, path: str, function: Function) -> bool:
    """Whether the project calls ``function`` (a function or method of the module at ``path``,
    defined at the top of the module or of a class there, that the module does not call by binding)
    only with gradients off (see the module's docstring)."""
    if function.calls or not _defined_at_the_top(model, function) or not os.path.isfile(path):
        return False
    return model.derived(_ProjectCallers).decide(path, function.name)


def _defined_at_the_top(model: SemanticModel, function: Function) -> bool:
    parent = model.parent(function.node)
    if isinstance(parent, ast.ClassDef):
        parent = model.parent(parent)
    return isinstance(parent, ast.Module)


class _ProjectCallers:
    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self.decided: Dict[Tuple[str, str], bool] = {}

    def decide(self, path: str, name: str) -> bool:
        key = (path, name)
        if key not in self.decided:
            self.decided[key] = self._decide(Path(os.path.abspath(path)), name)
        return self.decided[key]

    def _decide(self, own: Path, name: str) -> bool:
        files = _project_files(_search_root(own))
        if files is None:
            return False
        found = 0
        for file in files:
            if file.suffix == ".ipynb":
                if _spells(file, name):
                    return False
                continue
            if file == own:
                other: Optional[SemanticModel] = self.model
            elif not _spells(file, name):
                continue
            else:
                other = _model_of(file)
            if other is None:
                return False
            calls = _calls_by_name(other, name)
            if calls is None or not all(other.gradients_off_at(*other.span(call)[:2]) for call in calls):
                return False
            found += len(calls)
        return found > 0


def _search_root(path: Path) -> Path:
    """The folder that holds the module's package: the nearest one above it without ``__init__.py``."""
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        folder = folder.parent
    return folder


def _project_files(root: Path) -> Optional[List[Path]]:
    """The ``.py`` and ``.ipynb`` files under ``root`` (not in hidden or :data:`SKIPPED_FOLDERS`
    folders, nor in a virtual environment), each folder's listing recorded; None past :data:`MAX_FILES`."""
    files: List[Path] = []
    for folder, folders, names in _walk(root):
        record(folder, digest_of_listing([*folders, *names]))
        folders[:] = sorted(
            name for name in folders
            if not name.startswith(".") and name not in SKIPPED_FOLDERS and not (folder / name / "pyvenv.cfg").exists()
        )
        files.extend(folder / name for name in sorted(names) if name.endswith((".py", ".ipynb")))
        if len(files) > MAX_FILES:
            return None
    return files


def _walk(root: Path) -> Iterator[Tuple[Path, List[str], List[str]]]:
    for folder, folders, names in os.walk(root):
        yield Path(folder), folders, names


def _spells(file: Path, name: str) -> bool:
    """Whether the file's text has ``name`` in it (recorded as consulted); a file that cannot be
    read is taken to."""
    try:
        data = file.read_bytes()
    except OSError:
        return True
    record(file, digest_of(data))
    return name.encode("utf-8") in data


def _model_of(file: Path) -> Optional[SemanticModel]:
    read = read_module(file)
    if read is None:
        return None
    status = file.stat()
    key = (str(file), status.st_mtime_ns, status.st_size)
    if key not in _models:
        if len(_models) >= _MODELS_KEPT:
            _models.clear()
        _models[key] = SemanticModel(read[1], read[0])
    return _models[key]


def _calls_by_name(model: SemanticModel, name: str) -> Optional[List[ast.Call]]:
    """The calls in the module of a function or method named ``name`` (``name(...)``,
    ``x.name(...)``); None if the module mentions the name otherwise, but for defining it."""
    calls: List[ast.Call] = []
    called = set()
    for node in ast.walk(model.tree):
        if isinstance(node, ast.Call) and _named(node.func, name):
            calls.append(node)
            called.add(id(node.func))
    for node in ast.walk(model.tree):
        if _named(node, name) and id(node) not in called:
            return None
    return calls


def _named(node: ast.AST, name: str) -> bool:
    return (isinstance(node, ast.Name) and node.id == name) or (isinstance(node, ast.Attribute) and node.attr == name)
