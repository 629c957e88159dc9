"""The ``[tool.gpulint]`` settings of each open document, read again whenever a ``pyproject.toml``
on the way up from it changes.

Settings are cached by folder, with the size and modification time of every ``pyproject.toml``
from that folder up: a check costs a few ``stat`` calls, and an edited configuration is read on the
next check even by a client that does not report file changes. A configuration that cannot be
used is an error the server reports to the user; the document is then checked with the defaults.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional, Tuple

from gpulint.frontend.config import ConfigError, FileConfig, Overrides, Settings, resolve_settings, settings_for

Signature = Tuple[Tuple[str, int, int], ...]


@dataclass(frozen=True)
class Resolved:
    """The settings for a folder, or the error that made the defaults stand in for them."""

    settings: Settings
    error: Optional[str] = None


class SettingsCache:
    """Settings by folder, each checked against the ``pyproject.toml`` files it was read from."""

    def __init__(self, fallback_root: Path) -> None:
        self.fallback_root = fallback_root
        self._cache: Dict[Path, Tuple[Signature, Resolved]] = {}

    def for_path(self, path: Optional[Path]) -> Resolved:
        """The settings for a document at ``path`` (None: a document not saved to disk)."""
        folder = path.parent if path is not None else self.fallback_root
        signature = _signature(folder)
        cached = self._cache.get(folder)
        if cached is not None and cached[0] == signature:
            return cached[1]
        resolved = self._resolve(folder)
        self._cache[folder] = (signature, resolved)
        return resolved

    def clear(self) -> None:
        self._cache.clear()

    def _resolve(self, folder: Path) -> Resolved:
        try:
            return Resolved(settings_for(folder, Overrides()))
        except ConfigError as error:
            return Resolved(resolve_settings(FileConfig(root=folder), Overrides()), str(error))


def _signature(folder: Path) -> Signature:
    """``(path, size, modification time)`` of each ``pyproject.toml`` from ``folder`` up."""
    found = []
    directory = folder.resolve()
    for candidate_dir in (directory, *directory.parents):
        candidate = os.path.join(candidate_dir, "pyproject.toml")
        try:
            status = os.stat(candidate)
        except OSError:
            continue
        found.append((candidate, status.st_size, status.st_mtime_ns))
    return tuple(found)
