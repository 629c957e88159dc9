"""Whether another module of the project saves a file of a given name, read from disk around the module.

A loader that hands back what it loads (``Gs = torch.load('%s/Gs.pth' % dir)`` ...
``return Gs, Zs, reals``) leaves the tensors' device to its callers; where the training script
beside it writes that very file (``torch.save(Gs, '%s/Gs.pth' % opt.out_)``), those callers
are the program that put the tensors there, and may rely on them coming back to the same device.
A reader opens the training script; so does gpulint. The files looked through are the project's
Python modules around the module (:func:`~gpulint.semantic.project_callers.project_code_files`);
a module saves a file of a name when it calls ``torch.save`` with a path argument holding a string
whose last part is that name (``'%s/Gs.pth'``, ``os.path.join(out, "Gs.pth")``). Each file
looked at is recorded as consulted, so that a result cached for the module is used only while
they are unchanged.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import AbstractSet

from gpulint.semantic.project_callers import project_code_files, spells
from gpulint.semantic.project_modules import read_module
from gpulint.semantic.read_back import saved_path
from gpulint.semantic.torch_api import TORCH_SAVE


def saved_by_another_module(path: str, names: AbstractSet[str]) -> bool:
    """Whether a Python module of the project around the module at ``path``, other than that
    module, saves with ``torch.save`` a file whose name is one of ``names`` (see the module's docstring)."""
    if not names or not os.path.isfile(path):
        return False
    own = Path(os.path.abspath(path))
    files = project_code_files(own)
    if files is None:
        return False
    for file in files:
        if file == own or file.suffix != ".py" or not any(spells(file, name) for name in names):
            continue
        read = read_module(file)
        if read is not None and _saves_a_file_named(read[1], names):
            return True
    return False


def _saves_a_file_named(tree: ast.Module, names: AbstractSet[str]) -> bool:
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _is_torch_save(node.func)):
            continue
        target = saved_path(node)
        if target is None:
            continue
        for part in ast.walk(target):
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                if part.value.replace("\\", "/").rsplit("/", 1)[-1] in names:
                    return True
    return False


def _is_torch_save(func: ast.expr) -> bool:
    """Whether the call is spelt ``torch.save`` (another module's imports are not followed)."""
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and f"{func.value.id}.{func.attr}" == TORCH_SAVE

