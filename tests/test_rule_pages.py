"""The reference pages are executed: their examples are flagged, their fixes are clean."""

from __future__ import annotations

import pytest

from gpulint.linter import lint_source
from gpulint.pages import SECTIONS, code_blocks, read_page, sections, title
from gpulint.rules import ALL_RULES, RULES_BY_CODE

RULES = pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)


@RULES
def test_title_matches_the_registry(rule):
    assert title(read_page(rule.code)) == f"# {rule.name} ({rule.code})"


@RULES
def test_page_has_the_fixed_sections_in_order(rule):
    assert list(sections(read_page(rule.code))) == list(SECTIONS)


@RULES
def test_page_states_the_fix_availability(rule):
    page = read_page(rule.code)
    expected = {"always": "Fix is always available.", "sometimes": "Fix is sometimes available.", "none": "No fix is available."}
    assert expected[rule.fix_availability.value] in page


@RULES
def test_example_is_flagged(rule):
    blocks = code_blocks(sections(read_page(rule.code))["Example"])
    assert blocks
    for block in blocks:
        assert [d.code for d in lint_source(block, "example.py", [rule])], block


@RULES
def test_use_instead_is_clean(rule):
    blocks = code_blocks(sections(read_page(rule.code))["Use instead"])
    assert blocks
    for block in blocks:
        assert lint_source(block, "use_instead.py", ALL_RULES) == []



def test_the_gpu001_example_is_fixed_by_plain_fix():
    """The most common GPU001 case, a script's own load used as a state dict, is a safe fix."""
    (block,) = code_blocks(sections(read_page("GPU001"))["Example"])
    (diagnostic,) = lint_source(block, "example.py", [RULES_BY_CODE["GPU001"]])
    assert diagnostic.fix is not None and diagnostic.fix.applicability.value == "safe"
