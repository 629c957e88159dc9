"""Every finding whose fix is unsafe, or that has none, says why in one line of help."""

from __future__ import annotations

import json

import pytest

from tests.helpers import FIXTURES, RULE_FIXTURE_FILES, ROOT, run_gpulint


@pytest.fixture(scope="module")
def fixture_findings():
    relatives = [str(path.relative_to(ROOT)) for path in RULE_FIXTURE_FILES]
    return json.loads(run_gpulint(["check", "--no-cache", "--format", "json", *relatives], cwd=ROOT).stdout)


def test_every_unsafe_or_missing_fix_says_why(fixture_findings):
    unexplained = [
        f"{item['path']}:{item['line']} {item['code']}"
        for item in fixture_findings
        if (item["fix"] is None or item["fix"]["applicability"] != "safe") and not item["fix_note"]
    ]
    assert not unexplained
    assert {item["fix"] is None for item in fixture_findings} == {True, False}, "both kinds are exercised"


def test_a_safe_fix_needs_no_excuse(fixture_findings):
    assert all(not item["fix_note"] for item in fixture_findings if item["fix"] and item["fix"]["applicability"] == "safe")


def test_the_text_format_shows_the_reason(tmp_path):
    (tmp_path / "lib.py").write_text("import torch\nweights = torch.load('w.pt')\nprint(weights.sum())\n")
    result = run_gpulint(["check", "lib.py"], cwd=tmp_path)
    assert (
        "= help: Add `map_location=\"cpu\"` (unsafe fix, applied only with --unsafe-fixes: "
        "the loaded value is used other than as a state dict, so the device its tensors are on may matter)"
    ) in result.stdout
    demo = run_gpulint(["check", "--no-cache", str(FIXTURES / "GPU005")], cwd=tmp_path)
    assert "= help: no fix: " in demo.stdout
