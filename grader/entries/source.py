"""A submission's cells from the file discovery found, read once (``grader.entries.opening``), or why there are none."""

from __future__ import annotations

from pathlib import Path

from grader.entries.opening import EntryError, Found, read_capped, read_found
from grader.grading.submitted import submitted_source
from grader.render.text_safety import clean_name
from grader.sandbox.source import MAX_SOURCE_BYTES, SubmissionError


def entry_source(*, path: Path, found: Found | None):
    """The cells of the submission discovery found (``found``; else the file at ``path``, read as carefully),
    or the Message saying why there are none (``grader.grading.submitted``)."""
    name = clean_name(Path(path).name)
    try:
        data = (read_found(found, limit=MAX_SOURCE_BYTES) if found is not None
                else read_capped(Path(path), limit=MAX_SOURCE_BYTES))
        return submitted_source(data, name=name)
    except (EntryError, SubmissionError) as bad:
        return bad.message
