"""``[tool.gpulint]`` in ``pyproject.toml``, command-line overrides, and the settings they resolve to."""

from __future__ import annotations

import fnmatch
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, FrozenSet, Mapping, Optional, Sequence, Set, Tuple

from gpulint.rules import ALL_CODES
from gpulint.frontend.selection import SelectionError, SelectionLayer, matching_codes, resolve

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

DEFAULT_EXCLUDE: Tuple[str, ...] = (
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".tox", ".nox", ".eggs", "*.egg-info",
    "build", "dist", "__pycache__", "node_modules", "site-packages", "__pypackages__",
    ".mypy_cache", ".pytest_cache", ".ruff_cache", ".gpulint_cache", ".ipynb_checkpoints",
)
"""Directory and file names skipped during discovery unless ``exclude`` replaces them."""

_LIST_KEYS = ("select", "ignore", "extend-select", "exclude", "extend-exclude")
RULE_OPTIONS = {
    "prefer-inference-mode": bool, "report-inference-in-tests": bool, "report-inference-in-exports": bool,
    "report-loads-in-tests": bool,
}
"""Settings that rules read, with their types."""
KNOWN_KEYS = frozenset({*_LIST_KEYS, "per-file-ignores", "unsafe-fixes", "cache-dir", *RULE_OPTIONS})
DEFAULT_CACHE_DIR = ".gpulint_cache"


class ConfigError(Exception):
    """A configuration that cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class FileConfig:
    """What one ``[tool.gpulint]`` table says; patterns are relative to ``root``."""

    root: Path
    source: Optional[Path] = None
    selection: SelectionLayer = field(default_factory=SelectionLayer)
    exclude: Optional[Tuple[str, ...]] = None
    extend_exclude: Tuple[str, ...] = ()
    per_file_ignores: Mapping[str, Tuple[str, ...]] = field(default_factory=dict)
    unsafe_fixes: Optional[bool] = None
    options: Mapping[str, object] = field(default_factory=dict)
    cache_dir: Optional[str] = None


@dataclass(frozen=True)
class Overrides:
    """What the command line says; it wins over the file."""

    selection: SelectionLayer = field(default_factory=SelectionLayer)
    exclude: Optional[Tuple[str, ...]] = None
    extend_exclude: Tuple[str, ...] = ()
    unsafe_fixes: Optional[bool] = None
    config_file: Optional[Path] = None


def _gpulint_table(path: Path) -> Optional[dict]:
    try:
        with path.open("rb") as stream:
            document = tomllib.load(stream)
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    table = document.get("tool", {}).get("gpulint")
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.gpulint] must be a table")
    return table


def find_pyproject(start: Path) -> Optional[Path]:
    """The nearest ``pyproject.toml`` at or above ``start`` that has a ``[tool.gpulint]`` table."""
    directory = start.resolve()
    for candidate_dir in (directory, *directory.parents):
        candidate = candidate_dir / "pyproject.toml"
        if candidate.is_file() and _gpulint_table(candidate) is not None:
            return candidate
    return None


def _string_list(path: Path, key: str, value: object) -> Tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{path}: [tool.gpulint] {key} must be a list of strings")
    return tuple(value)


def load_file_config(path: Path) -> FileConfig:
    """Read and validate ``[tool.gpulint]`` from ``path`` (an empty config if the table is absent)."""
    table = _gpulint_table(path) or {}
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(
            f"{path}: unknown key(s) in [tool.gpulint]: {', '.join(unknown)} (known: {', '.join(sorted(KNOWN_KEYS))})"
        )
    lists = {key: _string_list(path, key, table[key]) for key in _LIST_KEYS if key in table}
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{path}: [tool.gpulint] per-file-ignores must be a table of pattern = [codes]")
    per_file_ignores = {pattern: _string_list(path, f"per-file-ignores.{pattern!r}", codes) for pattern, codes in per_file.items()}
    unsafe_fixes = table.get("unsafe-fixes")
    if unsafe_fixes is not None and not isinstance(unsafe_fixes, bool):
        raise ConfigError(f"{path}: [tool.gpulint] unsafe-fixes must be true or false")
    cache_dir = table.get("cache-dir")
    if cache_dir is not None and not isinstance(cache_dir, str):
        raise ConfigError(f"{path}: [tool.gpulint] cache-dir must be a string")
    options = {}
    for key, kind in RULE_OPTIONS.items():
        if key in table:
            if not isinstance(table[key], kind):
                raise ConfigError(f"{path}: [tool.gpulint] {key} must be a {kind.__name__}")
            options[key] = table[key]
    selection = SelectionLayer(lists.get("select"), lists.get("extend-select", ()), lists.get("ignore", ()))
    try:
        selection.validate(ALL_CODES)
        for codes in per_file_ignores.values():
            SelectionLayer(ignore=codes).validate(ALL_CODES)
    except SelectionError as error:
        raise ConfigError(f"{path}: [tool.gpulint] {error}") from None
    return FileConfig(
        root=path.parent.resolve(),
        source=path,
        selection=selection,
        exclude=lists.get("exclude"),
        extend_exclude=lists.get("extend-exclude", ()),
        per_file_ignores=per_file_ignores,
        unsafe_fixes=unsafe_fixes,
        options=options,
        cache_dir=cache_dir,
    )


def _matches(patterns: Sequence[str], path: Path, root: Path) -> bool:
    try:
        resolved = path.resolve()
    except (OSError, RuntimeError):  # a link that loops is matched where it lies
        resolved = path.absolute()
    try:
        relative = resolved.relative_to(root).as_posix()
    except ValueError:
        relative = path.as_posix()
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if pattern.startswith("./"):
            pattern = pattern[2:]
        if fnmatch.fnmatchcase(path.name, pattern) or fnmatch.fnmatchcase(relative, pattern):
            return True
    return False


@dataclass(frozen=True)
class Settings:
    """The effective settings for the files under one configuration root."""

    root: Path
    enabled: FrozenSet[str]
    unsafe_fixes: bool
    exclude: Tuple[str, ...]
    per_file_ignores: Mapping[str, FrozenSet[str]]
    source: Optional[Path] = None
    options: Mapping[str, object] = field(default_factory=dict)
    """Rule settings such as ``prefer-inference-mode``."""
    cache_dir: Path = Path(DEFAULT_CACHE_DIR)
    """Where results are cached: ``cache-dir`` relative to the configuration root."""

    def is_excluded(self, path: Path) -> bool:
        return _matches(self.exclude, path, self.root)

    def is_excluded_with_parents(self, path: Path) -> bool:
        """Whether ``path`` or a folder it lies in, up to the configuration root, is excluded
        (what ``--force-exclude`` asks of a file named on the command line, as in ruff)."""
        resolved = path.resolve()
        if self.is_excluded(resolved):
            return True
        for parent in resolved.parents:
            if parent == self.root or self.root not in parent.parents:
                return False
            if self.is_excluded(parent):
                return True
        return False

    def codes_for(self, path: Path) -> Tuple[str, ...]:
        """The codes of the rules that run on ``path``: those enabled, less its per-file ignores."""
        ignored: Set[str] = set()
        for pattern, codes in self.per_file_ignores.items():
            if _matches([pattern], path, self.root):
                ignored |= codes
        return tuple(code for code in ALL_CODES if code in self.enabled and code not in ignored)


def resolve_settings(file_config: FileConfig, overrides: Overrides) -> Settings:
    try:
        overrides.selection.validate(ALL_CODES)
    except SelectionError as error:
        raise ConfigError(str(error)) from None
    exclude = overrides.exclude if overrides.exclude is not None else file_config.exclude
    per_file: Dict[str, FrozenSet[str]] = {
        pattern: frozenset().union(*(matching_codes(code, ALL_CODES) for code in codes))
        for pattern, codes in file_config.per_file_ignores.items()
    }
    unsafe = overrides.unsafe_fixes if overrides.unsafe_fixes is not None else file_config.unsafe_fixes
    return Settings(
        root=file_config.root,
        enabled=resolve([file_config.selection, overrides.selection], ALL_CODES),
        unsafe_fixes=bool(unsafe),
        exclude=(*(DEFAULT_EXCLUDE if exclude is None else exclude), *file_config.extend_exclude, *overrides.extend_exclude),
        per_file_ignores=per_file,
        source=file_config.source,
        options=dict(file_config.options),
        cache_dir=file_config.root / (file_config.cache_dir or DEFAULT_CACHE_DIR),
    )


def settings_for(path: Path, overrides: Overrides) -> Settings:
    """Settings for a path named on the command line: ``--config``, else the nearest pyproject.toml."""
    config_path = overrides.config_file
    if config_path is None:
        config_path = find_pyproject(path if path.is_dir() else path.parent)
    if config_path is None:
        return resolve_settings(FileConfig(root=Path.cwd().resolve()), overrides)
    if not config_path.is_file():
        raise ConfigError(f"{config_path}: no such configuration file")
    return resolve_settings(load_file_config(config_path), overrides)
