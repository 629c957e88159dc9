"""Facts the semantic model decides once for every rule: which classes of a module are models, and
which function a call calls, when a notebook defines a class twice."""

from __future__ import annotations

import ast
import textwrap

from gpulint.semantic.model import SemanticModel


def _model(source: str) -> SemanticModel:
    source = textwrap.dedent(source)
    return SemanticModel(ast.parse(source), source)


def _class_names(model: SemanticModel) -> set:
    return {(c.name, c.lineno) for c in model.module_classes}


def test_a_base_redefined_as_a_model_makes_its_subclasses_models():
    model = _model(
        """
        import torch.nn as nn
        class Base:
            pass
        class Base(nn.Module):
            pass
        class Net(Base):
            pass
        """
    )
    assert ("Net", 7) in _class_names(model)


def test_a_base_redefined_as_a_plain_class_leaves_its_subclasses_out():
    model = _model(
        """
        import torch.nn as nn
        class Base(nn.Module):
            pass
        class Base:
            pass
        class Net(Base):
            pass
        """
    )
    assert ("Net", 7) not in _class_names(model)


def test_a_method_inherited_from_a_redefined_base_is_the_last_definitions():
    model = _model(
        """
        class Base:
            def step(self):
                return 1
        class Base:
            def step(self):
                return 2
        class Net(Base):
            def run(self):
                return self.step()
        """
    )
    call = next(n for n in ast.walk(model.tree) if isinstance(n, ast.Call))
    callee = model.callee(call)
    assert callee is not None and callee.node.lineno == 6


def test_a_base_is_the_class_of_its_name_when_the_subclass_is_defined():
    model = _model(
        """
        import torch.nn as nn
        class Base:
            pass
        class Net(Base):
            pass
        class Base(nn.Module):
            pass
        """
    )
    assert ("Net", 5) not in _class_names(model)
