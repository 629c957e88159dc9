"""Reading Python files faithfully (encoding, BOM, newlines) and writing them back atomically."""

from __future__ import annotations

import ast
import contextlib
import io
import os
import stat
import tempfile
import tokenize
import warnings
from dataclasses import dataclass
from pathlib import Path


class SourceError(Exception):
    """A file that cannot be read or decoded; the message says why."""


@dataclass(frozen=True)
class SourceFile:
    """A file's bytes as read, its decoded text, and the encoding that round-trips them."""

    path: Path
    raw: bytes
    text: str
    encoding: str


def decode(raw: bytes) -> tuple:
    """(text, encoding) following PEP 263: a BOM or coding cookie, else UTF-8. Newlines are kept."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
    except SyntaxError as error:
        raise SourceError(f"not valid utf-8 and no usable coding cookie ({error.msg})") from None
    try:
        return raw.decode(encoding), encoding
    except UnicodeDecodeError as error:
        raise SourceError(
            f"not valid {encoding} at byte {error.start} (add a coding cookie if the file uses another encoding)"
        ) from None
    except LookupError:
        raise SourceError(f"unknown encoding {encoding!r} in the coding cookie") from None


def quiet_compile(text: str, filename: str) -> ast.AST:
    """Python's own parse of ``text`` (raising ``SyntaxError``), without printing the syntax
    warnings it has about the user's code."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compile(text, filename, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)


def read_source(path: Path) -> SourceFile:
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise SourceError(f"cannot read: {error.strerror or error}") from None
    text, encoding = decode(raw)
    return SourceFile(path, raw, text, encoding)


def write_source(original: SourceFile, text: str) -> None:
    """Replace the file with ``text`` atomically, in its encoding and with its permissions.

    A symbolic link stays a link: the file it points to is replaced. Refuses, leaving the file untouched, if it changed on disk since it was read.
    """
    data = text.encode(original.encoding)
    target = Path(os.path.realpath(original.path))
    try:
        if target.read_bytes() != original.raw:
            raise SourceError("changed on disk while being fixed; not overwritten")
        mode = stat.S_IMODE(target.stat().st_mode)
        handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as error:
        raise SourceError(f"cannot write: {error.strerror or error}") from None
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise SourceError(f"cannot write: {error.strerror or error}") from None
