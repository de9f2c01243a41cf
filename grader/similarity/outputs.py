"""Write a similarity check into an output folder: similarity.json and similarity.html; and its progress bar."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from grader.files import atomic_write_text

if TYPE_CHECKING:
    from grader.similarity.compare import SimilarityReport
from grader.similarity.page import write_page

JSON_NAME, PAGE_NAME = "similarity.json", "similarity.html"


def write_similarity(report: SimilarityReport, *, out: Path, lang: str = "en") -> tuple[Path, Path]:
    """Write ``out/similarity.json`` and ``out/similarity.html``; returns both paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / JSON_NAME, json.dumps(report.to_dict(), ensure_ascii=False, indent=1) + "\n")
    write_page(out / PAGE_NAME, report, lang=lang)
    return out / JSON_NAME, out / PAGE_NAME


class StageBar:
    """A rich progress bar per stage (fingerprinting, evidence) on a terminal's stderr, named in the run's
    language (``stage_*`` of content/similarity.toml); silent elsewhere."""

    def __init__(self, enabled: bool | None = None, *, lang: str = "en"):
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.lang = lang
        self.progress = None

    def begin(self, stage: str, total: int) -> None:
        if not self.enabled:
            return
        from rich.console import Console
        from rich.markup import escape
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        from grader.similarity.page import say

        self.progress = Progress(TextColumn(f"[bold]{escape(say('stage_' + stage, self.lang))}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 console=Console(stderr=True), transient=False)
        self.progress.start()
        self.task = self.progress.add_task("", total=total)

    def advance(self) -> None:
        if self.progress is not None:
            self.progress.advance(self.task)

    def end(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def summary_lines(report: SimilarityReport, *, out: Path, lang: str = "en", shown: int = 5) -> list[str]:
    """The few most similar pairs, the answer-key matches and the files written, a line each, for the terminal."""
    from grader.render.text_safety import clean_line
    from grader.similarity.page import say

    skipped = say("terminal_skipped", lang, count=len(report.skipped)) if report.skipped else ""
    lines = [say("terminal_compared", lang, compared=f"{report.compared:,}", students=len(report.documents),
                 skipped=skipped)]
    for pair in report.pairs[:shown]:
        first, second = (clean_line(student) for student in pair.students)
        detail = say("terminal_pair", lang, passages=len(pair.passages))
        if pair.mistakes:  # one bug seen by several checks is one mistake, as its boost counts it
            detail += say("terminal_mistakes", lang, count=len({mistake.group for mistake in pair.mistakes}))
        lines.append(f"  {pair.score:.2f}  {first} ~ {second}  ({detail})")
    flagged = [clean_line(match.student) for match in report.reference_matches if match.flagged]
    if flagged:
        lines.append("  " + say("terminal_flagged", lang,
                                students=", ".join(flagged[:10]) + (" ..." if len(flagged) > 10 else "")))
    lines.append(say("terminal_wrote", lang, json=out / JSON_NAME, page=out / PAGE_NAME))
    return lines
