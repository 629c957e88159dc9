"""The analysis layer on its own: liveness, binding, loops, escapes, aliases and tensor-likeness."""

from __future__ import annotations

from typing import Dict

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper

from gpulint.analysis import scope
from gpulint.analysis.aliases import AliasGroup
from gpulint.analysis.scope import ScopeAnalysis
from gpulint.analysis.tensors import ModuleEvidence
from gpulint.engine.rule import FileContext


class _Analyse(cst.CSTVisitor):
    METADATA_DEPENDENCIES = scope.METADATA_DEPENDENCIES

    def __init__(self, context: FileContext) -> None:
        super().__init__()
        self.context = context
        self.analyses: Dict[str, ScopeAnalysis] = {}

    def visit_Module(self, node: cst.Module) -> None:
        evidence = ModuleEvidence(lambda n: set())
        node.visit(evidence)
        self.modules = frozenset(evidence.modules)
        self.names = self.context.names.for_owner(self)
        self.analyses["<module>"] = ScopeAnalysis(self, node, self.names, self.modules)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.analyses[node.name.value] = ScopeAnalysis(self, node, self.names, self.modules)


def analyse(source: str) -> Dict[str, ScopeAnalysis]:
    module = cst.parse_module(source)
    visitor = _Analyse(FileContext("x.py", source, module))
    MetadataWrapper(module, unsafe_skip_copy=True).visit(visitor)
    return visitor.analyses


def _line(analysis: ScopeAnalysis, code: str) -> cst.CSTNode:
    """The statement (line or compound statement) of the scope whose code starts with ``code``."""
    module = cst.Module(body=[])
    for statement in analysis.graph.exits_of:
        if module.code_for_node(statement).strip().startswith(code):
            return statement
    raise AssertionError(f"no statement {code!r}")


def test_liveness_along_straight_code():
    (analysis,) = [analyse("def f():\n    a = 1\n    b = a\n    c = 2\n    return b\n")["f"]]
    assert analysis.live_after_statement(_line(analysis, "a = 1")) == {"a"}
    assert analysis.live_after_statement(_line(analysis, "b = a")) == {"b"}
    assert analysis.live_after_statement(_line(analysis, "c = 2")) == {"b"}


def test_a_name_read_at_the_top_of_the_next_iteration_is_live():
    source = "def f(xs, use):\n    prev = None\n    for x in xs:\n        if prev:\n            use(prev)\n        prev = x\n"
    analysis = analyse(source)["f"]
    assert "prev" in analysis.live_after_statement(_line(analysis, "prev = x"))


def test_a_name_rebound_before_any_read_in_the_next_iteration_is_dead():
    source = "def f(xs, use):\n    for x in xs:\n        out = use(x)\n        use(out)\n        flush()\n"
    analysis = analyse(source)["f"]
    assert "out" not in analysis.live_after_statement(_line(analysis, "use(out)"))


def test_names_used_after_a_loop_are_live_inside_it():
    source = "def f(xs, use):\n    for x in xs:\n        out = use(x)\n        flush()\n    return out\n"
    analysis = analyse(source)["f"]
    assert "out" in analysis.live_after_statement(_line(analysis, "flush()"))


def test_binding_on_one_branch_is_possible_not_definite():
    source = "def f(c):\n    if c:\n        a = 1\n    b = 2\n"
    analysis = analyse(source)["f"]
    after = _line(analysis, "b = 2")
    assert "a" in analysis.bound_after_statement(after, definitely=False)
    assert "a" not in analysis.bound_after_statement(after, definitely=True)
    assert "b" in analysis.bound_after_statement(after, definitely=True)


def test_binding_in_an_earlier_iteration_is_not_definite_in_an_except_handler():
    source = (
        "def f(xs, g):\n    for x in xs:\n        try:\n            out = g(x)\n"
        "        except ValueError:\n            clear()\n"
    )
    analysis = analyse(source)["f"]
    handler_step = analysis.step_of(_line(analysis, "clear()").body[0])
    assert "out" in analysis.maybe_bound[handler_step]
    assert "out" not in analysis.definitely_bound[handler_step]


def test_comprehension_variables_do_not_shadow_the_scope_but_walrus_does():
    source = "def f(xs):\n    y = 1\n    z = [y for y in xs]\n    w = [(last := x) for x in xs]\n    g(y, last)\n"
    analysis = analyse(source)["f"]
    assert "y" in analysis.live_after_statement(_line(analysis, "y = 1"))
    assert "y" in analysis.live_after_statement(_line(analysis, "z = "))
    assert "last" in analysis.bound_after_statement(_line(analysis, "w = "), definitely=True)


def test_deletion_unbinds():
    analysis = analyse("def f():\n    a = 1\n    del a\n    b = 2\n")["f"]
    assert "a" not in analysis.bound_after_statement(_line(analysis, "del a"), definitely=False)


@pytest.mark.parametrize(
    ("body", "escaping"),
    [
        ("x = 1\n    def g():\n        return x\n", {"x"}),
        ("x = 1\n    h = lambda: x\n", {"x"}),
        ("global x\n    x = 1\n", {"x"}),
        ("x = 1\n    y = [x for _ in range(3)]\n", set()),
        ("x = 1\n    print(locals())\n", {"x"}),
    ],
)
def test_escaping_names(body, escaping):
    analysis = analyse(f"def f():\n    {body}")["f"]
    assert analysis.escaping == escaping


def test_alias_group_follows_state_dicts_updates_comprehensions_and_containers():
    source = (
        "def f(model, path):\n"
        "    m = torch.load(path)\n"
        "    sd = m.state_dict()\n"
        "    md = model.state_dict()\n"
        "    sd = {k: v for k, v in sd.items() if k in md}\n"
        "    md.update(sd)\n"
        "    params = list(m.parameters())\n"
        "    n = len(sd)\n"
        "    shapes = [p.shape for p in params]\n"
        "    sub = m.encoder\n"
        "    layers = []\n"
        "    layers.append(sub)\n"
        "    other = model.state_dict()\n"
    )
    analysis = analyse(source)["f"]
    group = AliasGroup(["m"], [step.node for step in analysis.graph.steps if step.node is not None])
    assert group.names == {"m", "sd", "md", "params", "sub", "layers"}


@pytest.mark.parametrize(
    ("expression", "tensor_like"),
    [
        ("torch.zeros(3)", False),
        ("torch.zeros(3, device='cuda')", True),
        ("torch.zeros(3, device='cpu')", False),
        ("torch.zeros_like(t)", True),
        ("torch.load(p)", True),
        ("torch.load(p, map_location='cpu')", False),
        ("torch.load(p, 'cpu')", False),
        ("torch.load(p, map_location=lambda storage, location: storage)", False),
        ("torch.allclose(t, t)", False),
        ("torch.nn.Linear(2, 2)", False),
        ("torch.nn.Linear(2, 2).cuda()", True),
        ("float(loss)", False),
        ("t is None", False),
        ("net.config", False),
        ("net.generate(t)", True),
        ("F.relu(x)", False),
        ("torch.nn.functional.relu(t)", True),
        ("t * 2 + 1", True),
        ("t[0].sum()", True),
        ("t.item()", False),
        ("t.cpu()", False),
        ("t.to('cpu')", False),
        ("t.to(device)", True),
        ("t.shape", False),
        ("batch.cuda()", True),
        ("net(t)", True),
        ("self.encoder(t)", True),
        ("unknown(t)", False),
        ("len(t)", False),
        ("torch.device('cuda')", False),
        ("loss", True),
        ("None", False),
    ],
)
def test_tensor_likeness(expression, tensor_like):
    source = (
        "import torch\nimport torch.nn.functional\n\n\nclass M:\n    def __init__(self):\n"
        "        self.encoder = torch.nn.Linear(2, 2)\n\n\n"
        f"def f(p, device, batch, net, unknown):\n    net.eval()\n    t = torch.ones(2, device=device)\n"
        f"    loss = unknown(t)\n    loss.backward()\n    value = {expression}\n"
    )
    module = cst.parse_module(source)
    from gpulint.rules.gpu003_empty_cache_with_live_references import EmptyCacheWithLiveReferences

    context = FileContext("x.py", source, module)
    results = []

    class Probe(EmptyCacheWithLiveReferences):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            if node.name.value != "f":
                return
            analysis = self.context.analyses.of(self, node.body.body[0].body[0])
            assign = node.body.body[-1].body[0]
            results.append(analysis.tensors(assign.value))

    MetadataWrapper(module, unsafe_skip_copy=True).visit_batched([Probe(context)])
    assert results == [tensor_like]


def test_holding_is_released_by_none_cpu_item_and_del():
    source = (
        "def f(model, x):\n    model.eval()\n    a = model(x)\n    b = model(x)\n    c = model(x)\n"
        "    d = model(x)\n    a = None\n    b = b.cpu()\n    c = c.sum().item()\n    del d\n    e = model(x)\n"
        "    flush()\n"
    )
    analysis = analyse(source)["f"]
    step = analysis.step_of(_line(analysis, "flush()").body[0])
    assert analysis.holding[step] == {"e"}


def test_module_evidence_leaves_out_history_free_metrics_however_they_are_moved():
    qualified = {
        "Accuracy": {"torchmetrics.Accuracy"},
        "Recall": {"torchmetrics.Recall", "project_metrics.Recall"},
        "Linear": {"torch.nn.Linear"},
    }
    evidence = ModuleEvidence(lambda node: qualified.get(getattr(node, "value", ""), set()))
    cst.parse_module(
        "accuracy = Accuracy(task='binary')\n"
        "accuracy.eval()\n"
        "scores = Accuracy(task='binary').cuda()\n"
        "recall = Recall(task='binary')\n"
        "recall.eval()\n"
        "net = Net().cuda()\n"
        "head = Linear(2, 2)\n"
        "mlp.train()\n"
    ).visit(evidence)
    assert evidence.modules == {"recall", "net", "head", "mlp"}
