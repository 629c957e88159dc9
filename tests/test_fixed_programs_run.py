"""Programs fixed by the liveness rules still run, and compute what they computed before.

Each program is a small CPU stand-in for a GPU habit (``torch.cuda.empty_cache()`` is a no-op
without CUDA). It is fixed with every rule, unsafe fixes included, and both versions are run.
"""

from __future__ import annotations

import textwrap

import pytest

from gpulint.engine.fixer import applicabilities, fix_text
from gpulint.engine.linter import lint_source
from gpulint.rules import ALL_RULES

torch = pytest.importorskip("torch")

PRELUDE = """
import contextlib
import torch
from torch import nn

def make_loader(n):
    return [(torch.ones(2, 4), torch.zeros(2, dtype=torch.long)) for _ in range(n)]

def save_model(path):
    torch.save(nn.Linear(4, 2), path)
"""

PROGRAMS = {
    "loop-reaches-the-del-again": """
def run(path):
    save_model(path)
    model = nn.Linear(4, 2)
    checkpoint = torch.load(path, weights_only=False)
    model.load_state_dict(checkpoint.state_dict())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model.train()
    for step, (batch, target) in enumerate(make_loader(4)):
        loss = model(batch).sum()
        loss.backward()
        optimizer.step()
        if step % 2 == 0:
            torch.cuda.empty_cache()
    return step
""",
    "two-flushes": """
def run(path):
    model = nn.Linear(4, 2)
    model.eval()
    out = model(torch.ones(1, 4))
    result = out.detach().cpu()
    torch.cuda.empty_cache()
    if True:
        torch.cuda.empty_cache()
    return result.shape
""",
    "deleted-later": """
def run(path):
    model = nn.Linear(4, 2)
    model.eval()
    out = model(torch.ones(1, 4))
    value = out.sum().item()
    torch.cuda.empty_cache()
    del out
    return round(value, 3)
""",
    "generator-reads-later": """
def run(path):
    model = nn.Linear(4, 4)
    model.eval()
    scale = model(torch.ones(1, 4))
    scored = (b.sum() * scale.sum() for b in [torch.ones(2), torch.ones(3)])
    torch.cuda.empty_cache()
    return [round(s.item(), 3) for s in scored]
""",
    "suppressed-error": """
def run(path):
    model = nn.Linear(4, 2)
    model.eval()
    with contextlib.suppress(RuntimeError):
        out = model(torch.ones(1, 5))
    torch.cuda.empty_cache()
    return "done"
""",
    "loop-that-never-runs": """
def run(path):
    model = nn.Linear(4, 2)
    model.eval()
    logits: torch.Tensor
    for batch, _ in make_loader(0):
        logits = model(batch)
    torch.cuda.empty_cache()
    return "done"
""",
    "local-gc-name": """
def run(path, grad_clip=1.0):
    save_model(path)
    gc = grad_clip
    model = nn.Linear(4, 2)
    pretrained = torch.load(path, weights_only=False)
    model.load_state_dict(pretrained.state_dict())
    optimizer = torch.optim.SGD(model.parameters(), lr=gc)
    optimizer.step()
    return gc
""",
    "copied-parameter-by-parameter": """
def run(path):
    save_model(path)
    model = nn.Linear(4, 2)
    pretrained = torch.load(path, weights_only=False)
    own = dict(model.named_parameters())
    with torch.no_grad():
        for name, parameter in pretrained.named_parameters():
            own[name].copy_(parameter)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer.step()
    return sorted(own)
""",
    "both-rules-in-one-function": """
def run(path):
    save_model(path)
    model = nn.Linear(4, 2)
    teacher = torch.load(path, weights_only=False)
    model.load_state_dict(teacher.state_dict())
    warm = model(torch.ones(1, 4))
    print(warm.shape)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer.step()
    torch.cuda.empty_cache()
    return "done"
""",
    "evaluation-without-no-grad": """
def run(path):
    model = nn.Linear(4, 2)
    model.eval()
    correct = 0
    for batch, target in make_loader(3):
        logits = model(batch)
        correct += (logits.argmax(-1) == target).sum().item()
    return correct
""",
    "accumulated-losses": """
def run(path):
    model = nn.Linear(4, 2)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    total = 0
    history = []
    for batch, target in make_loader(3):
        optimizer.zero_grad()
        loss = criterion(model(batch), target)
        loss.backward()
        optimizer.step()
        total += loss
        history.append(loss)
    return round(total.item(), 4), [round(h.item(), 4) for h in history]
""",
    "the-seed-scenario": """
def run(path):
    save_model(path)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = nn.Linear(4, 2).to(device)
    pretrained_model = torch.load(path, weights_only=False)
    pretrained_dict = pretrained_model.state_dict()
    model_dict = model.state_dict()
    pretrained_dict = {k: v for k, v in pretrained_dict.items() if k in model_dict}
    model_dict.update(pretrained_dict)
    model.load_state_dict(model_dict)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for batch, target in make_loader(2):
        logits = model(batch)
        loss = nn.functional.cross_entropy(logits, target)
        loss.backward()
        optimizer.step()
        torch.cuda.empty_cache()
    return "done"
""",
}


def _run(source: str, path) -> object:
    namespace: dict = {}
    exec(compile(source, "program.py", "exec"), namespace)
    torch.manual_seed(0)
    return namespace["run"](str(path))


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_fixed_program_runs_and_computes_the_same(name, tmp_path):
    source = PRELUDE + textwrap.dedent(PROGRAMS[name])
    fixed = fix_text(source, lambda text: lint_source(text, "program.py", ALL_RULES), applicabilities(True)).text
    assert _run(fixed, tmp_path / "fixed.pt") == _run(source, tmp_path / "original.pt")


def test_accumulated_losses_lose_their_graph_only():
    """Only Python numbers computed from the accumulators (``.item()``) leave the function, so no
    caller can backpropagate through them: the fixes are safe (the program's results, compared
    above, stay the same). Returning the tensors themselves leaves no fix at all."""
    source = PRELUDE + textwrap.dedent(PROGRAMS["accumulated-losses"])
    lint = lambda text: lint_source(text, "program.py", ALL_RULES)  # noqa: E731
    fixed = fix_text(source, lint, applicabilities(False)).text
    assert "total += loss.detach()" in fixed and "history.append(loss.detach())" in fixed
    returning = source.replace("return round(total.item(), 4), [round(h.item(), 4) for h in history]", "return total, history")
    assert returning != source
    assert fix_text(returning, lint, applicabilities(True)).text == returning


def test_the_seed_scenario_is_fixed():
    source = PRELUDE + textwrap.dedent(PROGRAMS["the-seed-scenario"])
    fixed = fix_text(source, lambda text: lint_source(text, "program.py", ALL_RULES), applicabilities(True)).text
    assert "del pretrained_model, pretrained_dict, model_dict\n    gc.collect()" in fixed
    assert "del logits, loss\n        torch.cuda.empty_cache()" in fixed
