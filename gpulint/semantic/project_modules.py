"""The project's own modules that a file imports, read from disk beside it.

A notebook that runs ``vit_LRP(pretrained=True)`` from ``baselines.ViT.ViT_LRP`` runs code the
notebook does not show; a reader opens ``baselines/ViT/ViT_LRP.py`` next to it. So does gpulint,
for the facts a fix's safety rests on: the modules a file imports are looked for as files of the
project — for ``import a.b`` or ``from a.b import c``, ``a/b/__init__.py`` or ``a/b.py`` (and
``a/b/c.py``) under the file's folder or one of its :data:`MAX_LEVELS` nearest ancestors; for
``from .m import x``, beside the file (a level up per extra dot) — and followed through the
imports of the modules found, :data:`MAX_DEPTH` imports deep, :data:`MAX_MODULES` modules at most.
Modules of the standard library and torch's own are never looked for: the project does not hold
them. A file that is not on disk (standard input, an unsaved buffer) has no project.

Each file looked for is recorded (:mod:`gpulint.engine.consulted`), with a digest of its content
or as absent: a result cached for a file is valid only while the files it was decided on are
unchanged.
"""

from __future__ import annotations

import ast
import io
import os
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

from gpulint.engine.consulted import digest_of, record
from gpulint.semantic.model import SemanticModel
from gpulint.semantic.torch_api import TORCH_PACKAGE

MAX_LEVELS = 4
"""How many folders above a file's own an absolute import's package is looked for in."""
MAX_DEPTH = 3
"""How many imports deep project modules are followed from the file."""
MAX_MODULES = 32
"""The most project modules read for one file."""
MAX_BYTES = 2_000_000
"""Larger files are not parsed (their digest is still recorded)."""
NOT_IN_THE_PROJECT = frozenset(sys.stdlib_module_names) | {TORCH_PACKAGE}
"""Top-level packages never looked for among the project's files."""

_read: Dict[Tuple[str, int, int], Tuple[Optional[str], Optional[Tuple[str, ast.Module]]]] = {}
"""Modules read in this process, by path, modification time and size."""
_READ_KEPT = 256


def project_modules(model: SemanticModel, path: str) -> List[ast.Module]:
    """The trees of the project modules that the file at ``path`` imports, directly or through them."""
    return model.derived(_ProjectModulesOf).of(path)


class _ProjectModulesOf:
    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self.found: Dict[str, List[ast.Module]] = {}

    def of(self, path: str) -> List[ast.Module]:
        if path not in self.found:
            self.found[path] = _follow(self.model.tree, Path(os.path.abspath(path)))
        return self.found[path]


def imported_classes(model: SemanticModel, path: str, node: ast.expr) -> List[ast.ClassDef]:
    """The project's ``class`` statements that ``node`` names through the file's imports: ``Name``
    bound by ``from m import Name`` (or ``as`` another name), or ``m.Name`` with ``m`` bound by
    ``import m`` or ``from p import m``, each a class statement at the top of the file the import
    names (:func:`project_modules` looks for files the same way), where nothing else at the top of
    that file binds the name too. Empty where the name is bound otherwise, or the file or the class
    is not found."""
    return [found.statement for found in _imported_definitions(model, path, node) if isinstance(found.statement, ast.ClassDef)]


def imported_function(model: SemanticModel, path: str, node: ast.expr) -> Optional[ImportedDefinition]:
    """The project's one ``def`` (not ``async``) that ``node`` names through the file's imports, as
    :func:`imported_classes` finds a class (``testing`` bound by ``from test import testing``), with
    the source and path of its file; None where there is not exactly one."""
    found = [found for found in _imported_definitions(model, path, node) if isinstance(found.statement, ast.FunctionDef)]
    return found[0] if len(found) == 1 else None


@dataclass(frozen=True)
class ImportedDefinition:
    """A statement at the top of a project module that defines what a file imports."""

    statement: ast.stmt
    tree: ast.Module
    source: str
    path: Path


def _imported_definitions(model: SemanticModel, path: str, node: ast.expr) -> List[ImportedDefinition]:
    if isinstance(node, ast.Name):
        local, wanted = node.id, None
    elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        local, wanted = node.value.id, node.attr
    else:
        return []
    file = Path(os.path.abspath(path))
    if not _is_file(file):
        return []
    binding = model.scope_at(node).resolve(local)
    found: List[ImportedDefinition] = []
    for statement in model.nodes(ast.Import) + model.nodes(ast.ImportFrom):
        if model.scope_at(statement).resolve(local) != binding:
            continue
        for alias in statement.names:
            if (alias.asname or alias.name.split(".")[0]) != local or alias.name == "*":
                continue
            if isinstance(statement, ast.Import):
                if wanted is None or (alias.asname is None and "." in alias.name):
                    continue
                files, name = list(_absolute(alias.name, (), file.parent)), wanted
            elif wanted is None:
                files, name = list(_files_of_from_import(statement, (), file.parent)), alias.name
            else:
                files = [
                    candidate for candidate in _files_of_from_import(statement, (alias.name,), file.parent)
                    if candidate.stem == alias.name
                ]
                name = wanted
            for candidate in files:
                read = read_module(candidate)
                if read is None:
                    continue
                source, module = read
                defined = [child for child in module.body if isinstance(child, (ast.ClassDef, ast.FunctionDef)) and child.name == name]
                if len(defined) == 1 and _top_level_binders(module, name) == 1:
                    found.append(ImportedDefinition(defined[0], module, source, candidate))
    return found


def _top_level_binders(module: ast.Module, name: str) -> int:
    """How many statements of the module's own code (outside its functions and classes) bind
    ``name``: a ``class`` statement, a ``def``, an import, an assignment or any other store."""
    count = 0
    pending: List[ast.AST] = list(module.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            count += node.name == name
            pending.extend(node.decorator_list)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            count += node.id == name
        elif isinstance(node, ast.alias):
            count += (node.asname or node.name.split(".")[0]) == name
        elif isinstance(node, ast.ExceptHandler):
            count += node.name == name
        pending.extend(ast.iter_child_nodes(node))
    return count


def _files_of_from_import(statement: ast.ImportFrom, names: Tuple[str, ...], folder: Path) -> Iterator[Path]:
    """The project files ``from m import ...`` may read: ``m``'s own, and the submodules ``names``."""
    if statement.level:
        base = folder
        for _ in range(statement.level - 1):
            base = base.parent
        yield from _located(base, statement.module.split(".") if statement.module else [], list(names))
    elif statement.module:
        yield from _absolute(statement.module, names, folder)


def _follow(tree: ast.Module, path: Path) -> List[ast.Module]:
    if not _is_file(path):
        return []
    seen = {os.path.abspath(path)}
    found: List[ast.Module] = []
    frontier = [(tree, path.parent)]
    for _ in range(MAX_DEPTH):
        next_frontier = []
        for importer, folder in frontier:
            for candidate in _imported_files(importer, folder):
                key = os.path.abspath(candidate)
                if key in seen or len(found) >= MAX_MODULES:
                    continue
                seen.add(key)
                module = _module_at(candidate)
                if module is not None:
                    found.append(module)
                    next_frontier.append((module, candidate.parent))
        frontier = next_frontier
    return found


def _imported_files(tree: ast.Module, folder: Path) -> Iterator[Path]:
    """The project files that the imports of ``tree``, a module in ``folder``, may name."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield from _absolute(alias.name, (), folder)
        elif isinstance(node, ast.ImportFrom) and node.level:
            base = folder
            for _ in range(node.level - 1):
                base = base.parent
            parts = node.module.split(".") if node.module else []
            yield from _located(base, parts, [alias.name for alias in node.names if alias.name != "*"])
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield from _absolute(node.module, tuple(alias.name for alias in node.names if alias.name != "*"), folder)


def _absolute(dotted: str, names: Tuple[str, ...], folder: Path) -> Iterator[Path]:
    parts = dotted.split(".")
    if parts[0] in NOT_IN_THE_PROJECT:
        return
    root = folder
    for _ in range(MAX_LEVELS + 1):
        located = list(_located(root, parts, list(names)))
        if located:
            yield from located
            return
        if root.parent == root:
            return
        root = root.parent


def _located(base: Path, parts: List[str], names: List[str]) -> Iterator[Path]:
    """``base/<parts>/__init__.py`` (a package, as Python prefers it) or ``base/<parts>.py``, and
    the submodules ``names`` of a package, as far as they are files (each looked for is recorded)."""
    package = base.joinpath(*parts)
    if parts and _exists(package / "__init__.py"):
        yield package / "__init__.py"
    elif parts and _exists(package.with_suffix(".py")):
        yield package.with_suffix(".py")
        return
    for name in names:
        submodule = package / f"{name}.py"
        if _exists(submodule):
            yield submodule


def _exists(path: Path) -> bool:
    present = _is_file(path)
    if not present:
        record(path, None)
    return present


def _is_file(path: Path) -> bool:
    """Whether ``path`` is a file; not where it cannot be looked at (a folder without search
    permission, a name too long)."""
    try:
        return path.is_file()
    except OSError:
        return False


def _module_at(path: Path) -> Optional[ast.Module]:
    read = read_module(path)
    return read[1] if read is not None else None


def read_module(path: Path) -> Optional[Tuple[str, ast.Module]]:
    """The source and tree of the Python file at ``path`` (None where it is absent, unreadable,
    larger than :data:`MAX_BYTES`, or does not parse), recorded as consulted and kept while the
    file's modification time and size stay the same."""
    try:
        status = path.stat()
    except OSError:
        record(path, None)
        return None
    key = (str(path.absolute()), status.st_mtime_ns, status.st_size)
    if key not in _read:
        if len(_read) >= _READ_KEPT:
            _read.clear()
        _read[key] = _parsed(path, status.st_size)
    digest, read = _read[key]
    record(path, digest)
    return read


def _parsed(path: Path, size: int) -> Tuple[Optional[str], Optional[Tuple[str, ast.Module]]]:
    """The file's digest (None where it cannot be read) and its source and tree (None past
    :data:`MAX_BYTES`, or where it does not parse)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None, None
    digest = digest_of(data)
    if size > MAX_BYTES:
        return digest, None
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        source = data.decode(encoding)
        return digest, (source, ast.parse(source))
    except (SyntaxError, ValueError, LookupError, RecursionError):
        return digest, None
