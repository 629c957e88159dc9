"""Processing many files on all cores, with results in the order the files were given."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from gpulint.engine.cache import ResultCache
from gpulint.engine.runner import FileResult, Job, Mode, cached_result, process_file

Task = Tuple[Path, Job, Optional[ResultCache]]


def default_jobs() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def _clean_of_text(result: FileResult, job: Job) -> FileResult:
    if job.mode is Mode.CHECK and not result.diagnostics and result.error is None:
        result.text = result.new_file_text = None
    return result


def _process(task: Task) -> FileResult:
    path, job, cache = task
    return _clean_of_text(process_file(path, job, cache), job)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def process_files(tasks: Sequence[Task], jobs: int) -> List[FileResult]:
    """Process every task; a clean checked file comes back without its text (no report shows it).

    Cached results are read here; the rest run in ``jobs`` worker processes when there is more
    than one, the largest files first, so that no worker is left with a big file at the end
    while the others wait."""
    results: List[Optional[FileResult]] = [None] * len(tasks)
    for index, (path, job, cache) in enumerate(tasks):
        cached = cached_result(path, job, cache)
        if cached is not None:
            results[index] = _clean_of_text(cached, job)
    pending = sorted((i for i, result in enumerate(results) if result is None), key=lambda i: -_size(tasks[i][0]))
    if jobs <= 1 or len(pending) <= 1:
        for index in pending:
            results[index] = _process(tasks[index])
        return results  # type: ignore[return-value]
    context = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    with concurrent.futures.ProcessPoolExecutor(max_workers=min(jobs, len(pending)), mp_context=context) as pool:
        for index, result in zip(pending, pool.map(_process, [tasks[index] for index in pending])):
            results[index] = result
    return results  # type: ignore[return-value]
