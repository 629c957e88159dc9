"""A per-file time budget, so that one pathological file cannot hang a run."""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator, Optional


class TimeBudgetExceeded(BaseException):
    """The file took longer than its budget. A ``BaseException``, like ``KeyboardInterrupt``, so
    that no ``except Exception`` on the way (in LibCST or here) can swallow it."""


@contextlib.contextmanager
def time_budget(seconds: Optional[float]) -> Iterator[None]:
    """Raise ``TimeBudgetExceeded`` in the block once ``seconds`` have passed.

    Uses a real-time interval timer, so it works only in the main thread of a Unix process;
    elsewhere (and with ``seconds`` None) the block runs unbounded."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if seconds is None or not usable:
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise TimeBudgetExceeded()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
