"""Precision in the wild: run gpulint over real user repositories and score every finding.

    python benchmarks/wild.py --src DIR                   # score against benchmarks/wild/verdicts.tsv
    python benchmarks/wild.py --src DIR --unjudged new.tsv   # also write rows to judge for new findings
    python benchmarks/wild.py --src DIR --results benchmarks/results/wild.json

DIR holds one folder per repository of ``benchmarks/wild/manifest.tsv``, named ``owner__name`` and
checked out at the pinned commit (``benchmarks/wild/README.md`` says how). Each folder is checked
the way a user would check it, with the console script run inside it (``gpulint check .``, unsafe
fixes shown). Every finding is looked up in the verdict file by repository, path, notebook cell,
line and rule. Per rule the script prints the findings, how they were judged (TP, TRIVIAL, FP),
precision = TP / (TP + TRIVIAL + FP), the known-TP recall (judged TPs and MISS rows that are still
reported), the strict precision (a checkpoint the repository saves from the CPU today counted as
a false alarm), the findings not yet judged, and every offered fix that the verdicts say must not be
offered: a *safe* fix at a site where the fix changes behaviour, or any fix at a site where it is
wrong. ``--results`` writes the figures only when every finding is judged, every repository has a
checkout and gpulint checked every file it could read (none given up on at the per-file time budget,
``--file-time-budget``, or lost to an internal error, whose findings would be missing);
``--allow-missing`` scores the checkouts there are (a repository deleted or made private since it
was pinned), naming the ones left out and leaving out their verdicts too. A checkout whose Python
files or notebooks do not number what the manifest counts in its commit is named, since findings
in the files it lacks are not measured.

``--findings FILE`` writes every finding with its verdict, the fix offered and the message, to read
them one by one or to compare two runs.

``--rules GPU003,GPU004`` re-measures those rules alone, for a change to them that can only remove
findings: a repository with no verdict row of them may lack a checkout (those rules report nothing
there, and such a change keeps it so), the findings of other rules are not scored, and
``--results`` replaces those rules' figures in the results file already there, keeping the rest. A
change that may add findings needs the whole run, since a new finding in a repository without a
checkout would go unseen.

Exit status: 0 when every finding is judged, every readable file checked and no fix breaks a
verdict, 1 otherwise, 2 on bad input (a missing checkout, a malformed verdict row).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MANIFEST = HERE / "wild" / "manifest.tsv"
VERDICTS = HERE / "wild" / "verdicts.tsv"

STRICT_CAUSE = "saved from the cpu elsewhere"
"""GPU001 TPs noted with this cause load a checkpoint the repository saves from the CPU today: the
strict precision counts them as false alarms."""
VERDICT_COLUMNS = ["repo", "path", "line", "cell", "rule", "verdict", "fix", "cause"]
JUDGED = ("TP", "TRIVIAL", "FP")
VERDICTS_ALLOWED = frozenset(JUDGED + ("MISS",))
FIX_JUDGEMENTS = frozenset({"same", "changes", "wrong", "-"})
UNREPEATABLE_SKIPS = ("internal error:", "gave up after")
"""How gpulint's report begins the message of a file it did not check for a reason a rerun may not
repeat (an internal error, the per-file time budget), unlike a file it cannot read or parse: that
file's findings are missing from the figures, so they are not written."""
"""What the rule's fix would do at the site: keep behaviour (``same``), change it in a way the user
must review (``changes``: unsafe at best), or break the program (``wrong``: cut gradients training
needs, change results; no fix may be offered); ``-`` where no fix is in question (MISS rows)."""

Key = Tuple[str, str, str, int, str]
"""(repository, path inside it, notebook cell or "", line, rule)."""


class InputError(Exception):
    """A missing checkout or a malformed manifest or verdict file."""


@dataclass(frozen=True)
class Finding:
    repo: str
    path: str
    cell: str
    line: int
    column: int
    rule: str
    message: str
    fix: Optional[str]
    """Applicability of the offered fix (``safe``, ``unsafe``, ``display-only``) or None."""

    @property
    def key(self) -> Key:
        return (self.repo, self.path, self.cell, self.line, self.rule)


@dataclass(frozen=True)
class Verdict:
    repo: str
    path: str
    cell: str
    line: int
    rule: str
    verdict: str
    fix: str
    cause: str

    @property
    def key(self) -> Key:
        return (self.repo, self.path, self.cell, self.line, self.rule)


def read_manifest(path: Path = MANIFEST) -> List[Dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as stream:
        rows = list(csv.DictReader(stream, delimiter="\t"))
    if not rows or "repo" not in rows[0] or "commit" not in rows[0]:
        raise InputError(f"{path}: expected a TSV with at least the columns repo and commit")
    return rows


def checkout_folder(src: Path, repo: str) -> Path:
    return src / repo.replace("/", "__")


def count_sources(folder: Path) -> Tuple[int, int]:
    """The Python files and notebooks under a checkout (``.git`` left out), counted as the manifest's
    ``python_files`` and ``notebooks`` columns count them in the pinned commit's tree."""
    python_files = notebooks = 0
    for _root, folders, files in os.walk(folder):
        folders[:] = [name for name in folders if name != ".git"]
        python_files += sum(name.endswith(".py") for name in files)
        notebooks += sum(name.endswith(".ipynb") for name in files)
    return python_files, notebooks


def incomplete_checkout(folder: Path, row: Dict[str, str]) -> Optional[str]:
    """Why a checkout does not hold what the manifest row counts in its commit (files missing, as a
    shallow or size-limited copy may leave out large notebooks), or None where it does or the row
    counts nothing."""
    if not row.get("python_files", "").isdigit() or not row.get("notebooks", "").isdigit():
        return None
    expected = (int(row["python_files"]), int(row["notebooks"]))
    found = count_sources(folder)
    if found == expected:
        return None
    return (
        f"the checkout holds {found[0]} Python file(s) and {found[1]} notebook(s), the commit "
        f"{expected[0]} and {expected[1]}: findings in files it lacks are not measured"
    )


def read_verdicts(path: Path = VERDICTS) -> List[Verdict]:
    verdicts: List[Verdict] = []
    seen: Dict[Key, Tuple[int, str]] = {}
    with path.open(newline="", encoding="utf-8") as stream:
        reader = csv.reader(stream, delimiter="\t")
        header = next(reader, None)
        if header != VERDICT_COLUMNS:
            raise InputError(f"{path}: the header must be {' '.join(VERDICT_COLUMNS)}")
        for number, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) != len(VERDICT_COLUMNS):
                raise InputError(f"{path}:{number}: expected {len(VERDICT_COLUMNS)} columns, got {len(row)}")
            repo, file, line, cell, rule, verdict, fix, cause = (value.strip() for value in row)
            if verdict not in VERDICTS_ALLOWED:
                raise InputError(f"{path}:{number}: verdict {verdict!r} is not one of {sorted(VERDICTS_ALLOWED)}")
            if fix not in FIX_JUDGEMENTS:
                raise InputError(f"{path}:{number}: fix {fix!r} is not one of {sorted(FIX_JUDGEMENTS)}")
            if not cause or not line.isdigit():
                raise InputError(f"{path}:{number}: every row needs a line number and a cause")
            entry = Verdict(repo, file, "" if cell in ("", "-") else cell, int(line), rule, verdict, fix, cause)
            if entry.key in seen and not (seen[entry.key][1] == "MISS" and verdict != "MISS"):
                raise InputError(f"{path}:{number}: the same finding is judged on line {seen[entry.key][0]}")
            seen[entry.key] = (number, verdict)
            verdicts.append(entry)
    return verdicts


def run_gpulint(
    folder: Path, repo: str, jobs: Optional[int], time_budget: Optional[float] = None,
) -> Tuple[List[Finding], List[Tuple[str, str]]]:
    """The console script's findings in one checkout, and the files it skipped (listed in its JSON
    report with ``"code": null``), each as its path and why."""
    command = [sys.executable, "-m", "gpulint", "check", ".", "--format", "json", "--exit-zero", "--no-cache", "--unsafe-fixes", "-q"]
    if jobs is not None:
        command += ["--jobs", str(jobs)]
    if time_budget is not None:
        command += ["--file-time-budget", str(time_budget)]
    completed = subprocess.run(command, cwd=folder, capture_output=True, text=True)
    # Exit 2 with a JSON report means some files could not be read or parsed: they are listed, not fatal.
    if completed.returncode not in (0, 2) or not completed.stdout.startswith("["):
        raise InputError(f"gpulint failed in {folder} (exit {completed.returncode}):\n{completed.stderr}")
    report = json.loads(completed.stdout)
    findings = [
        Finding(
            repo=repo,
            path=item["path"],
            cell="" if item["cell"] is None else str(item["cell"]),
            line=item["line"],
            column=item["column"],
            rule=item["code"],
            message=item["message"],
            fix=item["fix"]["applicability"] if item["fix"] else None,
        )
        for item in report
        if item["code"] is not None
    ]
    skipped = [(item["path"], item["message"]) for item in report if item["code"] is None]
    return findings, skipped


def ratio(numerator: int, denominator: int) -> Optional[float]:
    return round(numerator / denominator, 3) if denominator else None


def score(findings: Sequence[Finding], verdicts: Sequence[Verdict]) -> dict:
    """Per-rule counts, precision and known-TP recall, the unjudged findings and the fix violations."""
    by_key = {v.key: v for v in verdicts}
    reported = {f.key for f in findings}
    rules = sorted({f.rule for f in findings} | {v.rule for v in verdicts})
    per_rule: Dict[str, dict] = {}
    unjudged: List[Finding] = []
    violations: List[dict] = []
    for finding in findings:
        verdict = by_key.get(finding.key)
        if verdict is None or verdict.verdict == "MISS":
            unjudged.append(finding)
            continue
        if finding.fix is not None and (verdict.fix == "wrong" or (finding.fix == "safe" and verdict.fix == "changes")):
            violations.append({**_where(finding), "offered": finding.fix, "judged": verdict.fix, "cause": verdict.cause})
    for rule in rules:
        mine = [f for f in findings if f.rule == rule]
        counts = Counter(by_key[f.key].verdict for f in mine if f.key in by_key and by_key[f.key].verdict != "MISS")
        known = list({v.key: v for v in verdicts if v.rule == rule and v.verdict in ("TP", "MISS")}.values())
        judged = sum(counts[v] for v in JUDGED)
        strict_tp = sum(
            1 for f in mine if f.key in by_key and by_key[f.key].verdict == "TP"
            and STRICT_CAUSE not in by_key[f.key].cause.lower()
        )
        per_rule[rule] = {
            "findings": len(mine),
            **{v: counts[v] for v in JUDGED},
            "unjudged": len(mine) - judged,
            "precision": ratio(counts["TP"], judged),
            "strict_precision": ratio(strict_tp, judged),
            "known_tp": len(known),
            "known_tp_reported": sum(v.key in reported for v in known),
            "known_tp_recall": ratio(sum(v.key in reported for v in known), len(known)),
            "fixes": dict(sorted(Counter(f.fix or "none" for f in mine).items())),
            "judged_no_longer_reported": sum(
                1 for v in verdicts if v.rule == rule and v.verdict in JUDGED and v.key not in reported
            ),
        }
    return {"rules": per_rule, "unjudged": unjudged, "violations": violations}


def _where(finding: Finding) -> dict:
    return {"repo": finding.repo, "path": finding.path, "cell": finding.cell, "line": finding.line, "rule": finding.rule}


def print_table(per_rule: Dict[str, dict], stream=sys.stdout) -> None:
    header = ["rule", "findings", "TP", "TRIVIAL", "FP", "unjudged", "precision", "strict", "known-TP recall", "fixes offered"]
    rows = [header]
    for rule, s in per_rule.items():
        fixes = ", ".join(f"{k} {v}" for k, v in s["fixes"].items())
        recall = f"{s['known_tp_recall']} ({s['known_tp_reported']}/{s['known_tp']})" if s["known_tp"] else "-"
        precision = [s[key] if s[key] is not None else "-" for key in ("precision", "strict_precision")]
        rows.append([rule, s["findings"], s["TP"], s["TRIVIAL"], s["FP"], s["unjudged"], *precision, recall, fixes])
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(header))]
    for row in rows:
        stream.write("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() + "\n")


def write_unjudged(path: Path, unjudged: Iterable[Finding]) -> None:
    """Rows to judge, in the verdict file's columns (verdict, fix and cause left to fill in), with
    the message and the offered fix after them as a reminder (delete those two before appending)."""
    with path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream, delimiter="\t", lineterminator="\n")
        writer.writerow(VERDICT_COLUMNS + ["offered fix", "message"])
        for f in unjudged:
            writer.writerow([f.repo, f.path, f.line, f.cell or "-", f.rule, "", "", "", f.fix or "none", f.message])


FINDING_COLUMNS = ["repo", "path", "line", "cell", "rule", "verdict", "fix", "offered fix", "cause", "message"]


def write_findings(path: Path, findings: Iterable[Finding], verdicts: Sequence[Verdict]) -> None:
    """Every finding, in the verdict file's order of columns, with its verdict, the judged and the
    offered fix and the judge's cause (``UNJUDGED`` and empty cells where no row judges it; a
    ``MISS`` row does not), then the message: a run's findings to read one by one, or to compare
    with another run's."""
    by_key = {v.key: v for v in verdicts if v.verdict != "MISS"}
    with path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream, delimiter="\t", lineterminator="\n")
        writer.writerow(FINDING_COLUMNS)
        for f in sorted(findings, key=lambda finding: (finding.repo, finding.path, finding.cell, finding.line, finding.rule)):
            verdict = by_key.get(f.key)
            judged = [verdict.verdict, verdict.fix] if verdict else ["UNJUDGED", ""]
            writer.writerow([f.repo, f.path, f.line, f.cell or "-", f.rule, *judged, f.fix or "none", verdict.cause if verdict else "", f.message])


def merged_results(before: dict, remeasured: dict, rules: FrozenSet[str]) -> dict:
    """``before``, the results of a whole run, with the figures of ``rules`` taken from
    ``remeasured``: their findings counted anew, their fix violations replaced, the rest kept."""
    kept = {code: figures for code, figures in before["rules"].items() if code not in rules}
    return {
        **before,
        "findings": sum(figures["findings"] for figures in kept.values()) + remeasured["findings"],
        "verdict_rows": remeasured["verdict_rows"],
        "rules": dict(sorted({**kept, **remeasured["rules"]}.items())),
        "fix_violations": [
            *(violation for violation in before["fix_violations"] if violation["rule"] not in rules),
            *remeasured["fix_violations"],
        ],
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--src", type=Path, required=True, help="folder holding one checkout per manifest repository (owner__name)")
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--verdicts", type=Path, default=VERDICTS)
    parser.add_argument("--jobs", type=int, help="passed to gpulint --jobs")
    parser.add_argument("--file-time-budget", type=float, metavar="SECONDS", help="passed to gpulint --file-time-budget")
    parser.add_argument("--unjudged", type=Path, metavar="TSV", help="write the findings not yet judged here, as rows to fill in")
    parser.add_argument("--findings", type=Path, metavar="TSV", help="write every finding with its verdict here, to read or to compare two runs")
    parser.add_argument("--results", type=Path, metavar="JSON", help="write the figures here (refused while findings are unjudged or checkouts missing)")
    parser.add_argument("--allow-missing", action="store_true", help="score the checkouts there are, leaving out the repositories without one (and their verdicts)")
    parser.add_argument("--rules", type=lambda text: frozenset(text.split(",")), metavar="CODES", help="re-measure only these rules (comma-separated), after a change that can only remove their findings")
    args = parser.parse_args(argv)
    try:
        manifest = read_manifest(args.manifest)
        verdicts = read_verdicts(args.verdicts) if args.verdicts.exists() else []
        verdict_rows = len(verdicts)
        not_rerun: List[str] = []
        if args.rules:
            verdicts = [verdict for verdict in verdicts if verdict.rule in args.rules]
            judged_there = {verdict.repo for verdict in verdicts}
            not_rerun = [
                row["repo"] for row in manifest
                if row["repo"] not in judged_there and not checkout_folder(args.src, row["repo"]).is_dir()
            ]
            manifest = [row for row in manifest if row["repo"] not in not_rerun]
        missing = [row["repo"] for row in manifest if not checkout_folder(args.src, row["repo"]).is_dir()]
        if missing and not args.allow_missing:
            raise InputError(f"no checkout under {args.src} for: {', '.join(missing)}")
        manifest = [row for row in manifest if row["repo"] not in missing]
        verdicts = [verdict for verdict in verdicts if verdict.repo not in missing]
        findings: List[Finding] = []
        skipped: Dict[str, List[Tuple[str, str]]] = {}
        incomplete: Dict[str, str] = {}
        for row in manifest:
            folder = checkout_folder(args.src, row["repo"])
            difference = incomplete_checkout(folder, row)
            if difference:
                incomplete[row["repo"]] = difference
            found, notes = run_gpulint(folder, row["repo"], args.jobs, args.file_time_budget)
            findings.extend(finding for finding in found if not args.rules or finding.rule in args.rules)
            if notes:
                skipped[row["repo"]] = notes
    except InputError as error:
        sys.stderr.write(f"wild.py: error: {error}\n")
        return 2
    scored = score(findings, verdicts)
    print(f"{len(manifest)} repositories, {len(findings)} findings, {len(verdicts)} verdict rows")
    if missing:
        print(f"{len(missing)} repositories left out, without a checkout (their verdicts too): {', '.join(missing)}")
    if not_rerun:
        print(f"{len(not_rerun)} repositories with no verdict row of {', '.join(sorted(args.rules))} not re-run, without a checkout")
    print_table(scored["rules"])
    for repo, difference in incomplete.items():
        print(f"{repo}: {difference}")
    for repo, notes in skipped.items():
        print(f"{repo}: gpulint skipped {len(notes)} file(s): " + "; ".join(f"{path}: {why}" for path, why in notes))
    for violation in scored["violations"]:
        print("fix against the verdict: {repo} {path} cell {cell} line {line} {rule}: offered {offered}, judged {judged} ({cause})".format(**violation))
    unrepeatable = [
        f"{repo} {path} ({why})" for repo, notes in skipped.items() for path, why in notes if why.startswith(UNREPEATABLE_SKIPS)
    ]
    if unrepeatable:
        print(f"{len(unrepeatable)} file(s) not checked for a reason a rerun may not repeat, so their findings are missing: " + "; ".join(unrepeatable))
    if scored["unjudged"]:
        print(f"{len(scored['unjudged'])} finding(s) not judged yet" + (f": written to {args.unjudged}" if args.unjudged else " (--unjudged FILE lists them)"))
    if args.unjudged:
        write_unjudged(args.unjudged, scored["unjudged"])
    if args.findings:
        write_findings(args.findings, findings, verdicts)
    if args.results:
        if scored["unjudged"]:
            sys.stderr.write("wild.py: not writing results while findings are unjudged\n")
            return 1
        if missing:
            sys.stderr.write("wild.py: not writing results while repositories of the manifest have no checkout\n")
            return 1
        if unrepeatable:
            sys.stderr.write(f"wild.py: not writing results while {len(unrepeatable)} file(s) went unchecked for a reason a rerun may not repeat\n")
            return 1
        results = {
            "repositories": len(manifest),
            "findings": len(findings),
            "verdict_rows": verdict_rows,
            "rules": scored["rules"],
            "fix_violations": scored["violations"],
            "skipped_files": sum(len(notes) for notes in skipped.values()),
        }
        if args.rules:
            results = merged_results(json.loads(args.results.read_text(encoding="utf-8")), results, args.rules)
        args.results.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 1 if scored["unjudged"] or scored["violations"] or unrepeatable else 0


if __name__ == "__main__":
    sys.exit(main())
