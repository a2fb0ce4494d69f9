"""A text's lines: the line and column of a character offset, a line's text, and the text with regions blanked
(offsets unchanged). What both parsers and `GDScriptFacts` place things with."""
from __future__ import annotations

import re
from collections.abc import Iterable


class TextLines:
    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]  # each line's first offset

    def line_of_offset(self, offset: int) -> int:
        lo, hi = 0, len(self.starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.starts[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    def col_of_offset(self, offset: int) -> int:
        return offset - self.starts[self.line_of_offset(offset) - 1] + 1

    def line_text(self, line: int) -> str:
        lines = self.text.split("\n")
        return lines[line - 1] if 0 < line <= len(lines) else ""


def blank_regions(text: str, comments: Iterable[tuple[int, int]],
                  strings: Iterable[tuple[int, int, str]]) -> tuple[str, str]:
    """(the text without its comments, the code alone: comments and string literals blanked), offsets unchanged."""
    chars = list(text)
    for s, e in comments:
        chars[s:e] = " " * (e - s)
    no_comments = "".join(chars)
    for s, e, _ in strings:
        chars[s:e] = " " * (e - s)
    return no_comments, "".join(chars)
