"""The table of ``map_location`` positions (``torch_api.MAP_LOCATION_SLOT``) agrees with the installed torch's real signatures."""

from __future__ import annotations

import importlib
import inspect

import pytest

from gpulint.semantic.torch_api import MAP_LOCATION_SLOT

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("qualified", sorted(MAP_LOCATION_SLOT))
def test_map_location_slot_matches_the_signature(qualified):
    module_name, _, function_name = qualified.rpartition(".")
    function = getattr(importlib.import_module(module_name), function_name)
    parameters = list(inspect.signature(function).parameters.values())
    positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    assert positional.index("map_location") == MAP_LOCATION_SLOT[qualified]


def test_fixed_call_loads_a_checkpoint(tmp_path):
    """The fix's keyword is accepted by torch.load and yields CPU tensors."""
    from gpulint.engine.fixer import applicabilities, fix_text
    from gpulint.engine.linter import lint_source
    from gpulint.rules import ALL_RULES

    path = tmp_path / "checkpoint.pt"
    torch.save({"weight": torch.ones(2)}, path)
    program = f"import torch\nmodel = torch.nn.Linear(2, 1)\nstate = torch.load({str(path)!r})\nresult = state['weight']\n"
    fixed = fix_text(program, lambda text: lint_source(text, "x.py", ALL_RULES), applicabilities(True)).text
    assert "map_location=" in fixed
    namespace: dict = {}
    exec(compile(fixed, "fixed.py", "exec"), namespace)
    assert namespace["result"].device.type == "cpu"
