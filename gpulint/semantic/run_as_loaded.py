"""Loaded modules that a single-GPU program runs, as they are loaded, on inputs it moves to the GPU.

``sam = torch.jit.load(path)`` and then ``sam(image.cuda(), boxes.cuda())`` — or ``segment(image,
sam)`` where ``segment`` calls its parameter on ``.cuda()`` inputs — relies on the load putting the
module back on the GPU it was saved from: the program never moves it. There ``map_location="cpu"``
would leave the module on the CPU with its inputs on the GPU, and the load is the program's own
placement. Decided only where a function's or the module's name (not a class attribute) is bound
once, by the load itself (not a part of it), and every read of it is such a call (a positional
argument moved), or an argument of a function of the module (bound by one ``def``, not a method)
every read of whose parameter is one; and not in code that runs on several GPUs (see
:mod:`semantic.moved_at_once`).
"""

from __future__ import annotations

import ast
from typing import List, Union

from gpulint.semantic.model import SemanticModel
from gpulint.semantic.torch_api import MULTI_DEVICE_WORDS


def run_on_gpu_inputs_as_loaded(model: SemanticModel, call: ast.Call) -> bool:
    """Whether what ``call`` loads is a module the program runs as loaded on inputs it moves to the GPU."""
    bound = model.assigned_name(call)
    if bound is None or bound[1].binding.scope.is_class or model.spells(MULTI_DEVICE_WORDS):
        return False
    target, place = bound
    uses = model.uses(place.binding)
    reads = [use for use in uses if isinstance(use.ctx, ast.Load)]
    if [use for use in uses if use not in reads] != [target] or not reads:
        return False
    return all(_run_on_gpu_inputs(model, read, through_parameter=True) for read in reads)


def _run_on_gpu_inputs(model: SemanticModel, read: ast.Name, through_parameter: bool) -> bool:
    """``read(..., x.cuda(), ...)``, or (once) ``f(..., read, ...)`` with ``f``'s parameter so used,
    ``f`` a function (not a method, which a subclass may override) bound by one ``def`` only."""
    call = model.parent(read)
    if not isinstance(call, ast.Call):
        return False
    if call.func is read:
        return any(_on_gpu(argument) for argument in call.args)
    site = model.site_of.get(id(call))
    if not through_parameter or site is None or site.callee is None or not _defined_once(model, call.func):
        return False
    index = next((position for position, argument in model.positional_arguments(site) if argument is read), None)
    if index is None or index >= len(site.callee.positional):
        return False
    parameter = site.callee.scope.resolve(site.callee.positional[index])
    reads = [use for use in model.uses(parameter) if isinstance(use.ctx, ast.Load)]
    stores = [use for use in model.uses(parameter) if not isinstance(use.ctx, ast.Load)]
    return bool(reads) and not stores and all(_run_on_gpu_inputs(model, use, through_parameter=False) for use in reads)


def _defined_once(model: SemanticModel, func: ast.expr) -> bool:
    """Whether ``func`` is a plain name that one ``def`` binds and nothing rebinds."""
    place = model.place(func) if isinstance(func, ast.Name) else None
    if place is None or any(not isinstance(use.ctx, ast.Load) for use in model.uses(place.binding)):
        return False
    definitions: List[Union[ast.FunctionDef, ast.AsyncFunctionDef]] = [*model.nodes(ast.FunctionDef), *model.nodes(ast.AsyncFunctionDef)]
    same = [node for node in definitions if node.name == place.binding.name and model.scope_at(node) is place.binding.scope]
    return len(same) == 1


def _on_gpu(argument: ast.expr) -> bool:
    """``x.cuda()``, ``x[None].cuda()``, ``x.to("cuda")``, ``x.to("cuda:0")``."""
    if not (isinstance(argument, ast.Call) and isinstance(argument.func, ast.Attribute)):
        return False
    if argument.func.attr == "cuda":
        return True
    first = argument.args[0] if argument.args else None
    return argument.func.attr == "to" and isinstance(first, ast.Constant) and str(first.value).startswith("cuda")
