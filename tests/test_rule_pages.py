"""The reference pages are executed: their examples are flagged, their fixes are clean."""

from __future__ import annotations

import json
import re

import pytest

from gpulint.engine.linter import lint_source
from gpulint.frontend.pages import SECTIONS, code_blocks, read_page, sections, title
from gpulint.rules import ALL_RULES, RULES_BY_CODE
from tests.helpers import PAGES

RULES = pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)


@RULES
def test_title_matches_the_registry(rule):
    assert title(read_page(rule.code)) == f"# {rule.name} ({rule.code})"


@RULES
def test_page_has_the_fixed_sections_in_order(rule):
    assert list(sections(read_page(rule.code))) == list(SECTIONS)


@RULES
def test_page_states_the_fix_availability(rule):
    page = read_page(rule.code)
    expected = {"always": "Fix is always available.", "sometimes": "Fix is sometimes available.", "none": "No fix is available."}
    assert expected[rule.fix_availability.value] in page


@RULES
def test_example_is_flagged(rule):
    blocks = code_blocks(sections(read_page(rule.code))["Example"])
    assert blocks
    for block in blocks:
        assert [d.code for d in lint_source(block, "example.py", [rule])], block


@RULES
def test_use_instead_is_clean(rule):
    blocks = code_blocks(sections(read_page(rule.code))["Use instead"])
    assert blocks
    for block in blocks:
        assert lint_source(block, "use_instead.py", ALL_RULES) == []



def test_the_gpu001_example_is_fixed_by_plain_fix():
    """The most common GPU001 case, a script's own load used as a state dict, is a safe fix."""
    (block,) = code_blocks(sections(read_page("GPU001"))["Example"])
    (diagnostic,) = lint_source(block, "example.py", [RULES_BY_CODE["GPU001"]])
    assert diagnostic.fix is not None and diagnostic.fix.applicability.value == "safe"


WILD_RESULTS = PAGES.parent / "benchmarks" / "results" / "wild.json"
WILD_LINE = re.compile(
    r"(?P<findings>\d+) findings?(?:, precision (?P<precision>[0-9.]+) \((?P<tp>\d+) TP, (?P<trivial>\d+) trivial, (?P<fp>\d+) false\))?"
    r"(?:, known-TP recall (?P<recall>[0-9.]+) \((?P<reported>\d+)/(?P<known>\d+)\))?"
)


HOLDOUT_SETS = {
    "Held out:": ("wild-holdout-first.json", "wild-holdout.json"),
    "A second held-out set": ("wild-holdout-2-first.json", "wild-holdout-2.json"),
    "A third held-out set": ("wild-holdout-3-first.json", "wild-holdout-3.json"),
    "A fourth held-out set": ("wild-holdout-4-first.json", "wild-holdout-4.json"),
    "A fifth held-out set": ("wild-holdout-5-first.json", "wild-holdout-5.json"),
    "A sixth held-out set": ("wild-holdout-6-first.json", "wild-holdout-6.json"),
    "A seventh held-out set": ("wild-holdout-7-first.json", "wild-holdout-7.json"),
    "An eighth held-out set": ("wild-holdout-8-first.json", "wild-holdout-8.json"),
    "A ninth held-out set": ("wild-holdout-9-first.json", "wild-holdout-9.json"),
    "A tenth held-out set": ("wild-holdout-10-first.json", "wild-holdout-10.json"),
    "An eleventh held-out set": ("wild-holdout-11-first.json", "wild-holdout-11.json"),
    "A twelfth held-out set": ("wild-holdout-12-first.json", "wild-holdout-12.json"),
    "A thirteenth held-out set": ("wild-holdout-13-first.json", "wild-holdout-13.json"),
    "A fourteenth held-out set": ("wild-holdout-14-first.json", "wild-holdout-14.json"),
    "A fifteenth held-out set": ("wild-holdout-15-first.json", "wild-holdout-15.json"),
    "A sixteenth held-out set": ("wild-holdout-16-first.json", "wild-holdout-16.json"),
    "A seventeenth held-out set": ("wild-holdout-17-first.json", "wild-holdout-17.json"),
    "An eighteenth held-out set": ("wild-holdout-18-first.json", "wild-holdout-18.json"),
    "A nineteenth held-out set": ("wild-holdout-19-first.json", "wild-holdout-19.json"),
    "A twentieth held-out set": ("wild-holdout-20-first.json", "wild-holdout-20.json"),
    "A twenty-first held-out set": ("wild-holdout-21-first.json", "wild-holdout-21.json"),
    "A twenty-second held-out set": ("wild-holdout-22-first.json", "wild-holdout-22.json"),
    "A twenty-third held-out set": ("wild-holdout-23-first.json", "wild-holdout-23.json"),
    "A twenty-fourth held-out set": ("wild-holdout-24-first.json", "wild-holdout-24.json"),
    "A twenty-fifth held-out set": ("wild-holdout-25-first.json", "wild-holdout-25.json"),
    "A twenty-sixth held-out set": ("wild-holdout-26-first.json", "wild-holdout-26.json"),
    "A twenty-seventh held-out set": ("wild-holdout-27-first.json", "wild-holdout-27.json"),
    "A twenty-eighth held-out set": ("wild-holdout-28-first.json", "wild-holdout-28.json"),
    "A twenty-ninth held-out set": ("wild-holdout-29-first.json", "wild-holdout-29.json"),
    "A thirtieth held-out set": ("wild-holdout-30-first.json", "wild-holdout-30.json"),
    "A thirty-first held-out set": ("wild-holdout-31-first.json", "wild-holdout-31.json"),
    "A thirty-second held-out set": ("wild-holdout-32-first.json", "wild-holdout-32.json"),
    "A thirty-third held-out set": ("wild-holdout-33-first.json", "wild-holdout-33.json"),
    "A thirty-fourth held-out set": ("wild-holdout-34-first.json", "wild-holdout-34.json"),
    "A thirty-fifth held-out set": ("wild-holdout-35-first.json", "wild-holdout-35.json"),
    "A thirty-sixth held-out set": ("wild-holdout-36-first.json", "wild-holdout-36.json"),
    "A thirty-seventh held-out set": ("wild-holdout-37-first.json", "wild-holdout-37.json"),
    "A thirty-eighth held-out set": ("wild-holdout-38-first.json", "wild-holdout-38.json"),
    "A thirty-ninth held-out set": ("wild-holdout-39-first.json", "wild-holdout-39.json"),
    "A fortieth held-out set": ("wild-holdout-40-first.json", "wild-holdout-40.json"),
    "A forty-first held-out set": ("wild-holdout-41-first.json", "wild-holdout-41.json"),
    "A forty-second held-out set": ("wild-holdout-42-first.json", "wild-holdout-42.json"),
    "A forty-third held-out set": ("wild-holdout-43-first.json", "wild-holdout-43.json"),
    "A forty-fourth held-out set": ("wild-holdout-44-first.json", "wild-holdout-44.json"),
    "A forty-fifth held-out set": ("wild-holdout-45-first.json", "wild-holdout-45.json"),
    "A forty-sixth held-out set": ("wild-holdout-46-first.json", "wild-holdout-46.json"),
    "A forty-seventh held-out set": ("wild-holdout-47-first.json", "wild-holdout-47.json"),
    "A forty-eighth held-out set": ("wild-holdout-48-first.json", "wild-holdout-48.json"),
    "A forty-ninth held-out set": ("wild-holdout-49-first.json", "wild-holdout-49.json"),
    "A fiftieth held-out set": ("wild-holdout-50-first.json", "wild-holdout-50.json"),
    "A fifty-first held-out set": ("wild-holdout-51-first.json", "wild-holdout-51.json"),
    "A fifty-second held-out set": ("wild-holdout-52-first.json", "wild-holdout-52.json"),
    "A fifty-third held-out set": ("wild-holdout-53-first.json", "wild-holdout-53.json"),
    "A fifty-fourth held-out set": ("wild-holdout-54-first.json", "wild-holdout-54.json"),
    "A fifty-fifth held-out set": ("wild-holdout-55-first.json", "wild-holdout-55.json"),
    "A fifty-sixth held-out set": ("wild-holdout-56-first.json", "wild-holdout-56.json"),
    "A fifty-seventh held-out set": ("wild-holdout-57-first.json", "wild-holdout-57.json"),
    "A fifty-eighth held-out set": ("wild-holdout-58-first.json", "wild-holdout-58.json"),
    "A fifty-ninth held-out set": ("wild-holdout-59-first.json", "wild-holdout-59.json"),
    "A sixtieth held-out set": ("wild-holdout-60-first.json", "wild-holdout-60.json"),
    "A sixty-first held-out set": ("wild-holdout-61-first.json", "wild-holdout-61.json"),
    "A sixty-second held-out set": ("wild-holdout-62-first.json", "wild-holdout-62.json"),
}
HOLDOUT_FIGURES = r"the first measurement gave (?P<first>[^;]*); now (?P<now>[^.]*(?:\.\d+[^.]*)*)\."


@RULES
def test_page_states_the_committed_wild_precision(rule):
    """Each page's figures are the committed benchmark's, so a rule change that moves them shows."""
    text = sections(read_page(rule.code))["Precision in the wild"]
    _check_figures(WILD_LINE.search(text), WILD_RESULTS, rule.code, text)


@RULES
@pytest.mark.parametrize("held_out_set", sorted(HOLDOUT_SETS))
def test_page_states_the_committed_held_out_precision(rule, held_out_set):
    """Each held-out set's figures, first measured and now, are the committed benchmark's."""
    text = sections(read_page(rule.code))["Precision in the wild"]
    held_out = re.search(re.escape(held_out_set) + ".*?" + HOLDOUT_FIGURES, text, re.DOTALL)
    assert held_out, text
    for when, results in zip(("first", "now"), HOLDOUT_SETS[held_out_set]):
        _check_figures(WILD_LINE.match(held_out[when]), WILD_RESULTS.parent / results, rule.code, held_out[when])


def _check_figures(match, results, code, text):
    figures = json.loads(results.read_text(encoding="utf-8"))["rules"].get(code)
    assert match, text
    findings = figures["findings"] if figures else 0
    assert int(match["findings"]) == findings
    if findings:
        assert float(match["precision"]) == figures["precision"]
        assert (int(match["tp"]), int(match["trivial"]), int(match["fp"])) == (figures["TP"], figures["TRIVIAL"], figures["FP"])
    if figures and figures["known_tp"]:
        assert float(match["recall"]) == figures["known_tp_recall"]
        assert (int(match["reported"]), int(match["known"])) == (figures["known_tp_reported"], figures["known_tp"])


RUNTIME_GPU = PAGES.parent / "benchmarks" / "results" / "runtime-gpu.json"
MIB = 2 ** 20


def _gpu_results() -> dict:
    """The committed run of ``fixtures/runtime/gpu_check.sh`` on a GPU."""
    return json.loads(RUNTIME_GPU.read_text(encoding="utf-8"))


def _mib(value: int) -> str:
    return f"{value / MIB:.1f} MiB"


def _table_mib(value: int) -> str:
    return "0 MiB" if value == 0 else _mib(value)


def test_the_committed_gpu_run_passed_everywhere():
    """The GPU results the pages quote come from a run on a GPU where every scenario passed, every
    fixed program agreed with the unfixed one and every mutant was caught."""
    results = _gpu_results()
    assert results["environment"]["cuda_usable"] and results["environment"]["device"] == "cuda"
    assert all(scenario["passed"] and scenario["mode"] == "gpu" for scenario in results["scenarios"])
    assert all(scenario["checksums"][0] == scenario["checksums"][1] for scenario in results["scenarios"])
    assert results["mutants"] and all(mutant["caught"] for mutant in results["mutants"])


@RULES
def test_page_states_the_gpu_figures_measured(rule):
    """Each figure the GPU run checked or recorded for a rule is on the rule's page, in the
    "Measured effect" line of its scenario: unfixed → fixed, and for a check, the saving against
    the expected one."""
    results = _gpu_results()
    section = sections(read_page(rule.code))["Measured effect"]
    assert "awaiting a GPU run" not in section
    for scenario in results["scenarios"]:
        checks = [check for check in scenario["checks"] if check["rule"] == rule.code]
        if not checks:
            continue
        lines = [line for line in section.splitlines() if line.strip().startswith(f"- `{scenario['scenario']}`:")]
        assert len(lines) == 1, (rule.code, scenario["scenario"])
        for check in checks:
            if "graph_nodes" in check["metric"]:
                assert f"{check['bad']} → {check['fixed']} nodes" in lines[0], check
                continue
            assert f"{_mib(check['bad'])} → {_mib(check['fixed'])}" in lines[0], check
            if not check["informational"]:
                assert f"saved {_mib(check['saving'])} of the {_mib(check['expected_saving'])} expected" in lines[0], check


def test_readme_gpu_table_is_the_committed_run():
    """Every row of the README's GPU table gives the committed run's unfixed, fixed and saved figures
    for the check it names."""
    readme = (PAGES.parent / "README.md").read_text(encoding="utf-8")
    rows = [line for line in readme.splitlines() if re.match(r"\| (GPU00\d|all) \| .* \| \d+% \|$", line)]
    assert len(rows) == 8
    stated = {tuple(cell.strip() for cell in row.strip("|").split("|")[3:6]) for row in rows}
    measured = set()
    for scenario in _gpu_results()["scenarios"]:
        for check in scenario["checks"]:
            if "graph_nodes" in check["metric"]:
                measured.add((str(check["bad"]), str(check["fixed"]), str(check["saving"])))
            else:
                measured.add((_table_mib(check["bad"]), _table_mib(check["fixed"]), _table_mib(check["saving"])))
    assert stated <= measured, stated - measured


POOLED_LINE = re.compile(r"Over the (?P<sets>\d+) held-out sets together \([^)]*\): " + WILD_LINE.pattern + r"\.")


@RULES
def test_page_states_the_pooled_held_out_precision(rule):
    """The held-out sets' committed figures summed: what a rule does on code it was not tuned on."""
    text = sections(read_page(rule.code))["Precision in the wild"]
    match = POOLED_LINE.search(text)
    assert match, text
    results = [path for path in WILD_RESULTS.parent.glob("wild-holdout*.json") if not path.name.endswith("-first.json")]
    assert int(match["sets"]) == len(results)
    totals = {key: 0 for key in ("findings", "TP", "TRIVIAL", "FP", "known_tp", "known_tp_reported")}
    for path in results:
        figures = json.loads(path.read_text(encoding="utf-8"))["rules"].get(rule.code)
        for key in totals:
            totals[key] += figures[key] if figures else 0
    assert int(match["findings"]) == totals["findings"]
    judged = totals["TP"] + totals["TRIVIAL"] + totals["FP"]
    if judged:
        assert float(match["precision"]) == round(totals["TP"] / judged, 3)
        assert (int(match["tp"]), int(match["trivial"]), int(match["fp"])) == (totals["TP"], totals["TRIVIAL"], totals["FP"])
    if totals["known_tp"]:
        assert float(match["recall"]) == round(totals["known_tp_reported"] / totals["known_tp"], 3)
        assert (int(match["reported"]), int(match["known"])) == (totals["known_tp_reported"], totals["known_tp"])
