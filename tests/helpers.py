"""Shared test helpers: project paths, the installed console script, and fixture expectations."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
RULE_FIXTURE_DIRS = sorted(p for p in FIXTURES.iterdir() if p.is_dir() and re.fullmatch(r"[A-Z]+[0-9]{3}", p.name))
"""``fixtures/GPU001/``...: one folder of example files per rule (``demo/`` and others are not rules')."""
RULE_FIXTURE_FILES = sorted(path for folder in RULE_FIXTURE_DIRS for path in folder.glob("*.py"))
PAGES = ROOT / "rules"
GPULINT = Path(sys.executable).parent / ("gpulint.exe" if os.name == "nt" else "gpulint")

_MARKER = re.compile(r"#\s*error:\s*(?P<code>[A-Z]+[0-9]{3})(?:\s+fix=(?P<fix>safe|unsafe|display-only|none))?")


def run_gpulint_raw(
    args: Sequence[str], cwd: Optional[Path] = None, stdin: Optional[bytes] = None, color: bool = False
) -> subprocess.CompletedProcess:
    """Run the installed ``gpulint`` console script; output is bytes."""
    environment = dict(os.environ)
    environment.pop("FORCE_COLOR" if not color else "NO_COLOR", None)
    environment.update({"FORCE_COLOR": "1"} if color else {"NO_COLOR": "1"})
    return subprocess.run([str(GPULINT), *args], cwd=cwd, input=stdin, capture_output=True, env=environment, timeout=120)


def run_gpulint(
    args: Sequence[str], cwd: Optional[Path] = None, stdin: Optional[bytes] = None, color: bool = False
) -> subprocess.CompletedProcess:
    """Run the installed ``gpulint`` console script; output is decoded text."""
    completed = run_gpulint_raw(args, cwd, stdin, color)
    return subprocess.CompletedProcess(
        completed.args, completed.returncode, completed.stdout.decode(), completed.stderr.decode()
    )


@contextlib.contextmanager
def _console(cwd: Optional[Path], stdin: Optional[bytes]) -> Iterator[Tuple[io.BytesIO, io.BytesIO]]:
    """This process as the console script sees it: in ``cwd``, reading ``stdin``, colour off; yields
    what it writes to stdout and stderr."""
    out, err = io.BytesIO(), io.BytesIO()
    streams = [io.TextIOWrapper(buffer, encoding="utf-8", newline="") for buffer in (io.BytesIO(stdin or b""), out, err)]
    previous = os.getcwd()
    with mock.patch.dict(os.environ, {"NO_COLOR": "1"}), mock.patch.multiple(sys, stdin=streams[0], stdout=streams[1], stderr=streams[2]):
        os.environ.pop("FORCE_COLOR", None)
        os.chdir(cwd or previous)
        try:
            yield out, err
        finally:
            os.chdir(previous)
            for stream in streams:
                stream.detach()  # flushes, and leaves the buffers open to be read


def run_main(args: Sequence[str], cwd: Optional[Path] = None, stdin: Optional[bytes] = None) -> subprocess.CompletedProcess:
    """Run ``gpulint.frontend.cli.main`` in this process as ``run_gpulint`` runs the console script, without
    starting one; output is decoded text. Pass ``--jobs 1`` to keep every file in this process too."""
    from gpulint.frontend.cli import main

    with _console(cwd, stdin) as (out, err):
        try:
            code = main(list(args))
        except SystemExit as exit:  # as a process ends: the status given, 0 for None, 1 for a message
            code = exit.code if isinstance(exit.code, int) else int(exit.code is not None)
    return subprocess.CompletedProcess(["gpulint", *args], code, out.getvalue().decode(), err.getvalue().decode())


def expected_markers(source: str) -> Dict[Tuple[int, str], Optional[str]]:
    """(line, code) -> the expected fix applicability (None when the marker does not say)."""
    found = {}
    for number, line in enumerate(source.splitlines(), start=1):
        for match in _MARKER.finditer(line):
            found[(number, match.group("code"))] = match.group("fix")
    return found


def fixture_cases(code: str) -> List[Path]:
    return sorted((FIXTURES / code).glob("*.py"))


def snapshot_path(case: Path, kind: str) -> Path:
    return case.parent / "snapshots" / f"{case.stem}.{kind}.snap"
