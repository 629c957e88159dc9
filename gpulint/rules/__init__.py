"""The registry: every rule gpulint ships, one per module of this package.

The module ``gpuNNN_<name>.py`` holds the rule GPUNNN, so adding a rule adds a module and nothing
here. Rule classes import LibCST, which costs more than a whole run answered from the cache: the
codes come from the module names, and a rule's module is imported when the rule is first needed.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import pkgutil
import re
from typing import TYPE_CHECKING, Dict, List, Tuple, Type

if TYPE_CHECKING:
    from gpulint.engine.rule import Rule

_RULE_MODULE = re.compile(r"(?P<code>[a-z]+[0-9]{3})_\w+")

RULE_MODULES: Dict[str, str] = {
    match["code"].upper(): info.name
    for info in pkgutil.iter_modules(__path__)
    if (match := _RULE_MODULE.fullmatch(info.name))
}
"""Each rule's code and the name of the module that holds it."""
ALL_CODES: Tuple[str, ...] = tuple(sorted(RULE_MODULES))


@functools.lru_cache(maxsize=None)
def rule_for(code: str) -> Type["Rule"]:
    """The rule class with this code, its module imported on first use."""
    from gpulint.engine.rule import Rule

    module = importlib.import_module(f"{__name__}.{RULE_MODULES[code]}")
    (rule,) = [
        member for _, member in inspect.getmembers(module, inspect.isclass)
        if issubclass(member, Rule) and member.__module__ == module.__name__
    ]
    return rule


def rules_for(codes: Tuple[str, ...]) -> List[Type["Rule"]]:
    """The rule classes with these codes, in the same order."""
    return [rule_for(code) for code in codes]


def __getattr__(name: str) -> object:
    """``ALL_RULES`` (every rule class, sorted by code) and ``RULES_BY_CODE``, imported on first use."""
    if name == "ALL_RULES":
        return rules_for(ALL_CODES)
    if name == "RULES_BY_CODE":
        return {code: rule_for(code) for code in ALL_CODES}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
