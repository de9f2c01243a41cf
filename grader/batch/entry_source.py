"""A submission's cells from the file discovery found, read once (``grader.batch.opening``), or why there are none."""

from __future__ import annotations

from pathlib import Path

from grader.batch.opening import EntryError, Found, read_capped, read_found
from grader.grading.submitted import submitted_source
from grader.render.text_safety import clean_name
from grader.sandbox.source import SubmissionError


def entry_source(*, path: Path, found: Found | None):
    """The cells of the submission discovery found (``found``; else the file at ``path``, read as carefully),
    or the Message saying why there are none (``grader.grading.submitted``)."""
    name = clean_name(Path(path).name)
    try:
        data = read_found(found) if found is not None else read_capped(Path(path))
        return submitted_source(data, name=name)
    except (EntryError, SubmissionError) as bad:
        return bad.message
