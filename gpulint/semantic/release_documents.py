"""Whether the project's documents give a loaded file as a download: release weights a README names.

A reader told "Download `decoder.pth` from the release page and put it under `models/`" knows that
``torch.load("models/decoder.pth")`` reads weights the authors published, saved wherever they were
saved, not a checkpoint the program wrote. So does gpulint. Every string the path may be
(:func:`~gpulint.semantic.path_strings.path_strings`) must end in a file name the code spells in
full, and each such name must appear, as a whole name, in a link of one of the project's documents
(whose file it fetches: ``https://.../releases/download/v1/decoder.pth``) or in a paragraph of one
(a code block being one of its own) that speaks of a download: it holds a word starting with
"download", or runs ``wget``, ``curl`` or ``gdown``. A link elsewhere in the paragraph is not enough
(a changelog's link to a commit that "adds checkpoint.pt"). The documents are the README files,
pages (``.md``, ``.rst``) and shell scripts (:func:`~gpulint.engine.consulted.is_document`) directly
in the module's folder and in each folder above it, :data:`MAX_LEVELS` at most, up to the project's
top (the first holding one of :data:`PROJECT_MARKERS`).

The project must not write a file of that name itself, or the document may name what its own
training writes: no save in the module whose path may end in the name (a part the code does not
spell may be anything), and no line of a code file under the document's folder that spells the
name and saves (``torch.save(state, "decoder.pth")``, a ``--save_path`` default); a folder too
large to walk (:func:`~gpulint.semantic.project_files.project_files`) leaves it undecided: not so.
Each document, code file and folder read is recorded as consulted, so a cached result stands only
while they are unchanged.
"""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path
from typing import Callable, Dict, FrozenSet, List, Optional, Set, Tuple

from gpulint.engine.consulted import digest_of, digest_of_listing, is_document, project_listing, record
from gpulint.semantic.model import SemanticModel
from gpulint.semantic.path_strings import UNKNOWN, path_strings, segments
from gpulint.semantic.project_files import project_files
from gpulint.semantic.read_back import ReadBack

MAX_LEVELS = 4
"""How many folders above the module's own are looked in for documents."""
MAX_BYTES = 1_000_000
"""Larger documents and code files are not read (a code file that is not read may save anything)."""
PROJECT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")
"""What the top folder of a project holds: no document above it is the project's."""
DOWNLOAD_WORDS = re.compile(r"\bdownload|\b(?:wget|curl|gdown)\b", re.IGNORECASE)
"""How a paragraph speaks of a download: "download..." or a downloader's command."""
LINK = re.compile(r"\b[a-z][\w+.-]*://[^\s<>()\[\]\"'`]+", re.IGNORECASE)
"""A URL, up to the first character that ends it in text or markup."""
CODE_FENCES = ("```", "~~~")
SAVE_WORD = "save"

_Stamp = Tuple[str, int, int]
_documents_read: Dict[_Stamp, Tuple[str, Tuple[str, ...]]] = {}
"""Each document read in this process, by path, modification time and size: its digest and the
passages that give a file as a download."""
_code_read: Dict[_Stamp, Tuple[str, Tuple[str, ...]]] = {}
"""Each code file read in this process: its digest and the lines that spell a save."""
_KEPT = 4096


def named_as_a_download(model: SemanticModel, loaded: ast.expr) -> bool:
    """Whether the project's documents give the file ``loaded`` names as a download that the project
    does not write itself (see the module's docstring)."""
    if model.path is None:
        return False
    names = _file_names(model, loaded)
    if not names or _saved_by_the_module(model, names):
        return False
    module_folder = Path(os.path.abspath(model.path)).parent
    return all(_named_by_a_document(module_folder, name) for name in names)


def _file_names(model: SemanticModel, loaded: ast.expr) -> FrozenSet[str]:
    """The file name each string the path may be ends in; empty where one is not spelled in full."""
    names: Set[str] = set()
    for value in path_strings(model, loaded):
        parts = segments(value)
        if not parts or UNKNOWN in parts[-1] or not parts[-1].strip(". "):
            return frozenset()
        names.add(parts[-1])
    return frozenset(names)


def _saved_by_the_module(model: SemanticModel, names: FrozenSet[str]) -> bool:
    """Whether a save of the module writes a path that may end in one of ``names``."""
    for _, _, saved in model.derived(ReadBack).saves:
        for written in path_strings(model, saved) if saved is not None else frozenset({UNKNOWN}):
            parts = segments(written) or [UNKNOWN]
            pattern = ".*".join(re.escape(piece) for piece in parts[-1].split(UNKNOWN))
            if any(re.fullmatch(pattern, name, re.DOTALL) for name in names):
                return True
    return False


def _named_by_a_document(module_folder: Path, name: str) -> bool:
    """Whether a document in the module's folder or one above it gives ``name`` as a download, and
    no code file under that document's folder saves a file of that name."""
    spelled = _spelling(name)
    for folder in _document_folders(module_folder):
        for document in _documents(folder):
            if any(spelled.search(passage) for passage in _download_passages(document)):
                if not _saved_in_the_project(folder, name):
                    return True
    return False


def _spelling(name: str) -> re.Pattern[str]:
    """``name`` as a whole file name: not part of a longer name (``decoder.pth`` in ``decoder.pth.tar``
    or ``old_decoder.pth``)."""
    return re.compile(r"(?<![\w.-])" + re.escape(name) + r"(?![\w-]|\.\w)")


def _document_folders(module_folder: Path) -> List[Path]:
    """The module's folder and those above it, :data:`MAX_LEVELS` at most, up to the project's top
    (each marker looked for is recorded)."""
    folders: List[Path] = []
    folder = module_folder
    while len(folders) <= MAX_LEVELS:
        folders.append(folder)
        if any(_marks_the_top(folder / marker) for marker in PROJECT_MARKERS) or folder.parent == folder:
            break
        folder = folder.parent
    return folders


def _marks_the_top(path: Path) -> bool:
    try:
        if path.is_dir():
            record(path, digest_of_listing(*project_listing(path)))
            return True
        if path.is_file():
            record(path, digest_of(path.read_bytes()))
            return True
    except OSError:
        return False
    record(path, None)
    return False


def _documents(folder: Path) -> List[Path]:
    """The documents directly in ``folder`` (its listing recorded); none where it cannot be listed."""
    try:
        subfolders, names = project_listing(folder)
    except OSError:
        return []
    record(folder, digest_of_listing(subfolders, names))
    return [folder / name for name in names if is_document(name)]


def _download_passages(document: Path) -> Tuple[str, ...]:
    """The passages of ``document`` that give a file as a download: each paragraph that speaks of
    one (:data:`DOWNLOAD_WORDS`) and each link (:data:`LINK`, whose file it fetches), read once per
    process while the file is unchanged; none where it cannot be read or is too large."""
    read = _read(document, _documents_read, _passages_of)
    return read if read is not None else ()


def _passages_of(text: str) -> Tuple[str, ...]:
    paragraphs = [paragraph for paragraph in _paragraphs(text) if DOWNLOAD_WORDS.search(paragraph)]
    return (*paragraphs, *LINK.findall(text))


def _paragraphs(text: str) -> List[str]:
    """The text's paragraphs: runs of lines between blank lines, a fence (a line starting with
    ```` ``` ```` or ``~~~``) closing one too, so that a code block showing how to load a file is not
    read with the sentence after it."""
    paragraphs: List[str] = []
    lines: List[str] = []
    for line in text.splitlines():
        fence = line.lstrip().startswith(CODE_FENCES)
        if (fence or not line.strip()) and lines:
            paragraphs.append("\n".join(lines))
            lines = []
        if not fence and line.strip():
            lines.append(line)
    if lines:
        paragraphs.append("\n".join(lines))
    return paragraphs


def _saved_in_the_project(folder: Path, name: str) -> bool:
    """Whether a code file under ``folder`` spells ``name`` on a line that saves; taken to where the
    folder is too large to walk or a file cannot be read."""
    files = project_files(folder)
    if files is None:
        return True
    for file in files:
        lines = _read(file, _code_read, _lines_that_save)
        if lines is None or any(name in line for line in lines):
            return True
    return False


def _lines_that_save(text: str) -> Tuple[str, ...]:
    return tuple(line for line in text.splitlines() if SAVE_WORD in line.lower())


def _read(
    file: Path, kept: Dict[_Stamp, Tuple[str, Tuple[str, ...]]], extract: Callable[[str], Tuple[str, ...]]
) -> Optional[Tuple[str, ...]]:
    """What ``extract`` takes from the file's text, kept by the file's stamp and recorded with its
    digest; None where the file cannot be read or is larger than :data:`MAX_BYTES`."""
    try:
        status = file.stat()
        stamp = (str(file), status.st_mtime_ns, status.st_size)
        if stamp not in kept:
            if status.st_size > MAX_BYTES:
                return None
            data = file.read_bytes()
            if len(kept) >= _KEPT:
                kept.clear()
            kept[stamp] = (digest_of(data), extract(data.decode("utf-8", "replace")))
    except OSError:
        return None
    digest, extracted = kept[stamp]
    record(file, digest)
    return extracted

