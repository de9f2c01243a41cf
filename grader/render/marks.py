"""What every renderer shows beside a check: its outcome's mark and colour, and the page texts lookup.

One set for the terminal (``grader.render.terminal``), the feedback pages
(``grader.render.feedback``) and the notebook fragment
(``grader.render.notebook_html``), so the three never disagree.
"""

from __future__ import annotations

from grader.content.messages import render
from grader.i18n import pick

MARKS = {"passed": "✓", "failed": "✗", "error": "!", "timeout": "◷"}  # in DejaVu Sans, so no empty box
COLOURS = {"passed": "green", "failed": "red", "error": "red", "timeout": "yellow"}  # rich colour names


def mark(outcome: str) -> str:
    """The plain mark of ``outcome`` (``?`` for one this version does not know)."""
    return MARKS.get(outcome, "?")


def terminal_mark(outcome: str) -> str:
    """The mark of ``outcome`` in rich markup, coloured."""
    colour = COLOURS.get(outcome)
    return f"[{colour}]{mark(outcome)}[/]" if colour else mark(outcome)


def say(texts: dict[str, dict[str, str]], key: str, lang: str, **params) -> str:
    """A page's own text ``key`` from ``texts`` (loaded with ``load_bilingual``), else a check message."""
    if key in texts:
        return pick(texts[key], lang).format(**params)
    return render(key, params, lang)
