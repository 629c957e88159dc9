"""The result cache: what checking a file found, keyed by everything the finding depends on.

An entry's key hashes the file's name and content, gpulint's version, the source of the gpulint
package that produced it (so an edited rule misses even under the same version) and the job (rules,
unsafe fixes, rule options), so any change misses. The key is an HMAC under a secret kept outside
any project, in the user's cache folder (``$XDG_CACHE_HOME/gpulint/secret``, created on first use):
entries written by another installation, or committed to a repository, are never found, so a
result is only ever read from a cache this installation wrote. Without a usable secret nothing is
cached. Entries are JSON files written through a temporary file and an atomic rename, so
concurrent runs never see half an entry; an entry that does not read back exactly (corrupt,
truncated, another format) is ignored and rewritten, never trusted. The directory carries a
``.gitignore`` so it never shows up in version control.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import secrets
import tempfile
from pathlib import Path
from typing import Any, List, Mapping, Optional, Protocol, Sequence, Tuple

from gpulint import __version__
from gpulint.engine.consulted import unchanged
from gpulint.engine.diagnostics import Applicability, Diagnostic, Edit, Fix, Position

FORMAT = 4
"""Bumped whenever an entry's layout changes."""

ErrorFields = Tuple[str, Optional[int], Optional[int], Optional[int]]
"""A cached per-file error: message, line, column, notebook cell."""


class CacheableJob(Protocol):
    @property
    def codes(self) -> Sequence[str]: ...
    @property
    def unsafe_fixes(self) -> bool: ...
    @property
    def options(self) -> Any: ...


def _diagnostic_to_json(diagnostic: Diagnostic) -> dict:
    fix = diagnostic.fix
    return {
        "start": [diagnostic.start.line, diagnostic.start.column],
        "end": [diagnostic.end.line, diagnostic.end.column],
        "code": diagnostic.code,
        "name": diagnostic.name,
        "message": diagnostic.message,
        "fix_note": diagnostic.fix_note,
        "fix": None if fix is None else {
            "title": fix.title,
            "applicability": fix.applicability.value,
            "edits": [[edit.start, edit.end, edit.content] for edit in fix.edits],
            "isolation": fix.isolation,
            "note": fix.note,
        },
    }


def _diagnostic_from_json(path: str, entry: dict) -> Diagnostic:
    fix = entry["fix"]
    return Diagnostic(
        path=path,
        start=Position(*map(int, entry["start"])),
        end=Position(*map(int, entry["end"])),
        code=str(entry["code"]),
        name=str(entry["name"]),
        message=str(entry["message"]),
        fix_note=entry["fix_note"],
        fix=None if fix is None else Fix(
            str(fix["title"]),
            Applicability(fix["applicability"]),
            tuple(Edit(int(start), int(end), str(content)) for start, end, content in fix["edits"]),
            fix["isolation"],
            fix["note"],
        ),
    )


@functools.lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """A hash of every module of the installed gpulint package: the code that produces a result."""
    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for module in sorted(package.rglob("*.py")):
        digest.update(module.relative_to(package).as_posix().encode() + b"\0")
        digest.update(module.read_bytes() + b"\0")
    return digest.hexdigest()


def secret_path() -> Path:
    """Where this installation's cache secret lives: the user's cache folder, never a project."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpulint" / "secret"


@functools.lru_cache(maxsize=None)
def _read_or_create_secret(path: Path) -> Optional[bytes]:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    except OSError:
        return None
    else:
        with os.fdopen(descriptor, "w", encoding="ascii") as stream:
            stream.write(secrets.token_hex(32))
    try:
        secret = path.read_text(encoding="ascii").strip()
    except (OSError, ValueError):
        return None
    return secret.encode() if len(secret) == 64 else None


def installation_secret() -> Optional[bytes]:
    """The secret that keys this installation's cache entries; None if it cannot be kept."""
    return _read_or_create_secret(secret_path())


class ResultCache:
    """Cached check results under one directory (``cache-dir``)."""

    def __init__(self, directory: Path, secret: bytes) -> None:
        self.directory = directory
        self.secret = secret

    @classmethod
    def open(cls, directory: Path) -> Optional["ResultCache"]:
        """The cache under ``directory``, or None when this installation has no usable secret."""
        secret = installation_secret()
        return None if secret is None else cls(directory, secret)

    def key(self, path: str, text: str, job: CacheableJob) -> str:
        settings = json.dumps([
            FORMAT, __version__, code_fingerprint(), path, os.path.abspath(path), sorted(job.codes), job.unsafe_fixes,
            sorted(dict(job.options).items()),
        ])
        digest = hmac.new(self.secret, settings.encode(), hashlib.sha256)
        digest.update(b"\0")
        digest.update(text.encode("utf-8", "surrogatepass"))
        return digest.hexdigest()

    def _entry(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def load(self, key: str) -> Optional[Tuple[List[Diagnostic], Optional[ErrorFields]]]:
        """The diagnostics and error stored under ``key``; None on a miss or an unreadable entry."""
        try:
            entry = json.loads(self._entry(key).read_text(encoding="utf-8"))
            if entry["key"] != key or entry["format"] != FORMAT:
                return None
            if not unchanged(entry["consulted"]):
                return None
            diagnostics = [_diagnostic_from_json(entry["path"], item) for item in entry["diagnostics"]]
            error = entry["error"]
            return diagnostics, None if error is None else (str(error[0]), error[1], error[2], error[3])
        except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
            return None

    def store(
        self, key: str, path: str, diagnostics: Sequence[Diagnostic], error: Optional[ErrorFields],
        consulted: Optional[Mapping[str, Optional[str]]] = None,
    ) -> None:
        """Write an entry atomically; a cache that cannot be written is silently not used. ``consulted``:
        the other files the result was decided on, each with a digest of its content (None: absent),
        which must be the same for the entry to be used."""
        entry = {
            "format": FORMAT,
            "key": key,
            "path": path,
            "consulted": dict(consulted or {}),
            "diagnostics": [_diagnostic_to_json(d) for d in diagnostics],
            "error": None if error is None else list(error),
        }
        target = self._entry(key)
        try:
            self._prepare(target.parent)
            descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
                    json.dump(entry, stream)
                os.replace(temporary, target)
            except BaseException:
                os.unlink(temporary)
                raise
        except OSError:
            return

    def _prepare(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Created by gpulint: the result cache.\n*\n", encoding="utf-8")
