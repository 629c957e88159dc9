"""``--statistics``: how often each rule fired, most frequent first."""

from __future__ import annotations

from collections import Counter
from typing import TextIO

from gpulint.report import RunReport


def render(report: RunReport, stream: TextIO) -> None:
    counts = Counter(d.code for d in report.diagnostics)
    names = {d.code: d.name for d in report.diagnostics}
    fixable = {d.code for d in report.diagnostics if report.applies_with_fix(d)}
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        marker = "[*]" if code in fixable else "   "
        stream.write(f"{count:>5}\t{code}\t{marker} {names[code]}\n")
