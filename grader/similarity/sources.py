"""A class's submissions as the code a similarity check reads: the same entries and ids as ``mha grade``.

The batch's discovery (``grader.batch.discovery``) finds one entry per
student and the sandbox's reader (``grader.sandbox.source``) turns a script
or a notebook into its code cells, exactly as grading does: a notebook's
magics and nbgrader test cells are dropped the same way. Nothing is run.
An entry that cannot be read (refused by discovery, not UTF-8, no code) is
left out with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader.batch.discovery import discover_submissions
from grader.content.messages import Message
from grader.errors import UsageError
from grader.grading.submitted import entry_source, read_submission_file
from grader.render.text_safety import clean_name
from grader.sandbox.source import SubmissionError


@dataclass(frozen=True)
class Document:
    """One student's code: the file compared, shown relative to the class folder, and its cells."""

    student: str
    path: str  # as results show it
    cells: tuple[str, ...]  # the code of each cell (one for a script)
    labels: tuple[str, ...]  # "cell 3" for a notebook's cells; "" for a script
    file: Path | None = None  # where it was read from

    @property
    def notebook(self) -> bool:
        return any(self.labels)


@dataclass(frozen=True)
class Skipped:
    student: str
    reason: str


def read_class(submissions: Path, *, assignment: str, lang: str = "en") -> tuple[list[Document], list[Skipped]]:
    """Every readable submission of ``submissions`` (a class folder), sorted by student, and those left out."""
    submissions = Path(submissions)
    if not submissions.is_dir():
        raise UsageError(f"{submissions} is not a folder; pass the folder that holds one entry per student "
                         "(a similarity check needs a class)")
    try:
        entries, _ = discover_submissions(submissions, assignment=assignment)
    except OSError as bad:
        raise UsageError(f"cannot read {submissions} ({bad.strerror or bad})") from None
    if not entries:
        raise UsageError(f"{submissions} holds no submissions; expected one entry per student: "
                         "<student>.py, <student>.ipynb or a folder <student>/")
    documents, skipped = [], []
    for entry in entries:
        if entry.refusal is not None or entry.path is None:
            skipped.append(Skipped(entry.student, entry.refusal.render(lang) if entry.refusal else "no file"))
            continue
        # read once, as discovery found it
        source = entry_source(path=entry.path, found=entry.found, name=clean_name(entry.path.name))
        if isinstance(source, Message):
            skipped.append(Skipped(entry.student, source.render(lang)))
            continue
        notebook = source.mode == "cells"
        documents.append(Document(entry.student, entry.shown_path(submissions),
                                  tuple(cell.source for cell in source.cells),
                                  tuple(cell.label if notebook else "" for cell in source.cells), entry.path))
    return documents, skipped


def read_one(path: Path, *, student: str) -> Document | None:
    """A single file (the stub, the reference) as a document; None where it is absent or unreadable."""
    if path is None or not Path(path).is_file():
        return None
    try:
        source = read_submission_file(Path(path))
    except SubmissionError:
        return None
    return Document(student, Path(path).name, tuple(cell.source for cell in source.cells),
                    tuple("" for _ in source.cells), Path(path))


