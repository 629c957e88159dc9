"""Processing many files on all cores, with results in the order the files were given."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from gpulint.cache import ResultCache
from gpulint.runner import FileResult, Job, Mode, process_file

Task = Tuple[Path, Job, Optional[ResultCache]]


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _process(task: Task) -> FileResult:
    path, job, cache = task
    result = process_file(path, job, cache)
    if job.mode is Mode.CHECK and not result.diagnostics and result.error is None:
        result.text = result.new_file_text = None
    return result


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def process_files(tasks: Sequence[Task], jobs: int) -> List[FileResult]:
    """Process every task, in ``jobs`` worker processes when there is more than one file; a clean
    checked file comes back without its text (no report shows it). The largest files go first, so
    that no worker is left with a big file at the end while the others wait."""
    if jobs <= 1 or len(tasks) <= 1:
        return [_process(task) for task in tasks]
    order = sorted(range(len(tasks)), key=lambda index: -_size(tasks[index][0]))
    results: List[Optional[FileResult]] = [None] * len(tasks)
    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=context) as pool:
        for index, result in zip(order, pool.map(_process, [tasks[index] for index in order])):
            results[index] = result
    return results  # type: ignore[return-value]
