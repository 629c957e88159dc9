"""Whether the project calls a function of a module only with gradients off, read from disk around it.

A trainer's ``sample`` method that its own module never calls runs where the training script calls
it: ``with torch.no_grad(): outputs = trainer.sample(a, b)`` in ``train.py``. A reader looks for
those calls; so does gpulint. The files looked through are the project's around the module: the
``.py`` files under the folder that holds its package (the nearest folder above it without an
``__init__.py`` and not inside a folder with one), found in :data:`MAX_ENTRIES` folders and code
files at most. A function counts as called only with gradients off when the files there call a
function or method of its name at least once, and every such call, in any of them and in the module
itself, runs with gradients off in its own file
(:meth:`~gpulint.semantic.model.SemanticModel.gradients_off_at`), or right in the body of a function
or method defined at the top of its module or of a class there, whose body runs inside each call of
its name with that call's grad mode (:func:`_runs_as_called`: not async, a generator, decorated, a
special method or ``forward``, a method a framework's base class calls itself, nor switching
gradients on; the call not in a lambda or generator expression), that the project, in the same
sense, calls only with gradients off: ``Trainer.test`` calling ``self.model.test(...)``, itself
called under ``torch.no_grad()`` by ``train.py``, up to :data:`MAX_CALLER_DEPTH` callers deep. A
call in the body of a function whose answer is being sought counts as off (reached only through
calls of that name, it follows one that runs with gradients off, and they stay off down the calls),
but at least one call along the way must run with them off itself: a chain of callers that nothing
starts is no evidence. The function itself must run as called too. Any other mention of the name
(``fn = trainer.sample``, a callback), a notebook that spells it, a file that spells it but cannot
be read, parsed or analysed, a folder that cannot be listed, or a project too large to look through
leaves it undecided: not so (and a result cached for the module stands while the module itself is
unchanged).

What each file calls is read once per process (:class:`_CallIndex`, kept while the file's
modification time and size stay the same), and so is each search folder's list of files (kept while
its folders' modification times stay the same), so a project's modules share the work. Each file and
folder looked at is recorded (:mod:`gpulint.engine.consulted`; a folder by the listing of its code),
so that a result cached for the module is used only while they are unchanged.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

from gpulint.engine.consulted import code_listing, digest_of, digest_of_listing, record
from gpulint.semantic.model import Function, SemanticModel, called_unseen, is_lightning_module
from gpulint.semantic.survey import own_nodes
from gpulint.semantic.project_modules import read_module
from gpulint.semantic.torch_api import GRAD_ON, SET_GRAD_ENABLED

MAX_ENTRIES = 2000
"""The most folders and code files (Python modules and notebooks) looked through for a module's callers."""
MAX_CALLER_DEPTH = 4
"""The most functions followed up a chain of callers (``sample`` called by ``Trainer.sample``,
called by ...) before a call is left undecided."""
GRAD_SWITCHING_NAMES = frozenset(name.rsplit(".", 1)[1] for name in GRAD_ON | SET_GRAD_ENABLED)
"""How code that may switch gradients back on spells it (``enable_grad``, ``set_grad_enabled``)."""

Listing = Tuple[Tuple[Tuple[str, int], ...], Optional[Tuple[Path, ...]], Tuple[Tuple[Path, str], ...]]
"""A search folder's walk: each folder looked at with its modification time, the code files found
(None: too many, or a folder that cannot be listed), and each folder with the digest of its listing."""

_walks: Dict[str, Listing] = {}
_indexes: Dict[Tuple[str, int, int], Optional["_CallIndex"]] = {}
_KEPT = 4096


@dataclass
class _CallIndex:
    """What one file does with each name: for each of its calls of a function or method of that
    name, whether it runs with gradients off, or else the name of the function or method defined at
    the top of the file or of a class there that it is right in the body of (None: none); and the
    names it mentions other than by calling or defining them."""

    calls: Dict[str, List[Tuple[bool, Optional[str]]]] = field(default_factory=dict)
    other_mentions: Set[str] = field(default_factory=set)


def called_only_without_grad(model: SemanticModel, path: str, function: Function) -> bool:
    """Whether the project calls ``function`` (a function or method of the module at ``path``,
    defined at the top of the module or of a class there, that the module does not call by binding
    and that nothing calls without spelling its name) only with gradients off (see the module's
    docstring)."""
    if function.calls or not _defined_at_the_top(model, function) or not _runs_as_called(model, function):
        return False
    if not os.path.isfile(path):
        return False
    return model.derived(_ProjectCallers).decide(path, function.name)


def _defined_at_the_top(model: SemanticModel, function: Function) -> bool:
    parent = model.parent(function.node)
    if isinstance(parent, ast.ClassDef):
        parent = model.parent(parent)
    return isinstance(parent, ast.Module)


class _ProjectCallers:
    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self.own_index: Optional[_CallIndex] = None
        self.decided: Dict[Tuple[str, str], bool] = {}
        self.followed: Dict[Tuple[str, FrozenSet[str]], Tuple[bool, bool]] = {}

    def decide(self, path: str, name: str) -> bool:
        key = (path, name)
        if key not in self.decided:
            self.decided[key] = self._calls(Path(os.path.abspath(path)), name, frozenset()) == (True, True)
        return self.decided[key]

    def _calls(self, own: Path, name: str, sought: FrozenSet[str]) -> Tuple[bool, bool]:
        """Whether the project calls ``name`` and every call runs with gradients off, and whether one
        at least is reached from a call that is not itself in a function being sought (so a chain of
        callers that nothing starts does not count)."""
        if name in sought:
            return True, False
        key = (name, sought)
        if key not in self.followed:
            self.followed[key] = self._follow(own, name, sought | {name})
        return self.followed[key]

    def _follow(self, own: Path, name: str, sought: FrozenSet[str]) -> Tuple[bool, bool]:
        files = _project_files(_search_root(own))
        if files is None:
            return False, False
        started = found = False
        for file in sorted(files, key=lambda file: not (file == own or _indexed(file))):
            if file == own:
                if self.own_index is None:
                    self.own_index = _index_of(self.model)
                index: Optional[_CallIndex] = self.own_index
            elif not spells(file, name):
                continue
            elif file.suffix == ".ipynb":
                return False, False
            else:
                index = _file_index(file)
            if index is None or name in index.other_mentions:
                return False, False
            callers: Set[str] = set()
            for guarded, caller in index.calls.get(name, []):
                found = True
                if guarded:
                    started = True
                elif caller is None or len(sought) > MAX_CALLER_DEPTH:
                    return False, False
                else:
                    callers.add(caller)
            for caller in sorted(callers):
                off, reached = self._calls(own, caller, sought)
                if not off:
                    return False, False
                started = started or reached
        return found, started


def project_code_files(module: Path) -> Optional[Tuple[Path, ...]]:
    """The code files of the project around ``module`` (an absolute path): under the folder that
    holds its package, each folder's listing recorded as consulted; None past :data:`MAX_ENTRIES`,
    or where a folder cannot be listed."""
    return _project_files(_search_root(module))


def _search_root(path: Path) -> Path:
    """The folder that holds the module's package: the nearest one above it without ``__init__.py``
    that is no folder of a package either (``models/unet/model.py`` beside ``models/__init__.py``
    is imported as ``models.unet.model``, ``unet`` a namespace package inside ``models``)."""
    folder = path.parent
    while ((folder / "__init__.py").is_file() or (folder.parent / "__init__.py").is_file()) and folder.parent != folder:
        folder = folder.parent
    return folder


def _project_files(root: Path) -> Optional[Tuple[Path, ...]]:
    """The code files under ``root`` (:func:`~gpulint.engine.consulted.code_listing` of each folder),
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
            subfolders, names = code_listing(folder)
        except OSError:
            return tuple(folders), None, ()
        folders.append((str(folder), modified))
        digests.append((folder, digest_of_listing(subfolders, names)))
        files.extend(folder / name for name in names)
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


def spells(file: Path, name: str) -> bool:
    """Whether the file's text has ``name`` in it (recorded as consulted); a file that cannot be
    read is taken to."""
    try:
        data = file.read_bytes()
    except OSError:
        return True
    record(file, digest_of(data))
    return name.encode("utf-8") in data


def _indexed(file: Path) -> bool:
    """Whether the file's :class:`_CallIndex` is at hand: files already read come first, so that a
    caller that cannot be decided (``main()`` run at the bottom of its script) is found out
    without reading the rest of the project."""
    try:
        status = file.stat()
    except OSError:
        return False
    return (str(file), status.st_mtime_ns, status.st_size) in _indexes


def _file_index(file: Path) -> Optional[_CallIndex]:
    try:
        status = file.stat()
    except OSError:
        return None
    key = (str(file), status.st_mtime_ns, status.st_size)
    if key not in _indexes:
        read = read_module(file)
        if len(_indexes) >= _KEPT:
            _indexes.clear()
        _indexes[key] = _index_of(SemanticModel(read[1], read[0])) if read is not None else None
    return _indexes[key]


def _index_of(model: SemanticModel) -> Optional[_CallIndex]:
    """The module's :class:`_CallIndex`; None where the module is too deeply nested to analyse."""
    index = _CallIndex()
    try:
        called = set()
        for call in model.calls():
            name = _name_of(call.func)
            if name is not None:
                guarded = model.gradients_off_at(*model.span(call)[:2])
                index.calls.setdefault(name, []).append((guarded, None if guarded else _caller_of(model, call)))
                called.add(id(call.func))
        for node in (*model.nodes(ast.Name), *model.nodes(ast.Attribute)):
            name = _name_of(node)
            if name is not None and id(node) not in called:
                index.other_mentions.add(name)
    except RecursionError:
        return None
    return index


def _caller_of(model: SemanticModel, call: ast.Call) -> Optional[str]:
    """The name of the function or method defined at the top of the module or of a class there whose
    body ``call`` is right in (not in a lambda or a function nested in it, which may run elsewhere)."""
    function = model.innermost_function(call)
    if function is None or not _defined_at_the_top(model, function) or not _runs_as_called(model, function):
        return None
    parent = model.parent(call)
    while parent is not None and parent is not function.node:
        if isinstance(parent, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.GeneratorExp)):
            return None
        parent = model.parent(parent)
    return function.name if parent is function.node else None


def _runs_as_called(model: SemanticModel, function: Function) -> bool:
    """Whether the body of ``function`` runs inside each call of its name, with the call's grad mode:
    a plain function, not one Python, torch or a framework may call unseen (:func:`~gpulint.semantic.model.called_unseen`,
    a method of a class built on a Lightning module, whose ``training_step`` Lightning calls), async (its body runs when awaited), a generator (when iterated), decorated
    (by ``@torch.enable_grad()`` or a wrapper that may be anything), nor one that may switch
    gradients on (a name that resolves to, or is spelt as, :data:`GRAD_ON` or
    :data:`SET_GRAD_ENABLED`, or a private setter of torch)."""
    node = function.node
    if not isinstance(node, ast.FunctionDef) or node.decorator_list or called_unseen(function.name):
        return False
    if function.owner is not None and _framework_may_call(model, function.owner.node, frozenset()):
        return False
    for part in own_nodes(node.body):
        if isinstance(part, (ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(part, (ast.Name, ast.Attribute)) and _may_switch_grad_on(model, part):
            return False
    return True


def _framework_may_call(model: SemanticModel, cls: ast.ClassDef, seen: FrozenSet[int]) -> bool:
    """Whether a base of ``cls`` (through the module's own classes) is a framework's class that calls
    its subclasses' methods itself (a Lightning module: ``training_step``, ``on_*`` hooks)."""
    for base in cls.bases:
        own = model.defined_class(base)
        if own is not None:
            if id(own) not in seen and _framework_may_call(model, own, seen | {id(cls)}):
                return True
        elif any(is_lightning_module(name) for name in model.qualified_names(base)):
            return True
    return False


def _may_switch_grad_on(model: SemanticModel, node: ast.AST) -> bool:
    spelt = _name_of(node)
    if spelt in GRAD_SWITCHING_NAMES or (spelt or "").lstrip("_") in GRAD_SWITCHING_NAMES:
        return True
    return bool(model.resolved_names(node) & (GRAD_ON | SET_GRAD_ENABLED))


def _name_of(node: ast.AST) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None
