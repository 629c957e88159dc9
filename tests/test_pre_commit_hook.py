"""The pre-commit hook, run by the real ``pre-commit`` against this checkout in a throwaway repository."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

PRE_COMMIT = Path(sys.executable).parent / "pre-commit"
BAD = 'import torch\n\n\ndef restore(model, path):\n    model.load_state_dict(torch.load(path))\n'
GOOD = 'import torch\nstate = torch.load("a.pt", map_location="cpu")\n'


@pytest.fixture(scope="module")
def environment(tmp_path_factory):
    home = tmp_path_factory.mktemp("pre-commit-home")
    identity = {f"GIT_{who}_{what}": value for who in ("AUTHOR", "COMMITTER") for what, value in (("NAME", "gpulint tests"), ("EMAIL", "tests@gpulint.invalid"))}
    return {**os.environ, **identity, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1"}


@pytest.fixture
def repository(tmp_path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "good.py").write_text(GOOD)
    subprocess.run(["git", "add", "."], cwd=tmp_path, check=True)
    return tmp_path


def _pre_commit(args, cwd, environment):
    return subprocess.run([str(PRE_COMMIT), *args], cwd=cwd, env=environment, capture_output=True, text=True, timeout=600)


def test_clean_file_passes(repository, environment):
    result = _pre_commit(["try-repo", str(ROOT), "gpulint", "--files", "good.py"], repository, environment)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Passed" in result.stdout


def test_bad_file_fails_with_the_finding(repository, environment):
    result = _pre_commit(["try-repo", str(ROOT), "gpulint", "--files", "bad.py", "good.py"], repository, environment)
    assert result.returncode == 1
    assert "Failed" in result.stdout
    assert "bad.py:5:27: GPU001 [*] `torch.load` without `map_location`" in result.stdout


def test_fix_argument_rewrites_the_file(repository, environment):
    revision = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    (repository / ".pre-commit-config.yaml").write_text(
        f"repos:\n-   repo: {ROOT}\n    rev: {revision}\n    hooks:\n    -   id: gpulint\n        args: [--fix]\n"
    )
    result = _pre_commit(["run", "--files", "bad.py", "good.py"], repository, environment)
    assert result.returncode == 1, "pre-commit fails a hook that changed files"
    assert "files were modified by this hook" in result.stdout
    assert (repository / "bad.py").read_text() == BAD.replace("torch.load(path)", 'torch.load(path, map_location="cpu")')
    again = _pre_commit(["run", "--files", "bad.py", "good.py"], repository, environment)
    assert again.returncode == 0, again.stdout


def test_a_failing_run_never_ends_with_a_clean_verdict(repository, environment):
    """One process checks every file (``require_serial``), and the hook prints findings only, so no
    batch of clean files can add "All checks passed!" to a failing run's output."""
    names = ["bad.py"]
    for number in range(6):
        (repository / f"clean_{number}.py").write_text(GOOD)
        names.append(f"clean_{number}.py")
    result = _pre_commit(["try-repo", str(ROOT), "gpulint", "--files", *names], repository, environment)
    assert result.returncode == 1
    assert "bad.py:5:27: GPU001" in result.stdout
    assert "All checks passed!" not in result.stdout


def test_force_exclude_skips_files_in_excluded_folders(repository, environment):
    (repository / "pyproject.toml").write_text('[tool.gpulint]\nextend-exclude = ["scratch/"]\n')
    for folder in ("scratch", "build", "node_modules/pkg"):
        (repository / folder).mkdir(parents=True)
        (repository / folder / "s.py").write_text(BAD)
    names = ["scratch/s.py", "build/s.py", "node_modules/pkg/s.py", "good.py"]
    subprocess.run(["git", "add", "-f", *names, "pyproject.toml"], cwd=repository, check=True)
    result = _pre_commit(["try-repo", str(ROOT), "gpulint", "--files", *names], repository, environment)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "GPU001" not in result.stdout
