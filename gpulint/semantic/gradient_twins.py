"""Forward calls a program runs with gradients on purpose, beside a twin without them.

``if train: features = self.model.encode_text(tokens)`` and ``else: with torch.no_grad():
features = self.model.encode_text(tokens)``: the code chose, by a training flag, where gradients
flow; the branch that keeps them feeds a training step somewhere (fine-tuning the text tower), and
switching them off there would cut the gradients it needs. Decided for a call in one branch of an
``if`` (not inside a function or class defined there) whose test reads a training flag (a name,
attribute or string with a word of :data:`TRAINING_FLAG_WORDS`: ``train``, ``self.training``,
``mode == "train"``, ``requires_grad``), where the other branch runs a call spelt the same way (the
same callee, as written) inside a ``with`` block that turns gradients off
(:meth:`~gpulint.semantic.model.SemanticModel.turns_grad_off`). Two inference paths, one of which
forgot ``torch.no_grad()`` (``if video_file:`` frames with gradients on, ``else:`` an image under
``no_grad``), are no such choice.
"""

from __future__ import annotations

import ast
from typing import Iterator, List

from gpulint.semantic.batch_names import name_words
from gpulint.semantic.model import SemanticModel
from gpulint.semantic.survey import ast_dotted_name, own_nodes

TRAINING_FLAG_WORDS = frozenset({"train", "training", "finetune", "finetuning", "grad", "grads", "gradient", "gradients"})
"""Words of a flag that picks whether a branch trains (``is_train``, ``self.training``, ``requires_grad``)."""


def has_a_grad_free_twin(model: SemanticModel, call: ast.Call) -> bool:
    """Whether ``call`` sits in one branch of an ``if`` whose other branch runs the same callee with
    gradients off (see the module's docstring)."""
    spelling = ast.dump(call.func)
    child: ast.AST = call
    for ancestor in model.ancestors(call):
        if isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        if isinstance(ancestor, ast.If) and isinstance(child, ast.stmt) and _reads_a_training_flag(ancestor.test):
            branch = model.block_of(child)
            other = ancestor.orelse if branch is ancestor.body else ancestor.body if branch is ancestor.orelse else None
            if other is not None and any(ast.dump(twin.func) == spelling for twin in _calls_without_grad(model, other)):
                return True
        child = ancestor
    return False


def _reads_a_training_flag(test: ast.expr) -> bool:
    words = set()
    for node in ast.walk(test):
        if isinstance(node, (ast.Name, ast.Attribute)):
            words |= name_words(ast_dotted_name(node) or "")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            words |= name_words(node.value)
    return bool(words & TRAINING_FLAG_WORDS)


def _calls_without_grad(model: SemanticModel, statements: List[ast.stmt]) -> Iterator[ast.Call]:
    """The calls inside ``with`` blocks that turn gradients off, among ``statements``."""
    for node in own_nodes(statements):
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(model.turns_grad_off(item.context_expr) for item in node.items):
            yield from (inner for inner in own_nodes(node.body) if isinstance(inner, ast.Call))
