"""The survey of Python's own syntax tree that rules use to rule themselves out before LibCST."""

from __future__ import annotations

import ast

import libcst as cst
import pytest
from libcst.helpers import get_full_name_for_node

from gpulint.analysis.tensors import dotted_name
from gpulint.semantic.model import SemanticModel
from gpulint.semantic.survey import Survey, ast_dotted_name, ast_full_name


def _survey(source: str) -> Survey:
    return Survey(ast.parse(source), source)


@pytest.mark.parametrize("expression", [
    "a", "a.b.c", "a().b", "a[0].b", "(x + y).b", "f(x)", "a.b(c)", "x[1:2]", "True", "None.x", "1", "'s'", "-a",
])
def test_names_agree_with_libcst(expression):
    ast_node = ast.parse(expression, mode="eval").body
    cst_node = cst.parse_expression(expression)
    assert ast_full_name(ast_node) == get_full_name_for_node(cst_node)
    assert ast_dotted_name(ast_node) == dotted_name(cst_node)


def test_loops_end_at_function_class_and_lambda_boundaries():
    survey = _survey(
        "for x in y:\n"
        "    a += 1\n"
        "    def f():\n"
        "        b += 1\n"
        "        while c:\n"
        "            d += 1\n"
        "    g = lambda: [e for e in z]\n"
        "h += 1\n"
    )
    looped = {node.target.id for node in survey.nodes(ast.AugAssign) if survey.in_loop(node)}
    assert looped == {"a", "d"}


def test_scope_of_is_the_innermost_definition():
    survey = _survey("class C:\n    def m(self):\n        x = 1\n    y = 2\nz = 3\n")
    scopes = {node.targets[0].id: type(survey.scope_of(node)).__name__ for node in survey.nodes(ast.Assign)}
    assert scopes == {"x": "FunctionDef", "y": "ClassDef", "z": "Module"}


def test_qualified_names_follow_every_import_form():
    survey = _survey("import torch.nn.functional as F\nfrom torch import nn\ndef f():\n    import torch\n")
    call = lambda text: ast.parse(text, mode="eval").body.func  # noqa: E731
    assert survey.qualified_names(call("F.relu(x)")) == {"torch.nn.functional.relu"}
    assert survey.qualified_names(call("nn.Linear(3, 4)")) == {"torch.nn.Linear"}
    assert survey.qualified_names(call("torch.load(p)")) == {"torch.load"}
    assert survey.qualified_names(call("other.load(p)")) == set()


def test_module_evidence_is_collected_from_methods_and_constructors():
    survey = _survey(
        "from torch import nn\n"
        "net = nn.Linear(3, 4)\n"
        "model = Net().cuda()\n"
        "encoder.eval()\n"
        "table = dict()\n"
    )
    assert survey.modules == {"net", "model", "encoder"}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import torch\nx = torch.ones(2)\n", False),
        ('"""Runs on the GPU with .cuda()."""\nimport torch\n# model.cuda()\nx = torch.ones(2)\n', False),
        ("from torch.cuda import amp\n", True),
        ("x = x.to(y)\n", True),
        ("x = x.npu()\n", True),
        ("m = torch.hub.load('owner/repo', 'model')\n", True),
        ("print('cuda:0')\n", True),
        ("def f(local_gpu_id):\n    pass\n", True),
        ("inputs = json.dumps(samples)\nprint('see github.com')\n", False),
        ("model = AutoModel.from_pretrained(name, load_in_8bit=True)\n", True),
    ],
)
def test_mentions_accelerator_reads_the_code_not_its_comments_or_docstrings(source, expected):
    assert SemanticModel(ast.parse(source), source).mentions_accelerator is expected
