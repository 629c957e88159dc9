"""Positions as the Language Server Protocol counts them: a line ends at ``\\r\\n``, ``\\r`` or
``\\n`` only (not at the form feeds and other breaks ``str.splitlines`` knows), and a column counts
code units of the encoding agreed with the client (UTF-16 unless it chose another)."""

from __future__ import annotations

import bisect
import re
from typing import List

from lsprotocol import types

LINE_BREAK = re.compile(r"\r\n|\r|\n")


class Lines:
    """Line starts of one document's text, converting character offsets to client positions."""

    def __init__(self, text: str, encoding: str = types.PositionEncodingKind.Utf16) -> None:
        self.text = text
        self.encoding = encoding
        self.starts: List[int] = [0, *(match.end() for match in LINE_BREAK.finditer(text))]

    def position(self, offset: int) -> types.Position:
        """The client's position of a character offset (clamped to the text)."""
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self.starts, offset) - 1
        return types.Position(line=line, character=self._units(self.text[self.starts[line]:offset]))

    def position_of(self, line: int, column: int) -> types.Position:
        """The client's position of gpulint's 1-based line and character column."""
        if line > len(self.starts):
            return self.position(len(self.text))
        return self.position(self.starts[line - 1] + column - 1)

    def _units(self, text: str) -> int:
        if self.encoding == types.PositionEncodingKind.Utf8:
            return len(text.encode("utf-8"))
        if self.encoding == types.PositionEncodingKind.Utf32:
            return len(text)
        return len(text.encode("utf-16-le")) // 2
