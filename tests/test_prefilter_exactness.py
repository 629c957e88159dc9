"""The prefilters (text tokens, the survey of Python's own tree, blanking the functions no rule
reaches) never change what gpulint finds.

Each rule's fixture files are compared in ``test_rule_fixtures.py``; this compares the demo
project and real PyTorch code: the smallest files of the installed ``torch`` package that do what
the rules look for (load checkpoints, empty the cache, switch to evaluation mode, backpropagate),
and the smallest in which the rules reach some functions but not all, so that bodies are blanked.
Both are committed lists, picked from torch 2.13 by ``python benchmarks/prefilter_files.py`` (which
also compares every such file of the installed torch); each file must still qualify.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import itertools
import operator
import re
from pathlib import Path
from typing import Callable, List, Sequence

import pytest

from gpulint.engine.linter import lint_source
from gpulint.engine.reach import NOTHING, closure
from gpulint.rules import ALL_RULES
from gpulint.semantic.model import SemanticModel
from tests.helpers import FIXTURES

_TORCH_SPEC = importlib.util.find_spec("torch")
TORCH = Path(_TORCH_SPEC.origin).parent if _TORCH_SPEC is not None and _TORCH_SPEC.origin else None
"""The installed torch package (found, not imported), or None."""
RELEVANT = re.compile(r"empty_cache|memory_cached|\.eval\(\)|map_location|torch\.load|\.backward\(")
REAL_FILES = 40
BLANKED_FILES = 15
SMALLEST_RELEVANT = (
    "utils/debug_log.py",
    "distributed/autograd/__init__.py",
    "distributed/tensor/__init__.py",
    "mtia/mtia_graph.py",
    "distributed/tensor/debug/_op_coverage.py",
    "testing/_internal/distributed/rpc/jit/dist_autograd_test.py",
    "distributed/optim/post_localSGD_optimizer.py",
    "testing/_internal/distributed/rpc/examples/parameter_server_test.py",
    "distributed/_serialization.py",
    "distributed/_composable/checkpoint_activation.py",
    "autograd/anomaly_mode.py",
    "distributed/optim/apply_optimizer_in_backward.py",
    "distributed/algorithms/model_averaging/averagers.py",
    "nn/utils/_per_sample_grad.py",
    "distributions/__init__.py",
    "nn/utils/_expanded_weights/expanded_weights_impl.py",
    "accelerator/graphs.py",
    "ao/pruning/_experimental/data_sparsifier/lightning/callbacks/data_sparsity.py",
    "ao/quantization/fuse_modules.py",
    "_inductor/fx_passes/numeric_utils.py",
    "utils/benchmark/utils/compile.py",
    "onnx/_internal/exporter/_compat.py",
    "jit/mobile/__init__.py",
    "distributed/checkpoint/_experimental/checkpoint_reader.py",
    "_dynamo/external_utils.py",
    "mps/__init__.py",
    "testing/_internal/distributed/rpc/examples/reinforcement_learning_rpc_test.py",
    "utils/_content_store.py",
    "distributed/optim/optimizer.py",
    "distributed/algorithms/model_averaging/hierarchical_model_averager.py",
    "distributed/rpc/__init__.py",
    "jit/_freeze.py",
    "distributed/_composable/contract.py",
    "testing/_internal/distributed/rpc/dist_optimizer_test.py",
    "_functorch/functional_call.py",
    "jit/_serialization.py",
    "distributed/checkpoint/format_utils.py",
    "accelerator/__init__.py",
    "distributed/_tools/memory_tracker.py",
    "distributed/checkpoint/_experimental/checkpointer.py",
)
"""The 40 smallest files of torch 2.13 that ``RELEVANT`` matches, smallest first."""
SMALLEST_PARTLY_REACHED = (
    "_inductor/fx_passes/numeric_utils.py",
    "utils/_content_store.py",
    "distributed/checkpoint/format_utils.py",
    "distributed/rpc/internal.py",
    "utils/data/datapipes/utils/decoder.py",
    "distributed/checkpoint/default_planner.py",
    "distributed/nn/api/remote_module.py",
    "testing/_internal/jit_utils.py",
    "distributed/fsdp/_state_dict_utils.py",
    "cuda/graphs.py",
    "export/pt2_archive/_package.py",
    "testing/_internal/distributed/rpc/jit/rpc_test.py",
    "storage.py",
    "ao/quantization/fx/_lower_to_native_backend.py",
    "testing/_internal/common_nn.py",
    "_export/serde/serialize.py",
    "testing/_internal/common_modules.py",
)
"""The 17 smallest files of torch 2.13 that are ``partly_reached``, smallest first. The first 15
that still are get compared: a rule that comes to reach a function more or less in one of them
leaves the test as strong."""


def relevant(path: Path) -> bool:
    """Whether the file does what the rules look for."""
    return bool(RELEVANT.search(path.read_text(encoding="utf-8", errors="replace")))


def partly_reached(path: Path) -> bool:
    """Whether the rules that may fire in the file reach some of its functions, not all."""
    source = path.read_text(encoding="utf-8")
    survey = SemanticModel(ast.parse(source), source)
    reaches = [closure(survey, rule.seeds(survey)) for rule in ALL_RULES if rule.may_fire(source)]
    reach = functools.reduce(operator.or_, reaches, NOTHING)
    return bool(reach) and not reach.whole_module and len(reach.functions) < len(survey.functions)


def _select(pool: Sequence[str], qualifies: Callable[[Path], bool], count: int) -> List[str]:
    """The first ``count`` files of ``pool`` that the installed torch has and that qualify."""
    if TORCH is None:
        return []
    return list(itertools.islice((name for name in pool if (TORCH / name).is_file() and qualifies(TORCH / name)), count))


REAL = _select(SMALLEST_RELEVANT, relevant, REAL_FILES)
BLANKED = _select(SMALLEST_PARTLY_REACHED, partly_reached, BLANKED_FILES)


@functools.lru_cache(maxsize=None)
def _compare(path: Path) -> None:
    """Raise unless the findings with and without the prefilters agree; each file is compared once."""
    source = path.read_text(encoding="utf-8")
    assert lint_source(source, str(path), ALL_RULES) == lint_source(source, str(path), ALL_RULES, prefilter=False)


@pytest.mark.parametrize("path", sorted((FIXTURES / "demo").glob("*.py")), ids=lambda p: p.name)
def test_demo_project(path):
    _compare(path)


@pytest.mark.skipif(TORCH is None, reason="needs torch")
def test_enough_of_the_committed_torch_files_qualify():
    message = "too few of the committed torch files qualify (another torch, or rules that reach otherwise): re-pick them with benchmarks/prefilter_files.py"
    assert (len(REAL), len(BLANKED)) == (REAL_FILES, BLANKED_FILES), message


@pytest.mark.parametrize("name", REAL)
def test_real_pytorch_files(name):
    _compare(TORCH / name)


@pytest.mark.parametrize("name", BLANKED)
def test_real_pytorch_files_with_blanked_functions(name):
    _compare(TORCH / name)
