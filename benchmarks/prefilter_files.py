"""Pick the torch files ``tests/test_prefilter_exactness.py`` compares, from the installed torch.

    python benchmarks/prefilter_files.py               # print the two lists for the test
    python benchmarks/prefilter_files.py --compare     # also compare every such file, 2 processes
    python benchmarks/prefilter_files.py --compare --jobs 4

The test compares a committed selection: the smallest files that do what the rules look for, and
the smallest in which the rules reach some functions but not all. This surveys every ``.py`` file
of the installed torch by the test's own criteria and prints both lists, smallest first, to paste
into the test after a torch upgrade (or when too few of them qualify any more). ``--compare``
checks every file of both kinds, not only the smallest, with and without the prefilters, and
lists those whose findings differ; ``benchmarks/sweep.py --compare-prefilter`` does every file.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import sys
import time
from pathlib import Path
from typing import List, Optional, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gpulint.engine.linter import lint_source  # noqa: E402
from gpulint.rules import ALL_RULES  # noqa: E402
from tests.test_prefilter_exactness import SMALLEST_PARTLY_REACHED, SMALLEST_RELEVANT, TORCH, partly_reached, relevant  # noqa: E402


def _kinds(path: Path) -> Tuple[bool, bool]:
    """Whether the file is relevant, and whether it is partly reached (never, where it does not parse)."""
    try:
        return relevant(path), partly_reached(path)
    except (SyntaxError, ValueError, RecursionError):
        return False, False


def _differs(path: Path) -> bool:
    source = path.read_text(encoding="utf-8")
    return lint_source(source, str(path), ALL_RULES) != lint_source(source, str(path), ALL_RULES, prefilter=False)


def _listing(name: str, paths: List[Path], count: int, root: Path) -> str:
    lines = "".join(f'    "{path.relative_to(root).as_posix()}",\n' for path in paths[:count])
    return f"{name} = (\n{lines})\n"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", action="store_true", help="compare every relevant or partly reached file with and without the prefilters")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    if TORCH is None:
        sys.stderr.write("prefilter_files.py: error: torch is not installed\n")
        return 2
    started = time.perf_counter()
    files = sorted(TORCH.rglob("*.py"), key=lambda path: (path.stat().st_size, str(path)))
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as pool:
        kinds = list(pool.map(_kinds, files, chunksize=16))
        relevant_files = [path for path, (is_relevant, _) in zip(files, kinds) if is_relevant]
        partly_reached_files = [path for path, (_, is_partly_reached) in zip(files, kinds) if is_partly_reached]
        print(_listing("SMALLEST_RELEVANT", relevant_files, len(SMALLEST_RELEVANT), TORCH))
        print(_listing("SMALLEST_PARTLY_REACHED", partly_reached_files, len(SMALLEST_PARTLY_REACHED), TORCH))
        compared = sorted(set(relevant_files) | set(partly_reached_files)) if args.compare else []
        differing = [path for path, differs in zip(compared, pool.map(_differs, compared)) if differs]
    for path in differing:
        print(f"{path}: the findings differ without the prefilters")
    print(f"files: {len(files)}  relevant: {len(relevant_files)}  partly reached: {len(partly_reached_files)}  "
          + (f"compared: {len(compared)}  differing: {len(differing)}  " if args.compare else "")
          + f"time: {time.perf_counter() - started:.1f} s")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
