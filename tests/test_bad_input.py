"""Bad input never crashes a run: each file gets a clear message, the others are still checked,
the exit code is 2, and nothing is ever half written.

Most runs call the command line's ``main`` in this process with one job, so that a test can make
a file's analysis outlast its time budget whatever the machine's speed; one runs the console script
with worker processes."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time
from pathlib import Path
from typing import Any, List, Sequence

import libcst
import pytest

import gpulint.engine.linter
import gpulint.engine.runner
from gpulint.engine.diagnostics import Diagnostic
from gpulint.engine.runner import Job
from tests.helpers import run_gpulint, run_main

BAD = "import torch\nx = torch.load('m.pt')\n"
BUDGET = 2
"""Seconds given to the file whose analysis never finishes (the control files get no budget)."""
NEVER = 60
"""Seconds the analysis of that file waits: far longer than the budget, which must end it."""
MEGABYTE_OF_ASSIGNMENTS = "learning_rate_for_the_encoder = base_learning_rate * 0.5  # a comment\n" * 15_000


@pytest.fixture
def project(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    return tmp_path


def _check(project: Path, *names: str, extra: Sequence[str] = ()) -> subprocess.CompletedProcess:
    result = run_main(["check", "--format", "concise", "--jobs", "1", *extra, *names, "bad.py"], cwd=project)
    assert "bad.py:2:5: GPU001" in result.stdout, "the other files are still checked"
    return result


def _never_finishes(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Make the analysis of the file called ``name`` wait far longer than any budget, and take the
    budget off every other file: the control files are checked whatever the machine's speed, and
    only the real timer can end the one that never finishes."""
    analyse = gpulint.engine.linter.lint_source
    process = gpulint.engine.runner.process_text

    def lint_source(source: str, path: str, *args: Any, **kwargs: Any) -> List[Diagnostic]:
        if Path(path).name == name:
            time.sleep(NEVER)
        return analyse(source, path, *args, **kwargs)

    def process_text(path: str, text: str, job: Job) -> gpulint.engine.runner.FileResult:
        return process(path, text, job if Path(path).name == name else dataclasses.replace(job, budget=None))

    monkeypatch.setattr(gpulint.engine.linter, "lint_source", lint_source)
    monkeypatch.setattr(gpulint.engine.runner, "process_text", process_text)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"def f(:\n    pass\n", "x.py:1:7: cannot parse"),
        (b"import torch\nasync = True\nx = torch.load(p)\n", "x.py:2:7: cannot parse"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "x.py: not valid utf-8"),
        (b"x = '\xe9'\n", "x.py: not valid utf-8 and no usable coding cookie"),
        (b"# -*- coding: klingon -*-\nx = 1\n", "x.py: not valid utf-8 and no usable coding cookie"),
    ],
    ids=["syntax-error", "old-async-keyword", "binary", "latin-1-without-cookie", "unknown-cookie"],
)
def test_unusable_files_are_clear_per_file_errors(project, content, message):
    (project / "x.py").write_bytes(content)
    result = _check(project, "x.py")
    assert result.returncode == 2
    assert f"error: {message}" in result.stderr


@pytest.mark.parametrize(
    "content",
    [
        b"",
        "# -*- coding: latin-1 -*-\nx = 'caf\u00e9'\n".encode("latin-1"),
        b"\xef\xbb\xbfx = 1\n",
        b"x = 1\r\ny = 2\r\n",
        b"x = 1\ny = 2\r\nz = 3\n",
        b"if True:\n\tx = 1\n",
    ],
    ids=["empty", "latin-1-with-cookie", "bom", "crlf", "mixed-newlines", "tabs"],
)
def test_unusual_but_valid_files_are_checked(project, content):
    (project / "x.py").write_bytes(content)
    result = _check(project, "x.py")
    assert result.returncode == 1 and result.stderr == ""


def test_fix_keeps_mixed_newlines_byte_for_byte(project):
    raw = b"import torch\r\nmodel.load_state_dict(torch.load(p))\nx = 1\r\n"
    (project / "mixed.py").write_bytes(raw)
    assert run_main(["--fix", "--jobs", "1", "mixed.py"], cwd=project).returncode == 0
    assert (project / "mixed.py").read_bytes() == raw.replace(b"(p)", b'(p, map_location="cpu")')


def test_the_console_script_reports_a_per_file_error_from_a_worker_process(project):
    (project / "x.py").write_bytes(b"def f(:\n    pass\n")
    result = run_gpulint(["check", "--format", "concise", "--jobs", "2", "x.py", "bad.py"], cwd=project)
    assert result.returncode == 2 and "bad.py:2:5: GPU001" in result.stdout
    assert "error: x.py:1:7: cannot parse" in result.stderr


def test_a_megabyte_file_without_candidates_is_checked_without_libcst(project, monkeypatch):
    """Checked quickly because LibCST, the slow parser, never sees it: only Python's own parser does."""
    (project / "big.py").write_text(MEGABYTE_OF_ASSIGNMENTS)
    parse = libcst.parse_module

    def parse_module(source: str, *args: Any, **kwargs: Any) -> libcst.Module:
        assert source != MEGABYTE_OF_ASSIGNMENTS, "LibCST parsed big.py"
        return parse(source, *args, **kwargs)

    monkeypatch.setattr(libcst, "parse_module", parse_module)
    result = _check(project, "big.py")
    assert result.returncode == 1 and result.stderr == ""


def test_directory_named_like_a_python_file(project):
    (project / "pkg.py").mkdir()
    (project / "pkg.py" / "inner.py").write_text(BAD)
    result = run_main(["check", "--format", "concise", "--jobs", "1", "pkg.py", "bad.py"], cwd=project)
    assert result.returncode == 1
    assert "pkg.py/inner.py:2:5: GPU001" in result.stdout


def test_broken_symlink(project):
    (project / "gone.py").symlink_to(project / "nowhere.py")
    result = _check(project, "gone.py")
    assert result.returncode == 2
    assert "error: gone.py: cannot read" in result.stderr


def test_links_that_loop_are_passed_over(project):
    (project / "data").mkdir()
    (project / "data" / "data").symlink_to("data/")
    (project / "ping").symlink_to("pong")
    (project / "pong").symlink_to("ping")
    result = run_main(["check", "--format", "concise", "--jobs", "1", "."], cwd=project)
    assert result.returncode == 1, result.stderr
    assert "bad.py:2:5: GPU001" in result.stdout
    assert result.stderr == ""


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root can read any file")
def test_unreadable_file(project):
    (project / "secret.py").write_text(BAD)
    os.chmod(project / "secret.py", 0)
    result = _check(project, "secret.py")
    assert result.returncode == 2
    assert "error: secret.py: cannot read" in result.stderr


FUNCTIONS = "".join(
    f"def f{i}(model, path, train):\n    p = torch.load(path)\n    model.load_state_dict(p.state_dict())\n    train(model)\n\n"
    for i in range(400)
)


@pytest.mark.parametrize(
    "content",
    ["import torch\n\n" + FUNCTIONS, MEGABYTE_OF_ASSIGNMENTS + BAD],
    ids=["many-fixable-functions", "a-megabyte"],
)
def test_a_file_over_its_time_budget_is_a_per_file_error(project, monkeypatch, content):
    (project / "slow.py").write_text(content)
    _never_finishes(monkeypatch, "slow.py")
    result = _check(project, "slow.py", extra=["--file-time-budget", str(BUDGET), "--fix"])
    assert result.returncode == 2
    assert f"error: slow.py: gave up after {BUDGET} s" in result.stderr
    assert (project / "slow.py").read_text() == content
