"""``--statistics``: how often each rule fired, most frequent first, as a table or JSON."""

from __future__ import annotations

import json
from collections import Counter
from typing import List, TextIO

from gpulint.report import RunReport


def rows(report: RunReport) -> List[dict]:
    """One row per rule that fired: code, name, count, and whether ``--fix`` fixes any finding."""
    counts = Counter(d.code for d in report.diagnostics)
    names = {d.code: d.name for d in report.diagnostics}
    fixable = {d.code for d in report.diagnostics if report.applies_with_fix(d)}
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [{"code": code, "name": names[code], "count": count, "fixable": code in fixable} for code, count in ordered]


def render(report: RunReport, stream: TextIO) -> None:
    for row in rows(report):
        marker = "[*]" if row["fixable"] else "   "
        stream.write(f"{row['count']:>5}\t{row['code']}\t{marker} {row['name']}\n")


def render_json(report: RunReport, stream: TextIO) -> None:
    json.dump(rows(report), stream, indent=2)
    stream.write("\n")
