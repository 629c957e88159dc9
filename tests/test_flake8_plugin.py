"""The flake8 plugin, through the real ``flake8`` console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import RULE_FIXTURE_FILES, ROOT, run_gpulint

FLAKE8 = Path(sys.executable).parent / "flake8"
FIXTURE_FILES = RULE_FIXTURE_FILES


def _flake8(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([str(FLAKE8), *args], cwd=cwd, capture_output=True, text=True, timeout=300)



@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_flake8_reports_what_gpulint_check_reports(path):
    relative = str(path.relative_to(ROOT))
    flake8 = _flake8("--select", "GPU", "--format", "%(path)s:%(row)d:%(col)d:%(code)s", relative)
    reported = sorted(tuple(line.rsplit(":", 3)) for line in flake8.stdout.splitlines())
    checked = json.loads(run_gpulint(["check", "--format", "json", relative], cwd=ROOT).stdout)
    expected = sorted((d["path"], str(d["line"]), str(d["column"]), d["code"]) for d in checked)
    assert reported == expected


def test_message_format_and_other_plugins_alongside(tmp_path):
    source = "import os\nimport torch\n\n\ndef f(p, x=[]):\n    return torch.load(p)\n"
    (tmp_path / "bad.py").write_text(source)
    result = _flake8("--extend-select", "GPU", "bad.py", cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert "bad.py:6:12: GPU001 `torch.load` without `map_location` loads every tensor onto the device it was saved from" in lines
    assert any(" F401 " in line for line in lines)
    assert any(" B006 " in line for line in lines)
    assert result.returncode == 1


def test_flake8_noqa_and_gpulint_configuration(tmp_path):
    (tmp_path / "noqa.py").write_text("import torch\nx = torch.load('a')  # noqa: GPU001\n")
    (tmp_path / "skipped.py").write_text("import torch\nx = torch.load('a')\n")
    (tmp_path / "pyproject.toml").write_text("[tool.gpulint.per-file-ignores]\n'skipped.py' = ['GPU001']\n")
    result = _flake8("--select", "GPU", "noqa.py", "skipped.py", cwd=tmp_path)
    assert result.stdout == "" and result.returncode == 0
