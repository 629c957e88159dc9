"""The registry: every rule gpulint ships, in one explicit list sorted by code."""

from typing import Dict, List, Type

from gpulint.rule import Rule
from gpulint.rules.gpu001_torch_load_without_map_location import TorchLoadWithoutMapLocation
from gpulint.rules.gpu002_whole_model_pickle_kept_alive import WholeModelPickleKeptAlive
from gpulint.rules.gpu003_empty_cache_with_live_references import EmptyCacheWithLiveReferences
from gpulint.rules.gpu004_inference_without_no_grad import InferenceWithoutNoGrad
from gpulint.rules.gpu005_accumulated_autograd_history import AccumulatedAutogradHistory
from gpulint.rules.gpu006_deprecated_cuda_cache_api import DeprecatedCudaCacheApi

ALL_RULES: List[Type[Rule]] = [
    TorchLoadWithoutMapLocation,
    WholeModelPickleKeptAlive,
    EmptyCacheWithLiveReferences,
    InferenceWithoutNoGrad,
    AccumulatedAutogradHistory,
    DeprecatedCudaCacheApi,
]

RULES_BY_CODE: Dict[str, Type[Rule]] = {rule.code: rule for rule in ALL_RULES}
