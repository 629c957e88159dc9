"""The runtime-validation suite: every fix, produced by gpulint now, changes what the program holds,
computes the same results, and every wrong fix (partial, empty, result-changing) fails.

The suite runs once, through ``fixtures/runtime/gpu_check.sh`` (the one command for a GPU machine),
with ``--allow-cpu`` where there is no GPU: each scenario then checks its CPU proxies, and each
mutant must fail them and the GPU criterion applied to emulated allocator figures.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from gpulint.engine.rule import FixAvailability
from gpulint.rules import ALL_RULES
from tests.helpers import FIXTURES

RUNTIME = FIXTURES / "runtime"
torch = pytest.importorskip("torch")
ON_GPU = torch.cuda.is_available()


def _suite():
    spec = importlib.util.spec_from_file_location("runtime_suite", RUNTIME / "suite.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


suite = _suite()


@pytest.fixture(scope="module")
def check_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("runtime")
    wheels = tmp_path_factory.mktemp("wheels")
    command = ["bash", str(RUNTIME / "gpu_check.sh"), "--wheels", str(wheels), "--out", str(out)]
    completed = subprocess.run([*command, *([] if ON_GPU else ["--allow-cpu"])], capture_output=True, text=True,
                               env={**os.environ, "PYTHON": sys.executable}, timeout=900)
    return completed, out


@pytest.fixture(scope="module")
def results(check_run):
    _, out = check_run
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def scenarios(results):
    return {outcome["scenario"]: outcome for outcome in results["scenarios"]}


def test_the_gpu_check_script_passes_and_writes_a_log(check_run):
    completed, out = check_run
    assert completed.returncode == 0, completed.stdout[-4000:] + completed.stderr[-2000:]
    log = (out / "gpu_check.log").read_text(encoding="utf-8")
    assert "== the suite, with every mutant" in log and "== exit 0" in log
    assert "PASS seed_partial_load_train_empty_cache" in log


def test_every_fixable_rule_has_a_scenario():
    covered = {rule for scenario in suite.SCENARIOS for rule in scenario.rules}
    fixable = {rule.code for rule in ALL_RULES if rule.fix_availability is not FixAvailability.NONE}
    assert fixable <= covered
    assert all((RUNTIME / "scenarios" / scenario.file).is_file() for scenario in suite.SCENARIOS)


def test_scenario_modules_import_without_cuda(monkeypatch):
    import importlib

    monkeypatch.syspath_prepend(str(RUNTIME))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for name in ("harness", "models"):
        sys.modules.pop(name, None)
        module = importlib.import_module(name)
        assert module.__file__.startswith(str(RUNTIME))
    assert sys.modules["harness"].DEVICE.type == "cpu"
    for name in ("harness", "models"):
        sys.modules.pop(name, None)


def test_fixes_are_gpulint_output_and_change_each_program(scenarios):
    for scenario in suite.SCENARIOS:
        diff = scenarios[scenario.name]["fix"]
        assert diff.startswith("---") and "\n+" in diff, scenario.name


def test_every_scenario_passes_and_computes_the_same_results(scenarios):
    failed = {name: outcome["problems"] for name, outcome in scenarios.items() if not outcome["passed"]}
    assert not failed
    for name, outcome in scenarios.items():
        unfixed, fixed = outcome["checksums"]
        assert unfixed and unfixed == pytest.approx(fixed, rel=suite.CHECKSUM_TOLERANCE), name


@pytest.mark.skipif(ON_GPU, reason="on a GPU the real criterion is checked instead")
def test_the_emulated_gpu_criterion_passes_every_real_fix(scenarios):
    assert {name for name, outcome in scenarios.items() if not outcome["emulated_gpu_criterion_passed"]} == set()


def test_every_mutant_fails(results):
    outcomes = {m["mutant"]: m for m in results["mutants"]}
    assert set(outcomes) == {m.name for m in suite.MUTANTS}
    assert [name for name, m in outcomes.items() if not m["caught"]] == []
    if not ON_GPU:
        assert [name for name, m in outcomes.items() if not m["caught_by_emulated_gpu_criterion"]] == []


@pytest.mark.skipif(ON_GPU, reason="CPU proxy")
def test_gpu_checkpoint_cannot_load_on_a_cpu_until_fixed(scenarios, results):
    assert 'map_location="cpu"' in scenarios["gpu001_state_dict_load"]["fix"]
    (unfixed,) = [m for m in results["mutants"] if m["mutant"] == "gpu001-unfixed"]
    assert any(suite.CUDA_LOAD_ERROR in problem for problem in unfixed["problems"])


def test_the_collector_is_needed_only_for_the_cycle(scenarios):
    plain, cycle = scenarios["gpu002_partial_load"], scenarios["gpu002_partial_load_cycle"]
    assert "gc.collect()" in plain["fix"] and "gc.collect()" in cycle["fix"]
    assert plain["without_collect"]["loaded_alive_bytes"] == 0
    assert cycle["without_collect"]["loaded_alive_bytes"] > 0


def test_the_waste_counts_the_storage_behind_a_zero_dim_loss(scenarios):
    """The 0-dim ``mse_loss`` of the GPU003 scenario keeps a storage as large as the logits."""
    (check,) = [c for c in scenarios["gpu003_empty_cache_after_step"]["checks"] if c["metric"] == "waste_bytes"]
    width, batch = (4096, 8192) if ON_GPU else (64, 32)
    logits = width * batch * 4
    assert check["bad"] >= (logits + 4 if ON_GPU else 2 * logits)


def test_a_saving_beyond_the_upper_bound_fails():
    check = suite.Check("GPU003", "reserved", "after_empty_cache", ("waste",))

    def run(reserved: int, waste: int) -> dict:
        return {"points": [{"label": "after_empty_cache", "reserved": reserved, "waste_bytes": waste}]}

    assert suite.judge(check, run(1000, 1000), run(0, 0), {})["passed"]
    assert suite.judge(check, run(1000, 1000), run(80, 0), {})["passed"]
    assert not suite.judge(check, run(2000, 1000), run(0, 0), {})["passed"]
    assert not suite.judge(check, run(1000, 1000), run(500, 0), {})["passed"]


def test_views_of_parameters_are_not_counted_as_activations(monkeypatch):
    monkeypatch.syspath_prepend(str(RUNTIME))
    import harness

    weight = torch.nn.Parameter(torch.ones(4, 4))
    activation = (torch.ones(2, 4, requires_grad=True) * 2).relu()
    assert not harness.SavedTensor(weight.t()).activation
    assert harness.SavedTensor(activation).activation


@pytest.mark.skipif(ON_GPU, reason="needs a machine without CUDA")
def test_require_gpu_refuses_a_cpu():
    completed = subprocess.run([sys.executable, str(RUNTIME / "suite.py"), "--require-gpu"], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 2 and "--require-gpu" in completed.stderr


@pytest.mark.skipif(ON_GPU, reason="needs a machine without CUDA")
def test_a_run_on_another_device_than_the_suite_is_an_error():
    (scenario,) = [s for s in suite.SCENARIOS if s.name == "gpu006_deprecated_cache_api"]
    with pytest.raises(RuntimeError, match="same device"):
        suite.run_suite([scenario], require_gpu=True)
