"""The LibCST parse floor: parse every file named in a list with ``libcst.parse_module``, one process."""

from __future__ import annotations

import sys
from pathlib import Path

import libcst as cst


def main() -> int:
    for name in Path(sys.argv[1]).read_text(encoding="utf-8").splitlines():
        try:
            cst.parse_module(Path(name).read_bytes())
        except cst.ParserSyntaxError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
