"""The context managers the control-flow graph trusts not to swallow an exception really let one
through, as installed: a ``with`` block of any other may be left from any point in it."""

from __future__ import annotations

import builtins
import contextlib
import io
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Callable, ContextManager, Dict

import pytest

from gpulint.analysis.cfg import NON_SUPPRESSING_CONTEXTS

torch = pytest.importorskip("torch")
tqdm = pytest.importorskip("tqdm")
import tqdm.auto  # noqa: E402
import tqdm.notebook  # noqa: E402
import tqdm.std  # noqa: E402
import torch.nn.attention  # noqa: E402


def _factories(tmp_path: Path) -> Dict[str, Callable[[], ContextManager[object]]]:
    """How to enter each trusted context manager here, without a GPU (a device index of -1 and
    no stream are what torch's CUDA contexts accept for "stay where you are")."""
    scratch = str(tmp_path / "scratch.txt")
    return {
        "open": lambda: open(scratch, "w"),
        "builtins.open": lambda: builtins.open(scratch, "w"),
        "io.open": lambda: io.open(scratch, "w"),
        "torch.no_grad": torch.no_grad,
        "torch.enable_grad": torch.enable_grad,
        "torch.inference_mode": torch.inference_mode,
        "torch.set_grad_enabled": lambda: torch.set_grad_enabled(False),
        "torch.autocast": lambda: torch.autocast("cpu"),
        "torch.amp.autocast": lambda: torch.amp.autocast("cpu"),
        "torch.cuda.amp.autocast": lambda: torch.cuda.amp.autocast(enabled=False),
        "torch.cpu.amp.autocast": lambda: torch.cpu.amp.autocast(),
        "torch.cuda.device": lambda: torch.cuda.device(-1),
        "torch.cuda.stream": lambda: torch.cuda.stream(None),
        "torch.device": lambda: torch.device("cpu"),
        "torch.autograd.profiler.profile": lambda: torch.autograd.profiler.profile(enabled=False),
        "torch.autograd.profiler.record_function": lambda: torch.autograd.profiler.record_function("step"),
        "torch.profiler.profile": lambda: torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]),
        "torch.profiler.record_function": lambda: torch.profiler.record_function("step"),
        "torch.random.fork_rng": lambda: torch.random.fork_rng(devices=[]),
        "torch.backends.cuda.sdp_kernel": lambda: torch.backends.cuda.sdp_kernel(),
        "torch.nn.attention.sdpa_kernel": lambda: torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH),
        "torch.autograd.detect_anomaly": torch.autograd.detect_anomaly,
        "torch.autograd.set_detect_anomaly": lambda: torch.autograd.set_detect_anomaly(True),
        "contextlib.nullcontext": contextlib.nullcontext,
        "threading.Lock": threading.Lock,
        "tempfile.TemporaryDirectory": tempfile.TemporaryDirectory,
        "warnings.catch_warnings": warnings.catch_warnings,
        "tqdm.tqdm": lambda: tqdm.tqdm(range(3), disable=True),
        "tqdm.trange": lambda: tqdm.trange(3, disable=True),
        "tqdm.auto.tqdm": lambda: tqdm.auto.tqdm(range(3), disable=True),
        "tqdm.auto.trange": lambda: tqdm.auto.trange(3, disable=True),
        "tqdm.notebook.tqdm": lambda: tqdm.notebook.tqdm(range(3), disable=True),
        "tqdm.notebook.trange": lambda: tqdm.notebook.trange(3, disable=True),
        "tqdm.std.tqdm": lambda: tqdm.std.tqdm(range(3), disable=True),
        "tqdm.std.trange": lambda: tqdm.std.trange(3, disable=True),
    }


class _Raised(Exception):
    """Raised inside each ``with`` block."""


def test_every_trusted_context_has_a_way_in(tmp_path):
    assert set(_factories(tmp_path)) == set(NON_SUPPRESSING_CONTEXTS)


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("qualified", sorted(NON_SUPPRESSING_CONTEXTS))
def test_a_trusted_context_lets_an_exception_through(qualified, tmp_path):
    context = _factories(tmp_path)[qualified]()
    with pytest.raises(_Raised):
        with context:
            raise _Raised


def test_the_check_fails_for_a_context_that_swallows():
    with pytest.raises(pytest.fail.Exception):
        with pytest.raises(_Raised):
            with contextlib.suppress(_Raised):
                raise _Raised
