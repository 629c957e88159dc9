"""The rule registry agrees with the rule modules, the reference pages and the fixture folders."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import gpulint.rules
from gpulint.engine.rule import Rule, check_rule_metadata
from gpulint.rules import ALL_RULES
from tests.helpers import FIXTURES, PAGES, RULE_FIXTURE_DIRS


def _rule_classes_on_disk():
    found = []
    for module_info in pkgutil.iter_modules(gpulint.rules.__path__):
        module = importlib.import_module(f"gpulint.rules.{module_info.name}")
        found.extend(
            cls for _, cls in inspect.getmembers(module, inspect.isclass)
            if issubclass(cls, Rule) and cls is not Rule and cls.__module__ == module.__name__
        )
    return found


def test_registry_is_sorted_by_code_and_unique():
    codes = [rule.code for rule in ALL_RULES]
    assert codes == sorted(codes)
    assert len(set(codes)) == len(codes)
    assert len({rule.name for rule in ALL_RULES}) == len(ALL_RULES)


def test_every_rule_module_is_registered_and_holds_one_rule():
    on_disk = _rule_classes_on_disk()
    assert sorted(on_disk, key=lambda r: r.code) == ALL_RULES
    for rule in ALL_RULES:
        assert rule.__module__.split(".")[-1].startswith(rule.code.lower() + "_")


def test_rule_metadata_is_well_formed():
    problems = [problem for rule in ALL_RULES for problem in check_rule_metadata(rule)]
    assert not problems


def test_every_rule_has_a_page_and_fixtures_and_nothing_is_orphaned():
    codes = {rule.code for rule in ALL_RULES}
    pages = {path.stem for path in PAGES.glob("*.md")}
    fixture_dirs = {path.name for path in RULE_FIXTURE_DIRS}
    assert pages == codes, f"pages without rule: {pages - codes}; rules without page: {codes - pages}"
    assert fixture_dirs == codes, f"fixtures without rule: {fixture_dirs - codes}; rules without fixtures: {codes - fixture_dirs}"
    for code in codes:
        assert list((FIXTURES / code).glob("*.py")), f"{code} has an empty fixture folder"
