"""The other files a file's result was decided on, so that a cached result is used only while they
are unchanged.

A check may read files besides the one it checks (:mod:`gpulint.semantic.project_modules` reads the
project modules a file imports). While a :func:`recording_consulted` block is open, each file looked
for is recorded with a digest of its content, or None where it is absent; :func:`unchanged` tells
whether they all read the same again (and the absent ones are still absent).
"""

from __future__ import annotations

import hashlib
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Dict, Iterable, Iterator, Mapping, Optional

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


def digest_of_listing(names: Iterable[str]) -> str:
    """The digest a folder is recorded with: of the sorted names of its entries."""
    return digest_of("\n".join(sorted(names)).encode("utf-8", "surrogateescape"))


def unchanged(consulted: Mapping[str, Optional[str]]) -> bool:
    """Whether every file recorded has the same content again (and every absent one is still absent)."""
    return all(_current_digest(Path(path)) == digest for path, digest in consulted.items())


def _current_digest(path: Path) -> Optional[str]:
    try:
        if path.is_dir():
            return digest_of_listing(entry.name for entry in path.iterdir())
        return digest_of(path.read_bytes()) if path.is_file() else None
    except OSError:
        return None
