"""Payloads read as pycocotools' ``COCOeval.eval``: a dict of numpy arrays and a ``Params`` object.

Detection projects save what ``COCOeval.evaluate()`` and ``accumulate()`` leave in ``.eval``
(``torch.save(coco_eval.eval, path)``) and plot it later. The load is that dict where the code
reads an evaluation setting of its ``params`` entry (``data["params"].recThrs``, any of
:data:`~gpulint.semantic.torch_api.COCO_EVALUATION_PARAMS`), through the name the load is bound to
(one assignment) or on the load itself: no other payload has that entry.
"""

from __future__ import annotations

import ast

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.torch_api import COCO_EVALUATION_PARAMS

PARAMS_KEY = "params"


def read_as_coco_evaluation(model: SemanticModel, call: ast.Call) -> bool:
    """Whether the load ``call`` is read as a ``COCOeval.eval`` dict (see the module docstring)."""
    if "params" not in model.source:
        return False
    bound = model.assigned_name(call)
    if bound is None:
        return _reads_a_setting(model, call)
    target, place = bound
    if not model.bound_once(target, place):
        return False
    return any(_reads_a_setting(model, use) for use in model.uses(place.binding) if isinstance(use.ctx, ast.Load))


def _reads_a_setting(model: SemanticModel, value: ast.expr) -> bool:
    """``value["params"].<setting>``."""
    item = model.parent(value)
    if not (isinstance(item, ast.Subscript) and item.value is value and isinstance(item.slice, ast.Constant)):
        return False
    if item.slice.value != PARAMS_KEY:
        return False
    setting = model.parent(item)
    return isinstance(setting, ast.Attribute) and setting.value is item and setting.attr in COCO_EVALUATION_PARAMS
