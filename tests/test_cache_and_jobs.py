"""The result cache and parallel checking, through the installed console script."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.helpers import FIXTURES, ROOT, run_gpulint

DEMO = FIXTURES / "demo"


def _project(tmp_path: Path, config: str = "") -> Path:
    project = tmp_path / "project"
    shutil.copytree(DEMO, project)
    (project / "pyproject.toml").write_text(f"[tool.gpulint]\n{config}", encoding="utf-8")
    return project


def _entries(cache: Path) -> list:
    return sorted(cache.glob("*/*.json"))


def test_a_second_run_is_answered_from_the_cache(tmp_path):
    project = _project(tmp_path)
    first = run_gpulint(["check", "--format", "json", "."], cwd=project)
    cache = project / ".gpulint_cache"
    entries = _entries(cache)
    assert len(entries) == len(list(DEMO.iterdir()))
    assert (cache / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] == "*"
    entry = next(e for e in entries if json.loads(e.read_text())["path"].endswith("train.py"))
    data = json.loads(entry.read_text())
    data["diagnostics"][0]["message"] = "read from the cache"
    entry.write_text(json.dumps(data), encoding="utf-8")
    second = run_gpulint(["check", "--format", "json", "."], cwd=project)
    assert "read from the cache" in second.stdout
    assert second.stdout.replace("read from the cache", "") != first.stdout.replace("read from the cache", "")
    uncached = run_gpulint(["check", "--format", "json", "--no-cache", "."], cwd=project)
    assert uncached.stdout == first.stdout


def test_a_run_answered_from_the_cache_does_not_load_libcst(tmp_path):
    project = _project(tmp_path)
    run_gpulint(["check", "."], cwd=project)
    probe = "import sys\nfrom gpulint.frontend.cli import main\nmain(['check', '.'])\nprint('libcst' in sys.modules)\n"
    warm = subprocess.run([sys.executable, "-c", probe], cwd=project, capture_output=True, text=True, timeout=120)
    assert warm.stdout.splitlines()[-1] == "False", warm.stderr
    (project / "train.py").write_text("import torch\nstate = torch.load('a.pt')\n", encoding="utf-8")
    cold = subprocess.run([sys.executable, "-c", probe], cwd=project, capture_output=True, text=True, timeout=120)
    assert cold.stdout.splitlines()[-1] == "True", cold.stderr


def test_no_prefilter_finds_the_same_and_caches_nothing(tmp_path):
    project = _project(tmp_path)
    filtered = run_gpulint(["check", "--format", "json", "--no-cache", "."], cwd=project)
    unfiltered = run_gpulint(["check", "--format", "json", "--no-prefilter", "."], cwd=project)
    assert json.loads(unfiltered.stdout) and unfiltered.stdout == filtered.stdout
    assert unfiltered.returncode == filtered.returncode == 1
    assert not (project / ".gpulint_cache").exists()


def test_no_cache_writes_nothing(tmp_path):
    project = _project(tmp_path)
    run_gpulint(["check", "--no-cache", "."], cwd=project)
    assert not (project / ".gpulint_cache").exists()


def test_a_corrupt_entry_is_ignored_and_rewritten(tmp_path):
    project = _project(tmp_path)
    first = run_gpulint(["check", "."], cwd=project)
    entries = _entries(project / ".gpulint_cache")
    for entry, garbage in zip(entries, ["", "{not json", '{"format": 1}', "[]"]):
        entry.write_text(garbage, encoding="utf-8")
    second = run_gpulint(["check", "."], cwd=project)
    assert (second.returncode, second.stdout) == (first.returncode, first.stdout)
    for entry in entries:
        assert json.loads(entry.read_text(encoding="utf-8"))["key"] == entry.stem


def test_changed_content_or_selection_misses(tmp_path):
    project = _project(tmp_path)
    run_gpulint(["check", "."], cwd=project)
    before = len(_entries(project / ".gpulint_cache"))
    train = project / "train.py"
    train.write_text(train.read_text(encoding="utf-8").replace("torch.cuda.empty_cache()", "pass"), encoding="utf-8")
    after_edit = run_gpulint(["check", "train.py"], cwd=project)
    assert "GPU003" not in after_edit.stdout
    run_gpulint(["check", "--select", "GPU001", "."], cwd=project)
    assert len(_entries(project / ".gpulint_cache")) == before + 1 + len(list(DEMO.iterdir()))


def test_cache_dir_is_configurable(tmp_path):
    project = _project(tmp_path, 'cache-dir = "build/lint-cache"\n')
    run_gpulint(["check", "."], cwd=project)
    assert _entries(project / "build" / "lint-cache")
    assert not (project / ".gpulint_cache").exists()


def test_parallel_output_is_identical_and_ordered(tmp_path):
    project = _project(tmp_path)
    for copy in range(6):
        shutil.copy(project / "finetune.py", project / f"finetune_{copy}.py")
    serial = run_gpulint(["check", "--no-cache", "--jobs", "1", "--format", "json", "."], cwd=project)
    parallel = run_gpulint(["check", "--no-cache", "--jobs", "3", "--format", "json", "."], cwd=project)
    assert serial.returncode == parallel.returncode == 1
    assert parallel.stdout == serial.stdout
    paths = [item["path"] for item in json.loads(parallel.stdout)]
    assert paths == sorted(paths)


def test_jobs_must_be_positive(tmp_path):
    completed = run_gpulint(["check", "--jobs", "0", "."], cwd=tmp_path)
    assert completed.returncode == 2
    assert "--jobs" in completed.stderr


def _run(args, cwd: Path, **environment: str) -> subprocess.CompletedProcess:
    """``python -m gpulint`` with extra environment (a cache home, another copy of the package)."""
    env = {**os.environ, "NO_COLOR": "1", **environment}
    return subprocess.run([sys.executable, "-m", "gpulint", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def _forge_clean_entries(cache: Path) -> None:
    for entry in _entries(cache):
        data = json.loads(entry.read_text())
        data["diagnostics"] = []
        entry.write_text(json.dumps(data), encoding="utf-8")


def test_only_a_cache_this_installation_wrote_is_trusted(tmp_path):
    project = _project(tmp_path)
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    assert _run(["check", "."], project, XDG_CACHE_HOME=theirs).returncode == 1
    _forge_clean_entries(project / ".gpulint_cache")
    assert _run(["check", "."], project, XDG_CACHE_HOME=theirs).returncode == 0, "the writer's own entries are read"
    result = _run(["check", "--format", "json", "."], project, XDG_CACHE_HOME=ours)
    assert result.returncode == 1 and json.loads(result.stdout), "entries written elsewhere are never read"


def test_a_changed_rule_misses_the_cache(tmp_path):
    project = _project(tmp_path)
    package = tmp_path / "copy"
    shutil.copytree(ROOT / "gpulint", package / "gpulint", ignore=shutil.ignore_patterns("__pycache__"))
    first = _run(["check", "--format", "json", "."], project, PYTHONPATH=str(package), XDG_CACHE_HOME=str(tmp_path / "home"))
    assert first.returncode == 1
    rule = package / "gpulint" / "rules" / "gpu001_torch_load_without_map_location.py"
    rule.write_text(rule.read_text().replace("loads every tensor", "loads each tensor"))
    second = _run(["check", "--format", "json", "."], project, PYTHONPATH=str(package), XDG_CACHE_HOME=str(tmp_path / "home"))
    assert "loads each tensor" in second.stdout and "loads every tensor" not in second.stdout
