"""The qualified names the LibCST rules read come from the semantic model by position; where the
model and LibCST's own ``QualifiedNameProvider`` disagree on a call's target, the model is the one
that follows bindings (a parameter or assignment that shadows an import)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import List, Tuple

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider

from gpulint.analysis.names import NameResolver
from gpulint.semantic.model import SemanticModel
from gpulint.semantic.torch_api import TORCH_PACKAGE

FIXTURES = sorted(p for p in (Path(__file__).parent.parent / "fixtures").rglob("*.py") if "snapshots" not in p.parts)


def _torch(names) -> frozenset:
    """The names a rule or analysis compares with torch's API (and ``builtins.open``, which the
    control-flow graph reads)."""
    return frozenset(n for n in names if n.startswith("torch.") or n == "builtins.open")


class _Targets(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider, QualifiedNameProvider)

    def __init__(self, resolver: NameResolver) -> None:
        super().__init__()
        self.resolver = resolver
        self.pairs: List[Tuple[cst.CSTNode, frozenset, frozenset]] = []

    def visit_Call(self, node: cst.Call) -> None:
        libcst_names = _torch(q.name for q in self.get_metadata(QualifiedNameProvider, node.func, set()))
        self.pairs.append((node.func, _torch(self.resolver.of(self, node.func)), libcst_names))


def _pairs(source: str, with_model: bool):
    module = cst.parse_module(source)
    model = SemanticModel(ast.parse(source), source) if with_model else None
    visitor = _Targets(NameResolver(module, model))
    MetadataWrapper(module, unsafe_skip_copy=True).visit(visitor)
    return visitor.pairs


def _bound_otherwise(tree: ast.Module) -> set:
    """Names something other than an import binds: assignments, parameters, functions, classes."""
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    parameters = {a.arg for n in ast.walk(tree) if isinstance(n, ast.arg) for a in [n]}
    defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    return stored | parameters | defined


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_model_names_agree_with_libcst_but_for_bindings_and_star_imports(path):
    source = path.read_text(encoding="utf-8")
    try:
        tree = ast.parse(source)
    except SyntaxError:
        pytest.skip("Python's parser rejects it: LibCST's names are used there")
    imports = SemanticModel(tree, source).imports
    star_modules = imports.star_modules
    shadowing = _bound_otherwise(tree)
    for func, from_model, from_libcst in _pairs(source, with_model=True):
        code = cst.Module([]).code_for_node(func)
        extra, missing = from_model - from_libcst, from_libcst - from_model
        # The model adds what a star import may bind, takes an unbound ``torch`` for torch (under a
        # star import the torch its module imported; without one, the name the module's runner
        # provides), and drops an import a binding may shadow.
        unbound_torch = code.split(".")[0] == TORCH_PACKAGE and TORCH_PACKAGE not in imports.bindings
        assert all(any(name.startswith(f"{module}.") for module in star_modules) or unbound_torch for name in extra), code
        assert not missing or code.split(".")[0] in shadowing, code


def test_a_parameter_shadowing_torch_has_no_torch_names():
    source = "import torch\n\ndef f(torch):\n    return torch.load(p)\n\ntorch.load(q)\n"
    [(_, inner, _), (_, outer, _)] = _pairs(source, with_model=True)
    assert inner == frozenset() and outer == {"torch.load"}


def test_a_star_import_names_what_it_may_bind():
    [(_, names, _)] = _pairs("from torch import *\nload(p)\n", with_model=True)
    assert names == {"torch.load"}


def test_an_unbound_torch_is_torch():
    [(_, names, libcst_names)] = _pairs("def evaluate(model, x):\n    with torch.no_grad():\n        return model(x)\n", with_model=True)[:1]
    assert names == {"torch.no_grad"} and libcst_names == frozenset()


def test_builtins_are_named_as_libcst_names_them():
    source = "with open(p) as f:\n    pass\n\ndef g(open):\n    open(p)\n"
    [(_, top, top_libcst), (_, shadowed, _)] = _pairs(source, with_model=True)
    assert top == top_libcst == {"builtins.open"}
    assert shadowed == frozenset()


def test_without_a_model_libcst_answers():
    pairs = _pairs("import torch as t\nt.cuda.empty_cache()\n", with_model=False)
    assert [names for _, names, _ in pairs] == [{"torch.cuda.empty_cache"}]


def test_an_unbound_torch_under_a_star_import_is_the_torch_its_module_imported():
    [(_, names, _)] = _pairs("from project.networks import *\ntorch.load(p)\n", with_model=True)
    assert names == {"torch.load"}


def test_a_torch_bound_here_is_not_replaced_under_a_star_import():
    [(_, names, _)] = _pairs("from project.networks import *\nimport torch as th\ntorch = th.nn\ntorch.load(p)\n", with_model=True)
    assert "torch.load" not in names
