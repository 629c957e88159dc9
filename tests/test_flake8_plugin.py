"""The flake8 plugin, through the real ``flake8`` console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Set, Tuple

import pytest

from tests.helpers import RULE_FIXTURE_FILES, ROOT, run_gpulint

FLAKE8 = Path(sys.executable).parent / "flake8"
FIXTURE_FILES = RULE_FIXTURE_FILES


def _flake8(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([str(FLAKE8), *args], cwd=cwd, capture_output=True, text=True, timeout=300)



@pytest.fixture(scope="module")
def both_reports() -> Tuple[Set[Tuple[str, ...]], Set[Tuple[str, ...]]]:
    """What flake8 and ``gpulint check`` report on every fixture file, each run once over all of them."""
    relatives = [str(path.relative_to(ROOT)) for path in FIXTURE_FILES]
    flake8 = _flake8("--select", "GPU", "--format", "%(path)s:%(row)d:%(col)d:%(code)s", *relatives)
    reported = {tuple(line.rsplit(":", 3)) for line in flake8.stdout.splitlines()}
    checked = json.loads(run_gpulint(["check", "--no-cache", "--format", "json", *relatives], cwd=ROOT).stdout)
    expected = {(d["path"], str(d["line"]), str(d["column"]), d["code"]) for d in checked}
    return reported, expected


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_flake8_reports_what_gpulint_check_reports(path, both_reports):
    relative = str(path.relative_to(ROOT))
    reported, expected = (sorted(item for item in report if item[0] == relative) for report in both_reports)
    assert reported == expected


def test_a_broken_configuration_stops_flake8_with_the_reason(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.gpulint]\nselcet = ["GPU001"]\n')
    (tmp_path / "bad.py").write_text("import torch\nx = torch.load('a')\n")
    result = _flake8("--select", "GPU", "bad.py", cwd=tmp_path)
    assert result.returncode == 1
    assert "unknown key(s) in [tool.gpulint]: selcet" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


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
