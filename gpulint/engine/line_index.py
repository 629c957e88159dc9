"""Where each line of a text starts: converting between character offsets and line positions."""

from __future__ import annotations

import bisect
import re
from typing import Tuple


class LineIndex:
    """Line starts of one text, for 0-based character offsets and 1-based lines."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0, *(match.end() for match in re.finditer("\n", text))]

    def position(self, offset: int) -> Tuple[int, int]:
        """The 1-based line and 1-based column of a character offset."""
        line = bisect.bisect_right(self.starts, offset)
        return line, offset - self.starts[line - 1] + 1

    def offset_of_ast(self, line: int, byte_column: int) -> int:
        """The character offset of a position of Python's ``ast`` (1-based line, column in UTF-8 bytes)."""
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        text = self.text[start:end]
        column = byte_column if text.isascii() else len(text.encode("utf-8")[:byte_column].decode("utf-8", "replace"))
        return start + column
