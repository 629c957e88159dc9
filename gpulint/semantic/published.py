"""Whether a path names a published artifact by how the code spells it.

A reader knows ``model_zoo/dncnn_25.pth`` for release weights without opening the file: it lies in
a model zoo (the folder projects keep downloaded pretrained models in), or it is named as
``torch.hub`` names releases (``resnet50-19c8e357.pth``), or for weights converted from Caffe
(``vgg16_caffe.pth``: a framework without torch tensors, so a conversion script wrote them). Every
string the path may be (:func:`~gpulint.semantic.path_strings.path_strings`) must be one.
"""

from __future__ import annotations

import ast
import re

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.path_strings import UNKNOWN, path_strings, segments
from gpulint.semantic.torch_api import HUB_HASHED_FILE

MODEL_ZOO_FOLDERS = frozenset({"model_zoo", "modelzoo", "model-zoo"})
"""Folders named for a collection of published pretrained models."""
CONVERTED_FROM = frozenset({"caffe"})
"""Words of a file name that say the weights were converted from a framework without torch tensors."""
NAME_WORD = re.compile(r"[a-z]+")


def names_a_published_file(model: SemanticModel, path: ast.expr) -> bool:
    """Whether every string ``path`` may be names a published file (see the module's docstring)."""
    return all(_published(value) for value in path_strings(model, path))


def _published(path: str) -> bool:
    parts = segments(path)
    if not parts or parts == [UNKNOWN]:
        return False
    *folders, name = parts
    if any(folder.lower() in MODEL_ZOO_FOLDERS for folder in folders):
        return True
    return bool(re.search(HUB_HASHED_FILE, name)) or bool(CONVERTED_FROM & set(NAME_WORD.findall(name.lower())))
