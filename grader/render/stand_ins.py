"""Marks a console's code page lacks, written as the nearest ones it has: a codec error handler.

A Chinese Windows console set to its code page (``PYTHONIOENCODING=gbk``, or
cp936 on a terminal that is not UTF-8) holds every Chinese word of the report
but not ✓, ✗ or ◷; Python would end in ``UnicodeEncodeError`` there. Under
``ERRORS`` each such character becomes the first of its stand-ins the
encoding can hold (√ and × are in GBK; v and x in ASCII), and any other
character its ``\\u`` escape, so the report is always written in full.
"""

from __future__ import annotations

import codecs

ERRORS = "mha-stand-ins"
STAND_INS = {
    # the outcome marks, the check table's rules, and the typography of the messages
    "✓": ("√", "v"), "✗": ("×", "x"), "◷": ("~",), "≠": ("!=",), "…": ("...",), "→": ("->",), "×": ("x",),
    "√": ("sqrt",), "─": ("-",), "━": ("-",), "│": ("|",), "┃": ("|",), "╇": ("+",), "┼": ("+",), "•": ("*",),
    "·": ("*",), "“": ('"',), "”": ('"',), "‘": ("'",), "’": ("'",), "–": ("-",), "—": ("-",), "−": ("-",),
    "±": ("+/-",), "∞": ("inf",), "÷": ("/",), "Σ": ("sum",), "ᵀ": ("^T",), "≤": ("<=",), "≥": (">=",),
}


def _stand_in(problem: UnicodeError) -> tuple[str, int]:
    if not isinstance(problem, UnicodeEncodeError):
        raise problem
    written = []
    for character in problem.object[problem.start:problem.end]:
        for candidate in STAND_INS.get(character, ()):
            try:
                candidate.encode(problem.encoding)
            except (UnicodeError, LookupError):
                continue
            written.append(candidate)
            break
        else:
            written.append(character.encode("ascii", "backslashreplace").decode("ascii"))
    return "".join(written), problem.end


def register() -> str:
    """The name of the error handler, registered once per process (codecs keeps the latest of a name)."""
    codecs.register_error(ERRORS, _stand_in)
    return ERRORS
