"""Files another module of the project saves (``gpulint.semantic.project_saves``), found on disk
around the module, and the cached results that rest on them, through the console script."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional

from tests.helpers import run_gpulint

LOADER = """\
import torch


def load_pyramid(folder):
    generators = torch.load("%s/generators.pth" % folder)
    return generators, folder
"""
TRAINING = """\
import torch


def save_pyramid(generators, folder):
    torch.save(generators, "%s/generators.pth" % folder)
"""


def _write(root: Path, files: Dict[str, str]) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _fixes(root: Path, *options: str) -> List[Optional[str]]:
    command = ["check", "--format", "json", "--select", "GPU001", "--unsafe-fixes", *options, "pyramid/loader.py"]
    report = json.loads(run_gpulint(command, cwd=root).stdout)
    return [item["fix"]["applicability"] if item["fix"] else None for item in report]


def test_a_load_handed_back_whole_of_a_file_the_training_script_saves_gets_no_fix(tmp_path):
    _write(tmp_path, {"pyramid/__init__.py": "", "pyramid/loader.py": LOADER, "train.py": TRAINING})
    assert _fixes(tmp_path, "--no-cache") == [None]


def test_without_a_module_saving_that_file_the_fix_stays_unsafe(tmp_path):
    _write(tmp_path, {"pyramid/__init__.py": "", "pyramid/loader.py": LOADER, "train.py": TRAINING.replace("generators.pth", "discriminators.pth")})
    assert _fixes(tmp_path, "--no-cache") == ["unsafe"]


def test_a_cached_result_is_not_used_once_the_saving_module_changes(tmp_path):
    _write(tmp_path, {"pyramid/__init__.py": "", "pyramid/loader.py": LOADER, "pyproject.toml": "[tool.gpulint]\n"})
    assert _fixes(tmp_path) == ["unsafe"]
    _write(tmp_path, {"tools/train.py": TRAINING})
    assert _fixes(tmp_path) == [None]
    (tmp_path / "tools/train.py").write_text(TRAINING.replace("generators.pth", "discriminators.pth"), encoding="utf-8")
    assert _fixes(tmp_path) == ["unsafe"]
