"""The registry: every rule gpulint ships, in one explicit list sorted by code."""

from typing import Dict, List, Type

from gpulint.rule import Rule
from gpulint.rules.gpu001_torch_load_without_map_location import TorchLoadWithoutMapLocation
from gpulint.rules.gpu002_whole_model_pickle_kept_alive import WholeModelPickleKeptAlive
from gpulint.rules.gpu003_empty_cache_with_live_references import EmptyCacheWithLiveReferences

ALL_RULES: List[Type[Rule]] = [
    TorchLoadWithoutMapLocation,
    WholeModelPickleKeptAlive,
    EmptyCacheWithLiveReferences,
]

RULES_BY_CODE: Dict[str, Type[Rule]] = {rule.code: rule for rule in ALL_RULES}
