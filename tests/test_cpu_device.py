"""Which modules put whatever they place on the CPU (``gpulint.semantic.cpu_device``)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from gpulint.semantic.cpu_device import keeps_everything_on_the_cpu
from gpulint.semantic.model import SemanticModel

PINNED = """
import torch
DEVICE = "cpu"
HOST = torch.device("cpu")
net = Net().to(DEVICE)
state = torch.load("w.pt", map_location=HOST)
extra = torch.load("x.pt", DEVICE)
x = torch.zeros(4, device=DEVICE).to(torch.float32)
torch.cuda.empty_cache()
"""


def _keeps(source: str) -> bool:
    source = textwrap.dedent(source)
    return keeps_everything_on_the_cpu(SemanticModel(ast.parse(source), source))


def test_a_script_whose_every_place_is_a_device_pinned_to_the_cpu():
    assert _keeps(PINNED)


@pytest.mark.parametrize(
    "change",
    [
        'DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")',
        'DEVICE = "cpu"\nDEVICE = "cuda:0"',
        "net = net.cuda()",
        "net = torch.nn.DataParallel(net)",
        'torch.set_default_device("cuda")',
        'probe = torch.zeros(1, device=torch.device("cuda"))',
        "torch.cuda.set_device(0)",
        "scaler = torch.cuda.amp.GradScaler()",
        "y = x.to(other)",
        "import lightning",
        'model = torch.load("model.pt")',
        'model = torch.load("model.pt", "cuda:0")',
        "def move(t, device=DEVICE):\n    return t.to(device)",
    ],
)
def test_any_other_place_or_move_spoils_it(change):
    assert not _keeps(PINNED + change + "\n")


def test_a_module_that_names_no_place_is_not_read_as_pinned():
    """Its functions may be given models their callers moved."""
    assert not _keeps("import torch\n\ndef step(model, x):\n    out = model(x)\n    torch.cuda.empty_cache()\n")
