"""``benchmarks/wild.py``: findings scored against hand verdicts, through the real console script.

Two small "repositories" stand in for the checkouts; the verdict file judges some of their findings.
Each test changes one thing a wrong scorer would get wrong.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

from tests.helpers import ROOT

WILD = ROOT / "benchmarks" / "wild.py"
HEADER = "repo\tpath\tline\tcell\trule\tverdict\tfix\tcause\n"

TRAIN = '''import torch

model = torch.nn.Linear(4096, 4096)


def resume(path):
    model.load_state_dict(torch.load(path))


def scheduler_state(path, scheduler):
    scheduler.load_state_dict(torch.load(path))


def reload_whole(path):
    return torch.load(path).eval()
'''


def _setup(tmp_path: Path, verdict_rows: str) -> Path:
    src = tmp_path / "src"
    (src / "someone__trainer").mkdir(parents=True, exist_ok=True)
    (src / "someone__trainer" / "train.py").write_text(TRAIN, encoding="utf-8")
    (src / "other__empty").mkdir(exist_ok=True)
    (src / "other__empty" / "util.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "manifest.tsv").write_text(
        "repo\tcommit\tkind\tpython_files\tnotebooks\n"
        "someone/trainer\t" + "a" * 40 + "\ttraining\t1\t0\nother/empty\t" + "b" * 40 + "\tutility\t1\t0\n",
        encoding="utf-8",
    )
    (tmp_path / "verdicts.tsv").write_text(HEADER + verdict_rows, encoding="utf-8")
    return src


def _run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(WILD), "--src", str(tmp_path / "src"), "--manifest", str(tmp_path / "manifest.tsv"),
               "--verdicts", str(tmp_path / "verdicts.tsv"), "--jobs", "1", *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


ALL_JUDGED = (
    "someone/trainer\ttrain.py\t7\t-\tGPU001\tTP\tsame\tstate dict saved from the GPU\n"
    "someone/trainer\ttrain.py\t11\t-\tGPU001\tFP\tsame\tscheduler state, no tensors\n"
    "someone/trainer\ttrain.py\t15\t-\tGPU001\tTP\tchanges\twhole model used on the device\n"
)


def test_every_finding_judged_gives_precision_recall_and_results(tmp_path):
    _setup(tmp_path, ALL_JUDGED + "someone/trainer\ttrain.py\t3\t-\tGPU001\tMISS\t-\tnot a real call, never reported\n")
    results = tmp_path / "wild.json"
    completed = _run(tmp_path, "--results", str(results))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    figures = json.loads(results.read_text(encoding="utf-8"))
    gpu001 = figures["rules"]["GPU001"]
    assert (gpu001["findings"], gpu001["TP"], gpu001["TRIVIAL"], gpu001["FP"], gpu001["unjudged"]) == (3, 2, 0, 1, 0)
    assert gpu001["precision"] == 0.667
    assert (gpu001["known_tp"], gpu001["known_tp_reported"], gpu001["known_tp_recall"]) == (3, 2, 0.667)
    assert gpu001["fixes"] == {"safe": 2, "unsafe": 1}
    assert figures["repositories"] == 2 and figures["fix_violations"] == []
    assert "GPU001  3" in completed.stdout


def test_strict_precision_counts_cpu_saved_checkpoints_as_false_alarms(tmp_path):
    rows = ALL_JUDGED.replace("state dict saved from the GPU", "state dict saved from the CPU elsewhere")
    _setup(tmp_path, rows)
    results = tmp_path / "wild.json"
    assert _run(tmp_path, "--results", str(results)).returncode == 0
    gpu001 = json.loads(results.read_text(encoding="utf-8"))["rules"]["GPU001"]
    assert (gpu001["precision"], gpu001["strict_precision"]) == (0.667, 0.333)


def test_unjudged_findings_are_listed_and_block_the_results(tmp_path):
    _setup(tmp_path, ALL_JUDGED.splitlines(keepends=True)[0])
    results, unjudged = tmp_path / "wild.json", tmp_path / "new.tsv"
    completed = _run(tmp_path, "--results", str(results), "--unjudged", str(unjudged))
    assert completed.returncode == 1
    assert not results.exists()
    rows = unjudged.read_text(encoding="utf-8").splitlines()
    assert [row.split("\t")[:5] for row in rows[1:]] == [
        ["someone/trainer", "train.py", "11", "-", "GPU001"], ["someone/trainer", "train.py", "15", "-", "GPU001"],
    ]
    assert "2 finding(s) not judged yet" in completed.stdout


def test_a_safe_fix_where_the_verdict_says_it_changes_behaviour_is_a_violation(tmp_path):
    _setup(tmp_path, ALL_JUDGED.replace("TP\tsame\tstate dict", "TP\tchanges\tstate dict"))
    completed = _run(tmp_path)
    assert completed.returncode == 1
    assert "fix against the verdict: someone/trainer train.py cell  line 7 GPU001: offered safe, judged changes" in completed.stdout


def test_any_fix_where_the_verdict_says_wrong_is_a_violation(tmp_path):
    _setup(tmp_path, ALL_JUDGED.replace("TP\tchanges\twhole", "TP\twrong\twhole"))
    completed = _run(tmp_path)
    assert completed.returncode == 1
    assert "line 15 GPU001: offered unsafe, judged wrong" in completed.stdout


def test_a_miss_that_becomes_reported_is_judged_by_a_second_row_and_counts_once(tmp_path):
    miss = "someone/trainer\ttrain.py\t7\t-\tGPU001\tMISS\t-\tstate dict saved from the GPU, not reported before\n"
    rest = "".join(ALL_JUDGED.splitlines(keepends=True)[1:])
    _setup(tmp_path, miss + rest)
    assert _run(tmp_path, "--results", str(tmp_path / "refused.json")).returncode == 1, "a reported MISS needs a judgement"
    _setup(tmp_path, miss + rest + ALL_JUDGED.splitlines(keepends=True)[0])
    results = tmp_path / "wild.json"
    completed = _run(tmp_path, "--results", str(results))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    gpu001 = json.loads(results.read_text(encoding="utf-8"))["rules"]["GPU001"]
    assert (gpu001["TP"], gpu001["known_tp"], gpu001["known_tp_reported"]) == (2, 2, 2)
    _setup(tmp_path, ALL_JUDGED + ALL_JUDGED.splitlines(keepends=True)[0].replace("\tTP\t", "\tMISS\t"))
    assert _run(tmp_path).returncode == 2, "a MISS row after a judged row is a second judgement"


def test_a_reported_miss_judged_trivial_counts_against_precision_and_stays_a_known_tp(tmp_path):
    miss = "someone/trainer\ttrain.py\t7\t-\tGPU001\tMISS\t-\tstate dict saved from the GPU, not reported before\n"
    rest = "".join(ALL_JUDGED.splitlines(keepends=True)[1:])
    trivial = ALL_JUDGED.splitlines(keepends=True)[0].replace("\tTP\t", "\tTRIVIAL\t")
    _setup(tmp_path, miss + rest + trivial)
    results = tmp_path / "wild.json"
    completed = _run(tmp_path, "--results", str(results))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    gpu001 = json.loads(results.read_text(encoding="utf-8"))["rules"]["GPU001"]
    assert (gpu001["TP"], gpu001["TRIVIAL"]) == (1, 1), "the finding counts as judged when reported"
    assert (gpu001["known_tp"], gpu001["known_tp_reported"]) == (2, 2), "the MISS row still counts for recall"
    _setup(tmp_path, miss + rest + trivial + ALL_JUDGED.splitlines(keepends=True)[0])
    assert _run(tmp_path).returncode == 2, "a reported MISS is judged once"


def test_findings_lists_every_finding_with_its_verdict_and_what_was_offered(tmp_path):
    miss = "someone/trainer\ttrain.py\t7\t-\tGPU001\tMISS\t-\tstate dict saved from the GPU, not reported before\n"
    _setup(tmp_path, miss + "".join(ALL_JUDGED.splitlines(keepends=True)[1:]))
    listing = tmp_path / "findings.tsv"
    _run(tmp_path, "--findings", str(listing))
    header, *rows = [line.split("\t") for line in listing.read_text(encoding="utf-8").splitlines()]
    assert header[:8] == ["repo", "path", "line", "cell", "rule", "verdict", "fix", "offered fix"]
    by_line = {row[2]: row for row in rows}
    assert sorted(by_line) == ["11", "15", "7"]
    assert by_line["7"][5:8] == ["UNJUDGED", "", "safe"], "a MISS row judges no reported finding"
    assert by_line["11"][5:7] == ["FP", "same"] and by_line["11"][8] == "scheduler state, no tensors"
    assert by_line["15"][5] == "TP" and by_line["15"][9].startswith("`torch.load")


def test_malformed_verdicts_and_missing_checkouts_are_errors(tmp_path):
    _setup(tmp_path, ALL_JUDGED + ALL_JUDGED.splitlines(keepends=True)[0])
    assert _run(tmp_path).returncode == 2
    _setup(tmp_path, ALL_JUDGED.replace("\tFP\t", "\tMAYBE\t"))
    assert _run(tmp_path).returncode == 2
    _setup(tmp_path, ALL_JUDGED)
    (tmp_path / "src" / "other__empty" / "util.py").unlink()
    (tmp_path / "src" / "other__empty").rmdir()
    completed = _run(tmp_path)
    assert completed.returncode == 2 and "other/empty" in completed.stderr


def test_allow_missing_scores_the_checkouts_there_are_and_writes_no_results(tmp_path):
    missed = "other/empty\tutil.py\t1\t-\tGPU001\tMISS\t-\ta load the rule should see\n"
    _setup(tmp_path, ALL_JUDGED + missed)
    (tmp_path / "src" / "other__empty" / "util.py").unlink()
    (tmp_path / "src" / "other__empty").rmdir()
    results = tmp_path / "results.json"
    completed = _run(tmp_path, "--allow-missing", "--unjudged", str(tmp_path / "unjudged.tsv"))
    assert completed.returncode == 0, completed.stderr
    assert "1 repositories, 3 findings, 3 verdict rows" in completed.stdout
    assert "1 repositories left out, without a checkout (their verdicts too): other/empty" in completed.stdout
    assert "1.0 (2/2)" in completed.stdout, "the left-out repository's MISS row is no known TP"
    completed = _run(tmp_path, "--allow-missing", "--results", str(results))
    assert completed.returncode == 1 and "no checkout" in completed.stderr and not results.exists()


def test_the_committed_verdicts_are_well_formed_and_cover_the_manifest():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import wild
    finally:
        sys.path.pop(0)
    manifest = wild.read_manifest()
    verdicts = wild.read_verdicts()
    assert len(manifest) >= 30
    assert all(len(row["commit"]) == 40 for row in manifest)
    assert {v.repo for v in verdicts} <= {row["repo"] for row in manifest}
    results = json.loads((ROOT / "benchmarks" / "results" / "wild.json").read_text(encoding="utf-8"))
    assert results["verdict_rows"] <= len(verdicts)
    assert all(figures["unjudged"] == 0 for figures in results["rules"].values())


def test_a_checkout_lacking_files_its_commit_holds_is_named(tmp_path):
    _setup(tmp_path, ALL_JUDGED)
    completed = _run(tmp_path)
    assert "the checkout holds" not in completed.stdout
    (tmp_path / "src" / "other__empty" / "util.py").unlink()
    completed = _run(tmp_path)
    assert completed.returncode == 0
    assert "other/empty: the checkout holds 0 Python file(s) and 0 notebook(s), the commit 1 and 0" in completed.stdout
    assert "someone/trainer: the checkout" not in completed.stdout
    (tmp_path / "src" / "other__empty" / "util.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "src" / "other__empty" / ".git").mkdir()
    (tmp_path / "src" / "other__empty" / ".git" / "hook.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "src" / "other__empty" / "demo.ipynb").write_text("{}", encoding="utf-8")
    completed = _run(tmp_path)
    assert "other/empty: the checkout holds 1 Python file(s) and 1 notebook(s), the commit 1 and 0" in completed.stdout


def test_rules_remeasures_those_rules_alone_and_merges_their_figures_into_the_results(tmp_path):
    _setup(tmp_path, ALL_JUDGED)
    results = tmp_path / "results.json"
    assert _run(tmp_path, "--results", str(results)).returncode == 0
    before = json.loads(results.read_text(encoding="utf-8"))
    before["rules"]["GPU004"] = {"findings": 5, "TP": 5, "TRIVIAL": 0, "FP": 0}
    before["findings"] += 5
    before["fix_violations"] = [{"rule": "GPU004", "line": 1}, {"rule": "GPU001", "line": 2}]
    results.write_text(json.dumps(before), encoding="utf-8")
    train = tmp_path / "src" / "someone__trainer" / "train.py"
    train.write_text(TRAIN.replace("torch.load(path))\n\n\ndef reload", "{}) \n\n\ndef reload"), encoding="utf-8")
    (tmp_path / "src" / "other__empty" / "util.py").unlink()
    (tmp_path / "src" / "other__empty").rmdir()
    assert _run(tmp_path, "--results", str(results)).returncode == 2, "a whole run still needs every checkout"
    completed = _run(tmp_path, "--rules", "GPU001", "--results", str(results))
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "1 repositories with no verdict row of GPU001 not re-run, without a checkout" in completed.stdout
    after = json.loads(results.read_text(encoding="utf-8"))
    gpu001 = after["rules"]["GPU001"]
    assert (gpu001["findings"], gpu001["TP"], gpu001["FP"], gpu001["judged_no_longer_reported"]) == (2, 2, 0, 1)
    assert after["rules"]["GPU004"] == before["rules"]["GPU004"]
    assert after["findings"] == 5 + 2 and after["repositories"] == before["repositories"]
    assert after["fix_violations"] == [{"rule": "GPU004", "line": 1}]
    (tmp_path / "verdicts.tsv").write_text(HEADER + ALL_JUDGED + "other/empty\tutil.py\t1\t-\tGPU001\tMISS\t-\ta load\n", encoding="utf-8")
    completed = _run(tmp_path, "--rules", "GPU001")
    assert completed.returncode == 2 and "other/empty" in completed.stderr, "a repository with rows of the rule needs its checkout"


def test_the_second_reading_matches_the_verdicts_and_the_counts_the_readme_gives():
    """Each finding read again carries the verdict its set's file gives it, and the agreement the
    README states is what the file holds."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import wild
    finally:
        sys.path.pop(0)
    folder = ROOT / "benchmarks" / "wild"
    with (folder / "agreement-second-reading.tsv").open(encoding="utf-8", newline="") as stream:
        rows = list(csv.DictReader(stream, delimiter="\t"))
    assert len(rows) == 40
    for row in rows:
        verdicts = {v.key: v for v in wild.read_verdicts(folder / f"{row['set']}-verdicts.tsv")}
        key = wild.Verdict(row["repo"], row["path"], "" if row["cell"] == "-" else row["cell"], int(row["line"]), row["rule"], "", "", "").key
        assert verdicts[key].verdict == row["first_verdict"], row
        assert row["second_verdict"] in ("TP", "TRIVIAL", "FP") and row["second_fix"] in ("same", "changes", "wrong")
    agree = sum((row["first_verdict"] == "TP") == (row["second_verdict"] == "TP") for row in rows)
    trivial_read_as_tp = sum(row["first_verdict"] == "TRIVIAL" and row["second_verdict"] == "TP" for row in rows)
    readme = (folder / "README.md").read_text(encoding="utf-8")
    assert f"The two readings agree on {agree} of {len(rows)}" in readme
    assert f"Of the {sum(row['first_verdict'] == 'TRIVIAL' for row in rows)} first judged TRIVIAL, {trivial_read_as_tp} were read as TP" in readme


def test_a_file_given_up_on_blocks_the_results_and_is_named(tmp_path):
    _setup(tmp_path, ALL_JUDGED)
    results = tmp_path / "wild.json"
    assert _run(tmp_path, "--results", str(results), "--file-time-budget", "60").returncode == 0
    results.unlink()
    completed = _run(tmp_path, "--results", str(results), "--file-time-budget", "0.000001")
    assert completed.returncode == 1
    assert not results.exists()
    assert "not checked for a reason a rerun may not repeat" in completed.stdout
    assert "someone/trainer train.py (gave up after" in completed.stdout
    assert "went unchecked" in completed.stderr


def _table_cell(figures: dict, key: str, digits: int, shown_by: str) -> str:
    return f"{figures.get(key) or 0:.{digits}f}" if figures.get(shown_by) else "—"


def _table_row(code: str, first: dict, now: dict) -> str:
    """A held-out set's row as the README gives it: each figure first measured → now."""
    pairs = [f"{first.get(key, 0)} → {now.get(key, 0)}" for key in ("findings", "TP", "TRIVIAL", "FP")]
    precision = " → ".join(_table_cell(figures, "precision", 3, "findings") for figures in (first, now))
    recall = " → ".join(_table_cell(figures, "known_tp_recall", 2, "known_tp") for figures in (first, now))
    return "| " + " | ".join([code, *pairs, precision, recall]) + " |"


def test_each_held_out_sets_table_in_the_readme_is_its_committed_results():
    """Every "Set N, first measurement → now" table gives, for each rule it lists and each rule with
    a finding in either measurement, the figures of the set's two committed results files."""
    readme = (ROOT / "benchmarks" / "wild" / "README.md").read_text(encoding="utf-8")
    results = ROOT / "benchmarks" / "results"
    tables = re.findall(r"(?m)^Set (\d+), first measurement → now:\n\n\|[^\n]*\n\|[^\n]*\n((?:\|[^\n]*\n)+)", readme)
    assert len(tables) == len(list(results.glob("wild-holdout*-first.json")))
    for number, rows in tables:
        name = "wild-holdout" if number == "1" else f"wild-holdout-{number}"
        first, now = (json.loads((results / f"{name}{end}.json").read_text(encoding="utf-8"))["rules"] for end in ("-first", ""))
        listed = [row.strip("|").split("|")[0].strip() for row in rows.strip().split("\n")]
        with_findings = {code for figures in (first, now) for code, found in figures.items() if found["findings"]}
        assert with_findings <= set(listed), (number, with_findings - set(listed))
        expected = [_table_row(code, first.get(code) or {}, now.get(code) or {}) for code in listed]
        assert rows.strip().split("\n") == expected, number


def _set_cell(first: dict, now: dict) -> str:
    """A rule's cell in the README's table of held-out sets: findings and precision, first → now."""
    precision = " → ".join(f"{figures['precision']:.2f}" if figures.get("findings") else "—" for figures in (first, now))
    return f"{first.get('findings', 0)} → {now.get('findings', 0)}: {precision}"


def test_the_project_readmes_table_of_held_out_sets_is_the_committed_results():
    """The project README's table gives every held-out set, in order, with each rule's findings and
    precision from the set's two committed results files."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    results = ROOT / "benchmarks" / "results"
    table = re.search(r"\| set \| (GPU00\d(?: \| GPU00\d)*) \|\n\|[^\n]*\n((?:\|[^\n]*\n)+)", readme)
    assert table
    codes = table[1].split(" | ")
    numbers = sorted(int(re.fullmatch(r"wild-holdout-?(\d*)-first\.json", path.name)[1] or 1) for path in results.glob("wild-holdout*-first.json"))
    expected = []
    for number in numbers:
        name = "wild-holdout" if number == 1 else f"wild-holdout-{number}"
        first, now = (json.loads((results / f"{name}{end}.json").read_text(encoding="utf-8"))["rules"] for end in ("-first", ""))
        expected.append(f"| {number} | " + " | ".join(_set_cell(first.get(code) or {}, now.get(code) or {}) for code in codes) + " |")
    assert table[2].strip().split("\n") == expected
