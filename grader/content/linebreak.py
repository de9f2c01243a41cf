"""Lines of text at most so many columns wide, Chinese among them: a wide character counts two columns.

One rule for every place the project breaks lines itself (help pages, the notes under a figure): a line breaks at a
space or beside any Chinese character, never before closing punctuation nor after opening punctuation, and never
inside a code span or a Latin word. Written here because the dependencies do not: textwrap breaks only at spaces,
click's wrapping counts characters, and rich folds a Chinese run only where it is wider than a whole line and keeps
no rule for punctuation.
"""

from __future__ import annotations

import re
import unicodedata

_WIDE = "\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6"
_TOKEN = re.compile(rf"`[^`\n]*`[^\s{_WIDE}`]*|[{_WIDE}]|[^\s{_WIDE}`]+|\s+|`")  # a code span is never broken
_NO_LINE_START = set("，。、；：？！）》」』】”’")  # Chinese punctuation that closes: never first on a line
_NO_LINE_END = set("（《「『【“‘")  # and that opens: never last


def wrapped(text: str, width: int) -> list[list[str]]:
    """The paragraphs of ``text`` as lines at most ``width`` columns wide, a wide character counting two.

    A Latin word or a code span wider than ``width`` has a line of its own, unbroken.
    """
    paragraphs = []
    for paragraph in re.split(r"\n\s*\n", text.strip()):
        paragraph = re.sub(rf"(?<=[{_WIDE}])\n|\n(?=[{_WIDE}])", "", paragraph)  # a line end inside Chinese
        lines, line, used = [], "", 0
        for token in _TOKEN.findall(paragraph):
            token = " " if token.isspace() else token
            size = sum(2 if unicodedata.east_asian_width(char) in "WF" else 1 for char in token)
            if used + size > width and line.strip() and token not in _NO_LINE_START:
                carried = line[-1] if line[-1] in _NO_LINE_END else ""  # an opening bracket goes with what it opens
                lines.append(line[: len(line) - len(carried)].rstrip())
                line, used = carried, 2 * len(carried)
                if token == " ":
                    continue
            line, used = line + token, used + size
        paragraphs.append([*lines, line.rstrip()] if line.strip() else lines)
    return paragraphs


def fill(text: str, width: int) -> str:
    """``text`` as lines of at most ``width`` columns (paragraphs apart by an empty line)."""
    return "\n\n".join("\n".join(lines) for lines in wrapped(text, width))
