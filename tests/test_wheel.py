"""The built wheel installs into a fresh virtualenv and works there, rule pages included, without torch."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile

import pytest

from tests.helpers import FIXTURES, PAGES, ROOT


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    work = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(work / "dist"), str(ROOT)],
        check=True, capture_output=True,
    )
    (wheel,) = (work / "dist").glob("gpulint-*.whl")
    environment = work / "venv"
    venv.create(environment)
    python = environment / "bin" / "python"
    # This pip, run by the new environment's Python (--python), installs there: no pip of its own to set up.
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", str(wheel)], check=True, capture_output=True)
    return wheel, environment


def test_wheel_ships_the_rule_pages(installed):
    wheel, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    for page in PAGES.glob("*.md"):
        assert f"gpulint/_pages/{page.name}" in names


def test_installed_script_prints_a_rule_page(installed):
    _, environment = installed
    result = subprocess.run([str(environment / "bin" / "gpulint"), "rule", "GPU001"], capture_output=True, text=True)
    assert result.returncode == 0
    assert result.stdout == (PAGES / "GPU001.md").read_text()


def test_installed_script_checks_without_torch(installed, tmp_path):
    _, environment = installed
    python = environment / "bin" / "python"
    assert subprocess.run([str(python), "-c", "import torch"], capture_output=True).returncode != 0
    result = subprocess.run(
        [str(environment / "bin" / "gpulint"), "check", str(FIXTURES / "demo")], capture_output=True, text=True, cwd=tmp_path
    )
    assert result.returncode == 1, result.stderr
    assert "GPU001" in result.stdout
