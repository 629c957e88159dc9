"""Every rule against its fixture files: findings, applicability, fix snapshots and fix hygiene.

Adding a case means editing a fixture file (and refreshing its snapshots with
``GPULINT_UPDATE_SNAPSHOTS=1 pytest tests/test_rule_fixtures.py``), never editing this file.
"""

from __future__ import annotations

import os

import libcst as cst
import pytest

from gpulint.engine.fixer import applicabilities, fix_text
from gpulint.engine.linter import lint_source
from gpulint.engine.rule import FixAvailability
from gpulint.rules import ALL_RULES
from tests.helpers import expected_markers, fixture_cases, snapshot_path

CASES = [pytest.param(rule, case, id=f"{rule.code}/{case.name}") for rule in ALL_RULES for case in fixture_cases(rule.code)]
FIX_KINDS = {"safe": False, "unsafe": True}


def _lint(rule, path):
    return lambda text: lint_source(text, str(path), [rule])


@pytest.mark.parametrize(("rule", "case"), CASES)
def test_findings_match_the_markers(rule, case):
    source = case.read_text(encoding="utf-8")
    diagnostics = lint_source(source, str(case), [rule])
    expected = expected_markers(source)
    assert sorted((d.start.line, d.code) for d in diagnostics) == sorted(expected)
    for diagnostic in diagnostics:
        wanted = expected[(diagnostic.start.line, diagnostic.code)]
        actual = diagnostic.fix.applicability.value if diagnostic.fix else "none"
        if wanted is not None:
            assert actual == wanted, f"line {diagnostic.start.line}: fix is {actual}, fixture says {wanted}"


@pytest.mark.parametrize(("rule", "case"), CASES)
def test_prefilters_do_not_change_findings(rule, case):
    source = case.read_text(encoding="utf-8")
    assert lint_source(source, str(case), ALL_RULES) == lint_source(source, str(case), ALL_RULES, prefilter=False)


@pytest.mark.parametrize("kind", sorted(FIX_KINDS))
@pytest.mark.parametrize(("rule", "case"), CASES)
def test_fixed_output_matches_snapshot(rule, case, kind):
    source = case.read_text(encoding="utf-8")
    fixed = fix_text(source, _lint(rule, case), applicabilities(FIX_KINDS[kind])).text
    snapshot = snapshot_path(case, kind)
    if os.environ.get("GPULINT_UPDATE_SNAPSHOTS"):
        snapshot.parent.mkdir(exist_ok=True)
        snapshot.write_text(fixed, encoding="utf-8")
    assert snapshot.is_file(), f"missing snapshot {snapshot}; create it with GPULINT_UPDATE_SNAPSHOTS=1"
    assert fixed == snapshot.read_text(encoding="utf-8")


@pytest.mark.parametrize("kind", sorted(FIX_KINDS))
@pytest.mark.parametrize(("rule", "case"), CASES)
def test_fixes_settle_parse_and_are_idempotent(rule, case, kind):
    source = case.read_text(encoding="utf-8")
    allowed = applicabilities(FIX_KINDS[kind])
    result = fix_text(source, _lint(rule, case), allowed)
    cst.parse_module(result.text)
    compile(result.text, str(case), "exec")
    again = fix_text(result.text, _lint(rule, case), allowed)
    assert again.applied == 0 and again.text == result.text
    assert not [d for d in result.remaining if d.fix is not None and d.fix.applicability in allowed]


@pytest.mark.parametrize(("rule", "case"), CASES)
def test_fixes_match_declared_availability(rule, case):
    diagnostics = lint_source(case.read_text(encoding="utf-8"), str(case), [rule])
    with_fix = [d.fix is not None for d in diagnostics]
    if rule.fix_availability is FixAvailability.ALWAYS:
        assert all(with_fix)
    elif rule.fix_availability is FixAvailability.NONE:
        assert not any(with_fix)
    for diagnostic in diagnostics:
        if diagnostic.fix is not None:
            assert diagnostic.fix.title == rule.fix_title


@pytest.mark.parametrize("rule", ALL_RULES, ids=lambda rule: rule.code)
def test_every_rule_has_positive_and_negative_cases(rule):
    markers = [expected_markers(case.read_text(encoding="utf-8")) for case in fixture_cases(rule.code)]
    assert any(markers), f"{rule.code} has no positive case"
    assert not all(markers), f"{rule.code} has no file of hard negatives"
