"""Whether a path names a published artifact by how the code spells it.

A reader knows ``model_zoo/dncnn_25.pth`` for release weights without opening the file: it lies in
a model zoo (the folder projects keep downloaded pretrained models in) or in torch.hub's download
cache (``~/.cache/torch/hub/checkpoints/``), or it is named as
``torch.hub`` names releases (``resnet50-19c8e357.pth``), or for weights converted from Caffe
(``vgg16_caffe.pth``: a framework without torch tensors, so a conversion script wrote them). Every
string the path may be (:func:`~gpulint.semantic.path_strings.path_strings`) must be one, and the
module must write no such file itself with ``torch.save``, nor any file whose path it does not
spell in full (then it may be the program's own checkpoint, whatever its name).
"""

from __future__ import annotations

import ast
import re
from typing import List

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.path_strings import UNKNOWN, path_strings, segments
from gpulint.semantic.read_back import ReadBack
from gpulint.semantic.torch_api import HUB_HASHED_FILE

MODEL_ZOO_FOLDERS = frozenset({"model_zoo", "modelzoo", "model-zoo"})
"""Folders named for a collection of published pretrained models."""
HUB_DOWNLOADS = ("hub", "checkpoints")
"""The folders of torch.hub's download cache (``~/.cache/torch/hub/checkpoints``), where only
published weights land."""
CONVERTED_FROM = frozenset({"caffe"})
"""Words of a file name that say the weights were converted from a framework without torch tensors."""
NAME_WORD = re.compile(r"[a-z]+")
DATE_LIKE = re.compile(r"jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|\d{6,}[a-f]$")
"""A hex-looking run that is a date (``05feb2024``, ``20231105b``), not a hash."""


def names_a_published_file(model: SemanticModel, path: ast.expr) -> bool:
    """Whether every string ``path`` may be names a published file (see the module's docstring)."""
    loaded = path_strings(model, path)
    if not all(_published(value) for value in loaded):
        return False
    for _, _, saved in model.derived(ReadBack).saves:
        written = path_strings(model, saved) if saved is not None else frozenset({UNKNOWN})
        if written & loaded or any(UNKNOWN in value or _published(value) for value in written):
            return False
    return True


def _published(path: str) -> bool:
    parts = _normalised(segments(path))
    if not parts or parts == [UNKNOWN]:
        return False
    *folders, name = parts
    if any(folder.lower() in MODEL_ZOO_FOLDERS for folder in folders):
        return True
    if any(pair == HUB_DOWNLOADS for pair in zip(folders, folders[1:])):
        return True
    hashed = re.search(HUB_HASHED_FILE, name)
    if hashed and not DATE_LIKE.search(hashed.group(1)):
        return True
    return bool(CONVERTED_FROM & set(NAME_WORD.findall(name.lower())))


def _normalised(parts: List[str]) -> List[str]:
    """The path's parts with ``folder/..`` taken out; a ``..`` after an unknown part (which may hold
    any number of folders) or at the start leaves every folder before it unknown."""
    kept: List[str] = []
    for part in parts:
        if part == ".." and kept and UNKNOWN not in kept[-1]:
            kept.pop()
        elif part == "..":
            kept = [UNKNOWN]
        else:
            kept.append(part)
    return kept
