"""The project's code files under a folder, walked once per process and recorded as consulted.

A check that reads the rest of a project (the callers of a module's function, the files a
document names) walks a folder's tree: its subfolders that may hold the project's code
(:func:`~gpulint.engine.consulted.project_listing`) and the Python modules and notebooks in them,
:data:`MAX_ENTRIES` folders and files at most. A walk is kept while each folder it looked at keeps
its modification time, and each folder's listing is recorded, so that a result cached for a module
is used only while no file is added to, removed from or renamed in them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from gpulint.engine.consulted import CODE_SUFFIXES, digest_of_listing, project_listing, record

MAX_ENTRIES = 2000
"""The most folders and code files (Python modules and notebooks) looked through under a folder."""

Listing = Tuple[Tuple[Tuple[str, int], ...], Optional[Tuple[Path, ...]], Tuple[Tuple[Path, str], ...]]
"""A folder's walk: each folder looked at with its modification time, the code files found
(None: too many, or a folder that cannot be listed), and each folder with the digest of its listing."""

_walks: Dict[str, Listing] = {}
_KEPT = 4096


def project_files(root: Path) -> Optional[Tuple[Path, ...]]:
    """The code files under ``root`` (from :func:`~gpulint.engine.consulted.project_listing` of each folder),
    each folder's listing recorded; None past :data:`MAX_ENTRIES`, or where a folder cannot be listed."""
    key = str(root)
    walked = _walks.get(key)
    if walked is None or not _unchanged(walked[0]):
        walked = _walk(root)
        if len(_walks) >= _KEPT:
            _walks.clear()
        _walks[key] = walked
    for folder, digest in walked[2]:
        record(folder, digest)
    return walked[1]


def _walk(root: Path) -> Listing:
    """The walk of ``root``; one that stops (too many entries, a folder that cannot be listed)
    keeps the folders it looked at, to be taken again while they are unchanged, and records none:
    its module stays undecided while the module itself is unchanged."""
    folders: List[Tuple[str, int]] = []
    files: List[Path] = []
    digests: List[Tuple[Path, str]] = []
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            modified = folder.stat().st_mtime_ns
            subfolders, names = project_listing(folder)
        except OSError:
            return tuple(folders), None, ()
        folders.append((str(folder), modified))
        digests.append((folder, digest_of_listing(subfolders, names)))
        files.extend(folder / name for name in names if name.endswith(CODE_SUFFIXES))
        pending.extend(folder / name for name in reversed(subfolders))
        if len(folders) + len(files) > MAX_ENTRIES:
            return tuple(folders), None, ()
    return tuple(folders), tuple(files), tuple(digests)


def _unchanged(folders: Tuple[Tuple[str, int], ...]) -> bool:
    """Whether each folder walked still has the modification time it had (no entry added, removed
    or renamed in it since)."""
    try:
        return all(os.stat(folder).st_mtime_ns == modified for folder, modified in folders)
    except OSError:
        return False
