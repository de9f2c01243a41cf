"""Adjustments made after grading: late penalties, manual points, extensions (``mha grade --adjust FILE.csv``).

The file is a CSV with a header and one row per adjustment (a student may have
several):

    student,points,reason,kind
    alice,-10%,late by 1 day,late
    alice,0,extension granted (medical),extension
    bob,+2,good explanation in the notebook,manual
    carol,-3,copied the public fixtures,manual

``points`` is a signed number of points, or a percentage of the assignment's
maximum (``-10%``). ``kind`` is ``late``, ``manual`` (the default) or
``extension``; an extension waives the student's late penalties, which stay
listed, marked waived, so the feedback says why none applied. ``reason`` is
shown to the student.

Adjustments never change a check's score: a result keeps ``score`` (the sum
of its checks, DESIGN.md's contract) and gains ``adjustments`` (each with the
points it changed) and ``final_score`` (``score`` plus those changes, not
below 0; ``SubmissionResult.final`` reads it).
"""

from __future__ import annotations

import csv
import re
from dataclasses import replace
from pathlib import Path

from grader.errors import UsageError
from grader.results import Adjustment, SubmissionResult

KINDS = ("late", "manual", "extension")
COLUMNS = ("student", "points", "reason", "kind")
_POINTS = re.compile(r"^\s*([+-]?\d+(?:\.\d+)?)\s*(%?)\s*$")


def read_adjustments(path: Path) -> dict[str, tuple[Adjustment, ...]]:
    """The adjustments of ``path`` by student id, in the file's order; a bad row is a UsageError naming its line."""
    path = Path(path)
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            rows = list(csv.DictReader(handle))
            header = [name.strip().lower() for name in (rows[0].keys() if rows else [])]
    except OSError as bad:
        raise UsageError(f"--adjust {path}: {bad.strerror or bad}") from None
    except (csv.Error, UnicodeDecodeError) as bad:
        raise UsageError(f"--adjust {path} is not a UTF-8 CSV file ({bad})") from None
    if rows and not {"student", "points"} <= set(header):
        raise UsageError(f"--adjust {path}: the header must name the columns student,points,reason[,kind]; "
                         f"found {','.join(header)}")
    unknown = [name for name in header if name not in COLUMNS]
    if unknown:
        raise UsageError(f"--adjust {path}: unknown column {unknown[0]!r}; the columns are {','.join(COLUMNS)}")
    table: dict[str, list[Adjustment]] = {}
    for line, row in enumerate(rows, start=2):
        row = {str(key).strip().lower(): (value or "").strip() for key, value in row.items() if key is not None}
        student, kind = row.get("student", ""), (row.get("kind") or "manual").lower()
        if not student:
            raise UsageError(f"--adjust {path}, line {line}: no student")
        if kind not in KINDS:
            raise UsageError(f"--adjust {path}, line {line}: kind {kind!r} is not one of {', '.join(KINDS)}")
        match = _POINTS.match(row.get("points") or "0")
        if match is None:
            raise UsageError(f"--adjust {path}, line {line}: points {row.get('points')!r} should be a number "
                             "such as -2.5 or a percentage such as -10%")
        number, percent = float(match.group(1)), match.group(2) == "%"
        if kind == "extension" and number:
            raise UsageError(f"--adjust {path}, line {line}: an extension waives late penalties and gives no points "
                             "itself; put 0 in points")
        table.setdefault(student, []).append(Adjustment(kind=kind, reason=row.get("reason", ""),
                                                        points=0.0 if percent else number,
                                                        percent=number if percent else None))
    return {student: tuple(items) for student, items in table.items()}


def apply_adjustments(result: SubmissionResult, adjustments: tuple[Adjustment, ...] | None) -> SubmissionResult:
    """``result`` with ``adjustments`` (as given, or as a result carries them: applied again) and its
    ``final_score``."""
    items = list(adjustments or ())
    extended = any(item.kind == "extension" for item in items)
    maximum = float(result.max_score or 0.0)
    applied = []
    for item in items:
        given = item.points if item.percent is None else maximum * item.percent / 100
        waived = extended and item.kind == "late"
        applied.append(Adjustment(kind=item.kind, reason=item.reason, points=item.points, percent=item.percent,
                                  change=0.0 if waived else round(given, 6), waived=waived))
    final = max(0.0, round(float(result.score) + sum(item.change for item in applied), 6))
    return replace(result, adjustments=tuple(applied), final_score=final)
