"""The closing line of the text formats, as ruff users know it."""

from __future__ import annotations

from gpulint.engine.diagnostics import Applicability
from gpulint.report import RunReport


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def summary_line(report: RunReport) -> str:
    findings = _findings_summary(report)
    if report.failed_files:
        not_checked = f"{plural(report.failed_files, 'file')} could not be checked or fixed (see errors above)."
        return not_checked if findings == "All checks passed!" else f"{findings} {not_checked}"
    return findings


def _findings_summary(report: RunReport) -> str:
    remaining = report.diagnostics
    if report.fixed:
        return f"Found {plural(report.fixed + len(remaining), 'problem')} ({report.fixed} fixed, {len(remaining)} remaining)."
    if not remaining:
        return "All checks passed!"
    fixable = sum(1 for d in remaining if report.applies_with_fix(d))
    unsafe = sum(
        1 for d in remaining
        if d.fix is not None and d.fix.applicability is Applicability.UNSAFE and not report.applies_with_fix(d)
    )
    details = []
    if fixable:
        details.append(f"{fixable} fixable with --fix")
    if unsafe:
        details.append(f"{unsafe} with --unsafe-fixes")
    suffix = f" ({', '.join(details)})" if details else ""
    return f"Found {plural(len(remaining), 'problem')}{suffix}."
