"""The project modules a file imports, found on disk beside it (``gpulint.semantic.project_modules``),
and the cached results that rest on them, through the console script."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Dict

import pytest

from gpulint.engine.consulted import recording_consulted, unchanged
from gpulint.semantic import project_modules as pm
from gpulint.semantic.model import SemanticModel
from tests.helpers import run_gpulint

HOOKED_MODEL = """\
import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.gradients = None
        self.project = nn.Linear(1024, 1024)

    def keep(self, gradients):
        self.gradients = gradients

    def forward(self, tokens):
        weights = torch.softmax(self.project(tokens) @ tokens.transpose(1, 2), dim=-1)
        weights.register_hook(self.keep)
        return weights @ tokens
"""
PLAIN_MODEL = HOOKED_MODEL.replace("        weights.register_hook(self.keep)\n", "")
NOTEBOOK_LIKE_SCRIPT = """\
import torch
from models.attention import Attention

model = Attention().cuda()
model.load_state_dict(torch.load("attention.pt", map_location="cpu"))
model.eval()
for batch in torch.load("batches.pt", map_location="cpu"):
    scores = model(batch.cuda())
    print(scores.argmax(-1).tolist())
"""


def _write(root: Path, files: Dict[str, str]) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _found(path: Path) -> list:
    text = path.read_text(encoding="utf-8")
    modules = pm.project_modules(SemanticModel(ast.parse(text), text), str(path))
    return sorted(node.name for module in modules for node in module.body if isinstance(node, (ast.ClassDef, ast.FunctionDef)))


def test_absolute_imports_are_found_under_the_file_folder_or_an_ancestor(tmp_path):
    _write(tmp_path, {
        "models/__init__.py": "",
        "models/attention.py": "class Attention:\n    pass\n",
        "scripts/deep/run.py": "from models.attention import Attention\nimport models.blocks\n",
        "models/blocks.py": "def block():\n    pass\n",
    })
    assert _found(tmp_path / "scripts/deep/run.py") == ["Attention", "block"]


def test_relative_imports_packages_and_submodules_named_by_a_from_import(tmp_path):
    _write(tmp_path, {
        "pkg/__init__.py": "def package_level():\n    pass\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/layers.py": "class Layer:\n    pass\n",
        "pkg/sub/run.py": "from . import layers\nfrom .. import helpers\n",
        "pkg/helpers.py": "def helper():\n    pass\n",
    })
    assert _found(tmp_path / "pkg/sub/run.py") == ["Layer", "helper"]


def test_imports_are_followed_through_the_modules_found_up_to_the_depth(tmp_path):
    chain = {f"m{index}.py": f"import m{index + 1}\ndef f{index}():\n    pass\n" for index in range(1, 6)}
    _write(tmp_path, {"run.py": "import m1\n", **chain})
    assert _found(tmp_path / "run.py") == [f"f{index}" for index in range(1, pm.MAX_DEPTH + 1)]


def test_the_standard_library_and_torch_are_never_looked_for_in_the_project(tmp_path):
    _write(tmp_path, {"run.py": "import os\nimport torch.nn\n", "os.py": "def shadow():\n    pass\n", "torch/nn.py": "def shadow():\n    pass\n"})
    assert _found(tmp_path / "run.py") == []


def test_a_file_not_on_disk_has_no_project(tmp_path, monkeypatch):
    _write(tmp_path, {"helpers.py": "def helper():\n    pass\n"})
    monkeypatch.chdir(tmp_path)
    text = "import helpers\n"
    assert pm.project_modules(SemanticModel(ast.parse(text), text), "<stdin>") == []


def test_every_file_looked_for_is_recorded_and_any_change_is_seen(tmp_path):
    _write(tmp_path, {"run.py": "import helpers\nimport missing\n", "helpers.py": "def helper():\n    pass\n"})
    with recording_consulted() as consulted:
        assert _found(tmp_path / "run.py") == ["helper"]
    assert consulted[str((tmp_path / "helpers.py").absolute())] is not None
    assert consulted[str((tmp_path / "missing.py").absolute())] is None
    assert unchanged(consulted)
    (tmp_path / "missing.py").write_text("", encoding="utf-8")
    assert not unchanged(consulted)
    (tmp_path / "missing.py").unlink()
    (tmp_path / "helpers.py").write_text("def helper():\n    return 1\n", encoding="utf-8")
    assert not unchanged(consulted)


@pytest.mark.parametrize(("model_text", "applicability"), [(HOOKED_MODEL, None), (PLAIN_MODEL, "unsafe")])
def test_a_hook_in_an_imported_module_takes_the_fix_away(tmp_path, model_text, applicability):
    _write(tmp_path, {"models/attention.py": model_text, "predict.py": NOTEBOOK_LIKE_SCRIPT})
    report = json.loads(run_gpulint(["check", "--format", "json", "--no-cache", "predict.py"], cwd=tmp_path).stdout)
    [finding] = [item for item in report if item["code"] == "GPU004"]
    assert (finding["fix"] and finding["fix"]["applicability"]) == applicability


def test_a_cached_result_is_not_used_once_an_imported_module_changes(tmp_path):
    _write(tmp_path, {"models/attention.py": PLAIN_MODEL, "predict.py": NOTEBOOK_LIKE_SCRIPT, "pyproject.toml": "[tool.gpulint]\n"})

    def fix_of_the_finding() -> object:
        report = json.loads(run_gpulint(["check", "--format", "json", "predict.py"], cwd=tmp_path).stdout)
        [finding] = [item for item in report if item["code"] == "GPU004"]
        return finding["fix"] and finding["fix"]["applicability"]

    assert fix_of_the_finding() == "unsafe"
    entries = list((tmp_path / ".gpulint_cache").glob("*/*.json"))
    assert len(entries) == 1
    assert str((tmp_path / "models/attention.py").absolute()) in json.loads(entries[0].read_text())["consulted"]
    (tmp_path / "models/attention.py").write_text(HOOKED_MODEL, encoding="utf-8")
    assert fix_of_the_finding() is None
    (tmp_path / "models/attention.py").write_text(PLAIN_MODEL, encoding="utf-8")
    assert fix_of_the_finding() == "unsafe"


def test_a_relative_path_searches_the_folders_above_the_working_directory(tmp_path):
    _write(tmp_path, {
        "models/attention.py": HOOKED_MODEL,
        "scripts/predict.py": NOTEBOOK_LIKE_SCRIPT,
    })
    report = json.loads(run_gpulint(["check", "--format", "json", "--no-cache", "predict.py"], cwd=tmp_path / "scripts").stdout)
    [finding] = [item for item in report if item["code"] == "GPU004"]
    assert finding["fix"] is None


def test_a_name_no_file_can_have_is_looked_for_without_failing(tmp_path):
    _write(tmp_path, {"predict.py": f"import {'a' * 300}\n" + NOTEBOOK_LIKE_SCRIPT})
    completed = run_gpulint(["check", "--format", "json", "--no-cache", "predict.py"], cwd=tmp_path)
    report = json.loads(completed.stdout)
    assert [item["code"] for item in report] == ["GPU004"], completed.stderr


def test_the_same_file_in_two_folders_is_cached_apart(tmp_path):
    _write(tmp_path, {
        "pyproject.toml": "[tool.gpulint]\n",
        "plain/predict.py": NOTEBOOK_LIKE_SCRIPT, "plain/models/attention.py": PLAIN_MODEL,
        "hooked/predict.py": NOTEBOOK_LIKE_SCRIPT, "hooked/models/attention.py": HOOKED_MODEL,
    })

    def fix_in(folder: str) -> object:
        report = json.loads(run_gpulint(["check", "--format", "json", "predict.py"], cwd=tmp_path / folder).stdout)
        [finding] = [item for item in report if item["code"] == "GPU004"]
        return finding["fix"] and finding["fix"]["applicability"]

    assert fix_in("plain") == "unsafe"
    assert fix_in("hooked") is None


TEST_FUNCTION = """\
import torch


def testing(loader, model, device):
    model.eval()
    with torch.no_grad():
        return [model(inputs.to(device)).argmax(-1) for inputs in loader]
"""
TEST_FUNCTION_MOVING_THE_MODEL = TEST_FUNCTION.replace("    model.eval()\n", "    model.to(device).eval()\n")
TEST_SCRIPT = """\
import torch
from test import testing

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.load("model.pt")
print(testing(torch.load("batches.pt", map_location="cpu"), model, device))
"""


def test_a_cached_gpu001_finding_follows_the_imported_function_a_model_is_handed_to(tmp_path):
    """The model is run unmoved by ``testing`` in ``test.py``, in code for one GPU: the load is the
    program's own placement, not reported; once ``testing`` moves it, the finding comes back with
    its unsafe fix, the cached result notwithstanding."""
    _write(tmp_path, {"test.py": TEST_FUNCTION, "main_test.py": TEST_SCRIPT, "pyproject.toml": "[tool.gpulint]\n"})

    def fixes_of_the_findings() -> list:
        report = json.loads(run_gpulint(["check", "--format", "json", "main_test.py"], cwd=tmp_path).stdout)
        return [item["fix"] and item["fix"]["applicability"] for item in report if item["code"] == "GPU001"]

    assert fixes_of_the_findings() == []
    (tmp_path / "test.py").write_text(TEST_FUNCTION_MOVING_THE_MODEL, encoding="utf-8")
    assert fixes_of_the_findings() == ["unsafe"]
    (tmp_path / "test.py").write_text(TEST_FUNCTION, encoding="utf-8")
    assert fixes_of_the_findings() == []


def test_a_helper_too_deeply_nested_to_analyse_leaves_the_fix_and_the_other_findings(tmp_path):
    """A function of another module that nests too deeply for gpulint is not followed: the file
    handing it a loaded model keeps its finding and unsafe fix, and is not failed as a whole."""
    helper = TEST_FUNCTION + "\n\ndef deep(x):\n    return " + "+".join(["x"] * 400) + "\n"
    _write(tmp_path, {"test.py": helper, "main_test.py": TEST_SCRIPT})
    result = run_gpulint(["check", "--format", "json", "--no-cache", "main_test.py"], cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    [finding] = [item for item in json.loads(result.stdout) if item["code"] == "GPU001"]
    assert finding["fix"]["applicability"] == "unsafe"
