"""Release weights the project's documents give as downloads (``gpulint.semantic.release_documents``),
read from disk around the module, and the cached results that rest on them, through the console
script. The shapes of the documents themselves are fixture cases (``fixtures/GPU001/downloads.md``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List

from gpulint.semantic.project_files import MAX_ENTRIES
from gpulint.semantic.release_documents import MAX_LEVELS
from tests.helpers import run_gpulint

LOADER = """\
import torch
from torch import nn

net = nn.Linear(512, 512)
net.load_state_dict(torch.load("weights/style_decoder.pth"))
"""
README = "Download [style_decoder.pth](https://example.org/releases/style_decoder.pth) into `weights/`.\n"
TRAINING_README = "Train with `python train.py`: it writes `weights/style_decoder.pth`.\n"


def _write(root: Path, files: Dict[str, str]) -> None:
    for name, text in files.items():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def _lines(root: Path, path: str, *options: str) -> List[int]:
    report = json.loads(run_gpulint(["check", "--format", "json", "--select", "GPU001", *options, path], cwd=root).stdout)
    return [item["line"] for item in report]


def test_a_download_the_readme_names_is_not_reported(tmp_path):
    _write(tmp_path, {"project/pyproject.toml": "", "project/README.md": README, "project/tools/infer.py": LOADER})
    assert _lines(tmp_path / "project", "tools/infer.py", "--no-cache") == []


def test_a_readme_above_the_project_top_is_not_the_projects(tmp_path):
    _write(tmp_path, {"README.md": README, "project/setup.cfg": "", "project/infer.py": LOADER})
    assert _lines(tmp_path / "project", "infer.py", "--no-cache") == [5]


def test_documents_are_looked_for_a_bounded_number_of_folders_up(tmp_path):
    near = "/".join(f"level{number}" for number in range(MAX_LEVELS)) + "/infer.py"
    far = "/".join(f"level{number}" for number in range(MAX_LEVELS + 1)) + "/infer.py"
    _write(tmp_path, {"README.md": README, near: LOADER, far: LOADER})
    assert _lines(tmp_path, near, "--no-cache") == []
    assert _lines(tmp_path, far, "--no-cache") == [5]


def test_a_project_too_large_to_look_through_leaves_it_reported(tmp_path):
    _write(tmp_path, {"README.md": README, "infer.py": LOADER})
    for number in range(MAX_ENTRIES):
        (tmp_path / f"module{number}.py").touch()
    assert _lines(tmp_path, "infer.py", "--no-cache") == [5]


def test_a_cached_result_is_not_used_once_a_document_is_added_or_changed(tmp_path):
    _write(tmp_path, {"pyproject.toml": "[tool.gpulint]\n", "infer.py": LOADER})
    assert _lines(tmp_path, "infer.py") == [5]
    _write(tmp_path, {"docs.md": README})
    assert _lines(tmp_path, "infer.py") == []
    _write(tmp_path, {"docs.md": TRAINING_README})
    assert _lines(tmp_path, "infer.py") == [5]


def test_a_save_of_the_name_added_elsewhere_in_the_project_is_seen_through_the_cache(tmp_path):
    _write(tmp_path, {"pyproject.toml": "[tool.gpulint]\n", "README.md": README, "infer.py": LOADER})
    assert _lines(tmp_path, "infer.py") == []
    _write(tmp_path, {"scripts/finetune.py": 'torch.save(net.state_dict(), "weights/style_decoder.pth")\n'})
    assert _lines(tmp_path, "infer.py") == [5]
