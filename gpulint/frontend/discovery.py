"""Finding the Python files to check: recursive, honouring .gitignore files and the exclude settings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

import pathspec

from gpulint.frontend.config import Settings

PYTHON_SUFFIXES = (".py", ".ipynb")

_Ignore = Tuple[Path, pathspec.GitIgnoreSpec]


def _read_ignore_file(path: Path) -> Optional[pathspec.GitIgnoreSpec]:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _git_root(directory: Path) -> Optional[Path]:
    for candidate in (directory, *directory.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


def _inherited_ignores(directory: Path) -> List[_Ignore]:
    """The .gitignore rules that apply to ``directory`` from its ancestors up to the repository root."""
    root = _git_root(directory)
    if root is None:
        return []
    chain = [directory, *directory.parents]
    ancestors = reversed(chain[1 : chain.index(root) + 1])
    ignores = []
    exclude_file = _read_ignore_file(root / ".git" / "info" / "exclude")
    if exclude_file is not None:
        ignores.append((root, exclude_file))
    for ancestor in ancestors:
        spec = _read_ignore_file(ancestor / ".gitignore")
        if spec is not None:
            ignores.append((ancestor, spec))
    return ignores


def _is_ignored(path: Path, is_dir: bool, ignores: List[_Ignore]) -> bool:
    ignored = False
    for base, spec in ignores:
        relative = path.relative_to(base).as_posix() + ("/" if is_dir else "")
        result = spec.check_file(relative)
        if result.include is not None:
            ignored = result.include
    return ignored


def _is_virtualenv(directory: Path) -> bool:
    return (directory / "pyvenv.cfg").is_file()


def _is_directory(entry: os.DirEntry) -> bool:
    """Whether ``entry`` is a folder or a link to one; a link that loops (``data -> data/``) or
    cannot be followed is not."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _inside(path: Path, tree: Path) -> bool:
    """Whether ``path``, with every link resolved, lies in ``tree`` (an already resolved folder)."""
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):
        return False
    return resolved == tree or tree in resolved.parents


def _walk(directory: Path, settings: Settings, ignores: List[_Ignore], tree: Path) -> Iterator[Path]:
    own = _read_ignore_file(directory / ".gitignore")
    if own is not None:
        ignores = [*ignores, (directory, own)]
    try:
        entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        path = Path(entry.path)
        is_dir = _is_directory(entry)
        if settings.is_excluded(path) or _is_ignored(path, is_dir, ignores):
            continue
        if is_dir:
            if not entry.is_symlink() and not _is_virtualenv(path):
                yield from _walk(path, settings, ignores, tree)
        elif entry.name.endswith(PYTHON_SUFFIXES) and (not entry.is_symlink() or _inside(path, tree)):
            yield path


def discover(root: Path, settings: Settings) -> Iterator[Path]:
    """The files to check for a path named on the command line.

    A named file is always checked; a named directory is walked, skipping what ``.gitignore`` files
    and the ``exclude`` settings exclude below it (a directory named although ignored is walked
    with only its own ``.gitignore`` files). Like black, the walk never follows a link to a folder,
    nor a link to a file outside the named directory, so nothing outside it is read or rewritten.
    """
    if not root.is_dir():
        yield root
        return
    directory = root.resolve()
    inherited = _inherited_ignores(directory)
    if _is_ignored(directory, True, inherited):
        inherited = []
    for found in _walk(directory, settings, inherited, directory):
        yield root / found.relative_to(directory)
