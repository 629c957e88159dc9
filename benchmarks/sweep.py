"""Real-code sweep: check and fix every ``.py`` file of installed packages, counting what went wrong.

    python benchmarks/sweep.py                       # torch and transformers, where installed
    python benchmarks/sweep.py --package torch --subpath nn --jobs 2
    python benchmarks/sweep.py --corpus ~/src/fairseq --compare-prefilter

For every file: checking must not hit an internal error; fixing (unsafe fixes included) must give
code that parses; fixing again must change nothing. Files are read from the installed package and
fixed in memory (nothing is written). With ``--compare-prefilter``, every file is also checked
without the prefilters (text tokens, the survey of Python's syntax tree, blanking the functions no
rule reaches), and the findings must be the same. Prints counts, the files that failed, and the run time.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import importlib.util
import sys
import time
from pathlib import Path
from typing import List, Optional, Tuple

import libcst as cst

from gpulint.engine.fixer import FixError, applicabilities, fix_text
from gpulint.engine.linter import lint_source
from gpulint.rules import ALL_CODES, ALL_RULES
from gpulint.engine.runner import Job, Mode, process_text
from gpulint.engine.source import SourceError, read_source
from gpulint.engine.time_budget import TimeBudgetExceeded, time_budget

FIX_BUDGET = 120.0
"""Seconds fixing one file (twice) may take before the sweep gives it up and counts it."""

Outcome = Tuple[str, Optional[str]]
"""(file, None if all went well, else the kind of failure and its message)."""


def package_files(package: str, subpath: str = "") -> List[Path]:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return []
    root = Path(list(spec.submodule_search_locations)[0]) / subpath
    return sorted(root.rglob("*.py"))


def sweep_file(path: Path, compare_prefilter: bool = False) -> Outcome:
    try:
        text = read_source(path).text
    except SourceError:
        return str(path), None
    checked = process_text(str(path), text, Job(ALL_CODES, Mode.CHECK, True))
    if checked.error is not None and "internal error" in checked.error.message:
        return str(path), f"crash: {checked.error.message}"
    if checked.error is not None:
        return str(path), None
    if compare_prefilter and lint_source(text, str(path), ALL_RULES, prefilter=False) != checked.diagnostics:
        return str(path), "prefilter mismatch: the findings differ without the prefilters"

    def lint(source: str):
        return lint_source(source, str(path), ALL_RULES)

    try:
        with time_budget(FIX_BUDGET):
            fixed = fix_text(text, lint, applicabilities(True))
            again = fix_text(fixed.text, lint, applicabilities(True))
    except TimeBudgetExceeded:
        return str(path), f"over budget: fixing took more than {FIX_BUDGET:g} s"
    except FixError as error:
        return str(path), f"fix refused: {error}"
    except Exception as error:  # noqa: BLE001 - the sweep reports every failure and goes on
        return str(path), f"crash while fixing: {type(error).__name__}: {error}"
    try:
        cst.parse_module(fixed.text)
    except cst.ParserSyntaxError as error:
        return str(path), f"unparseable fix: {error.message}"
    if again.text != fixed.text:
        return str(path), "non-idempotent fix"
    return str(path), None


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", action="append", help="an installed package to sweep (repeatable)")
    parser.add_argument("--subpath", default="", help="only this folder of each package")
    parser.add_argument("--corpus", action="append", type=Path, help="a directory of Python code to sweep instead (repeatable)")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--compare-prefilter", action="store_true", help="also check without the prefilters; the findings must be the same")
    args = parser.parse_args(argv)
    if args.corpus:
        files = [f for corpus in args.corpus for f in sorted(corpus.rglob("*.py"))]
    else:
        files = [f for package in (args.package or ["torch", "transformers"]) for f in package_files(package, args.subpath)]
    started = time.perf_counter()
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        outcomes = list(pool.map(functools.partial(sweep_file, compare_prefilter=args.compare_prefilter), files, chunksize=8))
    elapsed = time.perf_counter() - started
    failures = [(path, problem) for path, problem in outcomes if problem is not None]
    kinds = {kind: sum(1 for _, p in failures if p.startswith(kind)) for kind in
             ("crash", "unparseable fix", "non-idempotent fix", "fix refused", "over budget", "prefilter mismatch")}
    for path, problem in failures:
        print(f"{path}: {problem}")
    print(f"files: {len(files)}  crashes: {kinds['crash']}  unparseable fixes: {kinds['unparseable fix']}  "
          f"non-idempotent fixes: {kinds['non-idempotent fix']}  refused fixes: {kinds['fix refused']}  "
          f"over budget: {kinds['over budget']}  "
          + (f"prefilter mismatches: {kinds['prefilter mismatch']}  " if args.compare_prefilter else "")
          + f"time: {elapsed:.1f} s ({args.jobs} process{'es' if args.jobs > 1 else ''})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
