"""A submission's code from the bytes the grader read itself (``grader.files``), never from a path again.

``submitted_source`` is ``grader.sandbox.source.read_submission`` after the
read: the same refusals (empty, binary, not UTF-8, not a notebook), and a
notebook nested too deeply for the JSON parser, or whose cells hold values of
the wrong types, is a clear refusal too, not the grader's failure.
``entry_source`` reads what discovery found (``grader.files.read_found``)
and returns its cells, or the Message saying why there are none: what the
lanes of ``mha grade``, ``mha check``, the Gradescope bundle and ``mha
similarity`` read.
"""

from __future__ import annotations

from pathlib import Path

from grader.content.messages import Message
from grader.files import MAX_SOURCE_BYTES, EntryError, Found, read_capped, read_found
from grader.sandbox.source import Cell, SubmissionError, SubmissionSource, notebook_source, read_submission


def read_submission_file(path: Path) -> SubmissionSource:
    """``read_submission`` of the file at ``path``, with the refusals ``notebook_cells`` adds."""
    try:
        return read_submission(path)
    except RecursionError:
        raise SubmissionError("notebook_too_deep", name=Path(path).name) from None
    except (AttributeError, TypeError):
        raise SubmissionError("notebook_malformed", name=Path(path).name) from None


def notebook_cells(text: str, *, name: str) -> SubmissionSource:
    """``notebook_source`` of ``text``, its parser's failures on odd JSON turned into refusals for the student."""
    try:
        return notebook_source(text, name=name)
    except RecursionError:  # JSON nested thousands deep: Python's parser recurses once per level
        raise SubmissionError("notebook_too_deep", name=name) from None
    except (AttributeError, TypeError):  # valid JSON of the wrong shapes, e.g. a cell whose metadata is `true`
        raise SubmissionError("notebook_malformed", name=name) from None


def submitted_source(data: bytes, *, name: str) -> SubmissionSource:
    """The cells of the ``.py`` or ``.ipynb`` file called ``name`` whose bytes are ``data``; SubmissionError says
    why there are none."""
    suffix = Path(name).suffix
    if not data:
        raise SubmissionError("file_empty", name=name)
    if b"\x00" in data:
        raise SubmissionError("file_binary", name=name)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as bad:
        raise SubmissionError("file_not_utf8", name=name, position=bad.start) from None
    if suffix == ".ipynb":
        return notebook_cells(text, name=name)
    if suffix != ".py":
        raise SubmissionError("file_wrong_kind", name=name)
    return SubmissionSource(cells=(Cell(text, name, name),), mode="module", display_name=name)


def entry_source(*, path: Path, found: Found | None, name: str) -> SubmissionSource | Message:
    """The cells of the submission discovery found (``found``; else the file at ``path``, read as carefully),
    or the Message saying why there are none; ``name`` is how messages call the file (cleaned by the caller)."""
    try:
        data = (read_found(found, limit=MAX_SOURCE_BYTES) if found is not None
                else read_capped(Path(path), limit=MAX_SOURCE_BYTES))
        return submitted_source(data, name=name)
    except EntryError as bad:
        return Message(bad.key, bad.params)
    except SubmissionError as bad:
        return bad.message
