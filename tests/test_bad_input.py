"""Bad input never crashes a run: each file gets a clear message, the others are still checked,
the exit code is 2, and nothing is ever half written."""

from __future__ import annotations

import os

import pytest

from tests.helpers import run_gpulint

BAD = "import torch\nx = torch.load('m.pt')\n"


@pytest.fixture
def project(tmp_path):
    (tmp_path / "bad.py").write_text(BAD)
    return tmp_path


def _check(project, *names, extra=()):
    result = run_gpulint(["check", "--format", "concise", *extra, *names, "bad.py"], cwd=project)
    assert "bad.py:2:5: GPU001" in result.stdout, "the other files are still checked"
    return result


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
    assert run_gpulint(["--fix", "mixed.py"], cwd=project).returncode == 0
    assert (project / "mixed.py").read_bytes() == raw.replace(b"(p)", b'(p, map_location="cpu")')


def test_a_five_megabyte_file_without_candidates_is_checked_quickly(project):
    (project / "big.py").write_text("x = 1\n" * 900_000)
    result = _check(project, "big.py", extra=["--file-time-budget", "30"])
    assert result.returncode == 1 and result.stderr == ""


def test_a_five_megabyte_file_over_the_budget_is_a_per_file_error(project):
    (project / "big.py").write_text("import torch\n" + "x = torch.ones(1)\n" * 300_000 + BAD)
    result = _check(project, "big.py", extra=["--file-time-budget", "2"])
    assert result.returncode == 2
    assert "error: big.py: gave up after 2 s" in result.stderr


def test_directory_named_like_a_python_file(project):
    (project / "pkg.py").mkdir()
    (project / "pkg.py" / "inner.py").write_text(BAD)
    result = run_gpulint(["check", "--format", "concise", "pkg.py", "bad.py"], cwd=project)
    assert result.returncode == 1
    assert "pkg.py/inner.py:2:5: GPU001" in result.stdout


def test_broken_symlink(project):
    (project / "gone.py").symlink_to(project / "nowhere.py")
    result = _check(project, "gone.py")
    assert result.returncode == 2
    assert "error: gone.py: cannot read" in result.stderr


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root can read any file")
def test_unreadable_file(project):
    (project / "secret.py").write_text(BAD)
    os.chmod(project / "secret.py", 0)
    result = _check(project, "secret.py")
    assert result.returncode == 2
    assert "error: secret.py: cannot read" in result.stderr


def test_a_file_over_its_time_budget_is_a_per_file_error(project):
    functions = "".join(
        f"def f{i}(model, path, train):\n    p = torch.load(path)\n    model.load_state_dict(p.state_dict())\n    train(model)\n\n"
        for i in range(400)
    )
    (project / "slow.py").write_text("import torch\n\n" + functions)
    result = _check(project, "slow.py", extra=["--file-time-budget", "0.2", "--fix"])
    assert result.returncode == 2
    assert "error: slow.py: gave up after 0.2 s" in result.stderr
    assert (project / "slow.py").read_text().count("map_location") == 0
