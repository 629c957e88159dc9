"""Calls of a module's functions elsewhere in the project, found on disk around it
(``gpulint.semantic.project_callers``), and the cached results that rest on them, through the
console script."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List

from tests.helpers import run_gpulint

TRAINER = """\
import torch
from torch import nn


class Trainer(nn.Module):
    def __init__(self, generator):
        super().__init__()
        self.generator = generator

    def sample(self, codes):
        self.generator.eval()
        images = self.generator(codes)
        self.generator.train()
        return images
"""
GUARDED_SCRIPT = """\
import torch
from trainer import Trainer


def preview(trainer: Trainer, codes, save):
    with torch.no_grad():
        save(trainer.sample(codes))
"""
UNGUARDED_SCRIPT = """\
def preview_again(trainer, codes, save):
    save(trainer.sample(codes))
"""


def _write(root: Path, files: Dict[str, str]) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _lines(root: Path, path: str, *options: str) -> List[int]:
    report = json.loads(run_gpulint(["check", "--format", "json", "--select", "GPU004", *options, path], cwd=root).stdout)
    return [item["line"] for item in report]


def test_a_method_the_project_calls_only_under_no_grad_is_not_reported(tmp_path):
    _write(tmp_path, {"trainer.py": TRAINER, "train.py": GUARDED_SCRIPT})
    assert _lines(tmp_path, "trainer.py", "--no-cache") == []


def test_one_call_with_gradients_on_anywhere_in_the_project_keeps_it(tmp_path):
    _write(tmp_path, {"trainer.py": TRAINER, "train.py": GUARDED_SCRIPT, "tools/preview.py": UNGUARDED_SCRIPT})
    assert _lines(tmp_path, "trainer.py", "--no-cache") == [12]


def test_a_notebook_that_spells_the_name_keeps_it(tmp_path):
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                           "source": ["images = trainer.sample(codes)\n"]}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    _write(tmp_path, {"trainer.py": TRAINER, "train.py": GUARDED_SCRIPT, "demo.ipynb": json.dumps(notebook)})
    assert _lines(tmp_path, "trainer.py", "--no-cache") == [12]


def test_the_project_is_looked_through_from_the_folder_above_the_package(tmp_path):
    _write(tmp_path, {
        "lib/networks/__init__.py": "", "lib/networks/trainer.py": TRAINER,
        "lib/loaders/dataset.py": GUARDED_SCRIPT.replace("from trainer", "from lib.networks.trainer"),
    })
    assert _lines(tmp_path, "lib/networks/trainer.py", "--no-cache") == []
    _write(tmp_path, {"outside/preview.py": UNGUARDED_SCRIPT})
    assert _lines(tmp_path, "lib/networks/trainer.py", "--no-cache") == []


def test_a_namespace_folder_inside_a_package_is_looked_through_from_above_the_package(tmp_path):
    guarded = GUARDED_SCRIPT.replace("from trainer", "from models.unet.trainer")
    _write(tmp_path, {"models/__init__.py": "", "models/unet/trainer.py": TRAINER, "evaluate.py": guarded})
    assert _lines(tmp_path, "models/unet/trainer.py", "--no-cache") == []
    _write(tmp_path, {"tools/preview.py": UNGUARDED_SCRIPT})
    assert _lines(tmp_path, "models/unet/trainer.py", "--no-cache") == [12]


def test_a_cached_result_is_not_used_once_a_caller_is_added_or_changed(tmp_path):
    _write(tmp_path, {"trainer.py": TRAINER, "train.py": GUARDED_SCRIPT, "pyproject.toml": "[tool.gpulint]\n"})
    assert _lines(tmp_path, "trainer.py") == []
    _write(tmp_path, {"tools/preview.py": UNGUARDED_SCRIPT})
    assert _lines(tmp_path, "trainer.py") == [12]
    (tmp_path / "tools/preview.py").unlink()
    assert _lines(tmp_path, "trainer.py") == []
    (tmp_path / "train.py").write_text(GUARDED_SCRIPT.replace("    with torch.no_grad():\n        save", "    save"), encoding="utf-8")
    assert _lines(tmp_path, "trainer.py") == [12]


def test_a_caller_too_deeply_nested_to_analyse_leaves_it_undecided(tmp_path):
    deep = GUARDED_SCRIPT + "\n\ndef total(x):\n    return " + " + ".join(["x"] * 320) + "\n"
    _write(tmp_path, {"trainer.py": TRAINER, "train.py": deep})
    result = run_gpulint(["check", "--format", "json", "--select", "GPU004", "--no-cache", "trainer.py"], cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert [item["line"] for item in json.loads(result.stdout)] == [12]


def test_files_other_than_code_written_in_the_project_keep_the_cached_result(tmp_path):
    _write(tmp_path, {"trainer.py": TRAINER, "train.py": GUARDED_SCRIPT, "pyproject.toml": "[tool.gpulint]\n", "runs/epoch1.ckpt": "weights"})
    assert _lines(tmp_path, "trainer.py") == []
    assert _lines(tmp_path, "trainer.py") == []
    [entry] = (tmp_path / ".gpulint_cache").glob("*/*.json")
    written = entry.stat().st_mtime_ns
    _write(tmp_path, {"runs/epoch2.ckpt": "weights", "log.txt": "epoch 2"})
    assert _lines(tmp_path, "trainer.py") == []
    assert entry.stat().st_mtime_ns == written


def _wrapper_chain(depth: int) -> Dict[str, str]:
    """``trainer.py`` and ``depth`` wrapper modules, each handing ``sample`` on to the one before,
    the last called under ``torch.no_grad()`` by ``train.py``."""
    files = {"trainer.py": TRAINER}
    for level in range(1, depth + 1):
        files[f"wrapper{level}.py"] = (
            f"class Wrapper{level}:\n"
            f"    def __init__(self, inner):\n"
            f"        self.inner = inner\n\n"
            f"    def sample(self, codes):\n"
            f"        return self.inner.sample(codes)\n"
        )
    files["train.py"] = GUARDED_SCRIPT
    return files


def test_a_method_reached_through_wrappers_called_under_no_grad_is_not_reported(tmp_path):
    _write(tmp_path, _wrapper_chain(3))
    assert _lines(tmp_path, "trainer.py", "--no-cache") == []


def test_a_chain_of_wrappers_too_long_to_follow_leaves_it_reported(tmp_path):
    from gpulint.semantic.project_callers import MAX_CALLER_DEPTH

    # Every wrapper is named `sample`, so one level of search covers all of them: make the chain
    # one of distinct names, one more than is followed.
    files = {"trainer.py": TRAINER}
    names = [f"sample_{level}" for level in range(MAX_CALLER_DEPTH + 2)]
    for level, (outer, inner) in enumerate(zip(names, ["sample", *names]), start=1):
        files[f"wrapper{level}.py"] = f"def {outer}(trainer, codes):\n    return trainer.{inner}(codes)\n" if inner == "sample" else (
            f"from wrapper{level - 1} import {inner}\n\n\ndef {outer}(trainer, codes):\n    return {inner}(trainer, codes)\n"
        )
    files["train.py"] = (
        f"import torch\nfrom wrapper{len(names)} import {names[-1]}\n\n\n"
        f"def preview(trainer, codes, save):\n    with torch.no_grad():\n        save({names[-1]}(trainer, codes))\n"
    )
    _write(tmp_path, files)
    assert _lines(tmp_path, "trainer.py", "--no-cache") == [12]
    for level in (len(names) - 1, len(names)):
        (tmp_path / f"wrapper{level}.py").unlink()
    (tmp_path / "train.py").write_text(files["train.py"].replace(str(len(names)), str(len(names) - 2)).replace(names[-1], names[-3]), encoding="utf-8")
    assert _lines(tmp_path, "trainer.py", "--no-cache") == []
