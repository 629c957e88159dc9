"""Rule selectors (``GPU``, ``GPU0``, ``GPU001``, ``ALL``) and how layers of them combine."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import FrozenSet, Iterable, Optional, Sequence


class SelectionError(Exception):
    """A selector that names no rule."""


def matching_codes(selector: str, codes: Iterable[str]) -> FrozenSet[str]:
    selector = selector.strip().upper()
    codes = list(codes)
    if selector == "ALL":
        return frozenset(codes)
    found = frozenset(code for code in codes if code.startswith(selector))
    if not selector or not found:
        raise SelectionError(f"unknown rule selector {selector!r} (known rules: {', '.join(sorted(codes))})")
    return found


@dataclass(frozen=True)
class SelectionLayer:
    """One source of selection (the config file, then the command line), applied in order as ruff
    does: ``select`` replaces the set, ``extend_select`` adds to it, ``ignore`` removes from it."""

    select: Optional[Sequence[str]] = None
    extend_select: Sequence[str] = field(default_factory=tuple)
    ignore: Sequence[str] = field(default_factory=tuple)

    def validate(self, codes: Iterable[str]) -> None:
        for selector in [*(self.select or ()), *self.extend_select, *self.ignore]:
            matching_codes(selector, codes)


def _specificity(selector: str) -> int:
    selector = selector.strip().upper()
    return 0 if selector == "ALL" else len(selector)


def resolve(layers: Sequence[SelectionLayer], codes: Iterable[str]) -> FrozenSet[str]:
    """The enabled codes: every rule by default, then each layer in turn.

    Within a layer the more specific selector wins whatever list it is in (``ignore = ["GPU"]``
    with ``extend-select = ["GPU001"]`` enables GPU001); at equal specificity ``ignore`` wins.
    """
    codes = frozenset(codes)
    enabled = set(codes)
    for layer in layers:
        if layer.select is not None:
            enabled = set()
        choices = [(s, True) for s in (*(layer.select or ()), *layer.extend_select)]
        choices += [(s, False) for s in layer.ignore]
        for selector, enable in sorted(choices, key=lambda choice: (_specificity(choice[0]), not choice[1])):
            matched = matching_codes(selector, codes)
            enabled = enabled | matched if enable else enabled - matched
    return frozenset(enabled)
