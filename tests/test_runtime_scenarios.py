"""The runtime-validation suite: every fix, produced by gpulint now, changes what the program holds.

Without a GPU each scenario checks its CPU proxy (see ``fixtures/runtime/suite.py``); with one,
the GPU test checks that every fix saves at least 90% of the bytes the scenario wastes.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest

from gpulint.rule import FixAvailability
from gpulint.rules import ALL_RULES
from tests.helpers import FIXTURES

RUNTIME = FIXTURES / "runtime"
torch = pytest.importorskip("torch")


def _suite():
    spec = importlib.util.spec_from_file_location("runtime_suite", RUNTIME / "suite.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


suite = _suite()


@pytest.fixture(scope="module")
def results():
    return {outcome["scenario"]: outcome for outcome in suite.run_suite()["scenarios"]}


def test_every_fixable_rule_has_a_scenario():
    covered = {rule for scenario in suite.SCENARIOS for rule in scenario.rules}
    fixable = {rule.code for rule in ALL_RULES if rule.fix_availability is not FixAvailability.NONE}
    assert fixable <= covered
    assert all((RUNTIME / "scenarios" / scenario.file).is_file() for scenario in suite.SCENARIOS)


def test_scenario_modules_import_without_cuda(monkeypatch):
    monkeypatch.syspath_prepend(str(RUNTIME))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for name in ("harness", "models"):
        sys.modules.pop(name, None)
        module = importlib.import_module(name)
        assert module.__file__.startswith(str(RUNTIME))
    assert sys.modules["harness"].DEVICE.type == "cpu"
    for name in ("harness", "models"):
        sys.modules.pop(name, None)


def test_fixes_are_gpulint_output_and_change_each_program(results):
    for scenario in suite.SCENARIOS:
        diff = results[scenario.name]["fix"]
        assert diff.startswith("---") and "\n+" in diff, scenario.name


@pytest.mark.skipif(torch.cuda.is_available(), reason="the GPU test below measures the real effect")
def test_cpu_proxies(results):
    failed = {name: outcome["seen"] for name, outcome in results.items() if not outcome["passed"]}
    assert not failed


@pytest.mark.skipif(torch.cuda.is_available(), reason="CPU proxy")
def test_gpu_checkpoint_cannot_load_on_a_cpu_until_fixed(results):
    outcome = results["gpu001_state_dict_load"]
    assert suite.CUDA_LOAD_ERROR in outcome["seen"] and outcome["seen"].endswith("fixed: None")
    assert 'map_location="cpu"' in outcome["fix"]


def test_the_collector_is_needed_only_for_the_cycle(results):
    plain, cycle = results["gpu002_partial_load"], results["gpu002_partial_load_cycle"]
    assert "gc.collect()" in plain["fix"] and "gc.collect()" in cycle["fix"]
    assert plain["without_collect"]["loaded_alive"] == 0
    assert cycle["without_collect"]["loaded_alive"] == 1


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_every_fix_saves_ninety_percent_of_the_wasted_bytes(results):
    failed = {
        name: [check for check in outcome["checks"] if not check["passed"] and not check["informational"]]
        for name, outcome in results.items() if not outcome["passed"]
    }
    assert not failed
