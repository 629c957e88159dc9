"""The other files a file's result was decided on, so that a cached result is used only while they
are unchanged.

A check may read files besides the one it checks (:mod:`gpulint.semantic.project_modules` reads the
project modules a file imports). While a :func:`recording_consulted` block is open, each file looked
for is recorded with a digest of its content, or None where it is absent; :func:`unchanged` tells
whether they all read the same again (and the absent ones are still absent).
"""

from __future__ import annotations

import hashlib
import os
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Dict, Iterator, List, Mapping, Optional, Tuple

Consulted = Dict[str, Optional[str]]
_consulted: ContextVar[Optional[Consulted]] = ContextVar("gpulint_consulted_files", default=None)


@contextmanager
def recording_consulted() -> Iterator[Consulted]:
    """Collect, while open, every other file the check looks for: its path and its digest."""
    consulted: Consulted = {}
    token = _consulted.set(consulted)
    try:
        yield consulted
    finally:
        _consulted.reset(token)


def record(path: Path, digest: Optional[str]) -> None:
    """Note that the check looked for ``path`` and found this content (None: no such file)."""
    consulted = _consulted.get()
    if consulted is not None:
        consulted.setdefault(str(path.absolute()), digest)


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


CODE_SUFFIXES = (".py", ".ipynb")
"""The files a folder's recorded listing names: Python modules and notebooks."""
SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules", "site-packages", "build", "dist"})
"""Folders that hold no code of the project's own: a folder's recorded listing leaves them out,
with hidden folders and virtual environments."""


def code_listing(folder: Path) -> Tuple[List[str], List[str]]:
    """The folder's subfolders that may hold the project's code and its Python modules and
    notebooks, each sorted (what a folder is recorded with: writing a checkpoint or a log there
    does not change it). Raises OSError where the folder cannot be listed."""
    folders: List[str] = []
    files: List[str] = []
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            if not entry.name.startswith(".") and entry.name not in SKIPPED_FOLDERS and not os.path.exists(os.path.join(entry.path, "pyvenv.cfg")):
                folders.append(entry.name)
        elif entry.name.endswith(CODE_SUFFIXES):
            files.append(entry.name)
    return sorted(folders), sorted(files)


def digest_of_listing(folders: List[str], files: List[str]) -> str:
    """The digest a folder is recorded with: of its :func:`code_listing`."""
    return digest_of("\n".join([*(name + "/" for name in folders), *files]).encode("utf-8", "surrogateescape"))


def unchanged(consulted: Mapping[str, Optional[str]]) -> bool:
    """Whether every file recorded has the same content again (and every absent one is still absent)."""
    return all(_current_digest(Path(path)) == digest for path, digest in consulted.items())


def _current_digest(path: Path) -> Optional[str]:
    try:
        if path.is_dir():
            return digest_of_listing(*code_listing(path))
        return digest_of(path.read_bytes()) if path.is_file() else None
    except OSError:
        return None
