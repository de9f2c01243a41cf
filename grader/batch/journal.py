"""A grading run's results on disk, one file per student, so nothing is lost.

Layout under the output folder::

    journal/run.json              what this run grades (checked by --resume)
    journal/done/<key>.json       one finished result, written atomically
    journal/running/<key>.json    an in-flight marker: {"student", "attempts"}
    journal/hashes/<key>.json     what was graded: {"student", "sha256"} of the submission's content

A result is written (temporary file, then ``os.replace``) before its marker is
removed, so a grader killed at any moment, even by ``kill -9``, leaves each
student either done or in flight, never half-written. On ``--resume`` a
student still marked in flight is graded again; the marker counts attempts,
so one that stopped the grader twice is recorded as an error and skipped.
A result's content hash (``content_hash``: the graded file's name and bytes,
and the quiz answers file's) is written after the result, so on ``--resume``
a submission whose content changed since (a resubmission) is graded again and
an unchanged one is kept; a result without a hash is graded again too.
A lock file (``.mha-lock``) keeps two runs from writing into the same folder
at once, and a new run never deletes an earlier one: it refuses the folder,
or, asked to ``--overwrite``, moves the earlier run to ``previous/<time>/``.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import time
from pathlib import Path
from typing import IO

from grader.errors import UsageError
from grader.files import EntryError, Found, atomic_write_text, file_key, read_found
from grader.results import SubmissionResult
from grader.sandbox.source import MAX_SOURCE_BYTES

MAX_ATTEMPTS = 2  # a submission in flight during two grader crashes is not tried a third time


# What a run writes into --out; an earlier run is these, moved aside together by --overwrite.
OWN_OUTPUTS = ("journal", "grades.csv", "results.json", "feedback", "report.html", "junit.xml", "gradescope")
PREVIOUS_FOLDER = "previous"
LOCK_NAME = ".mha-lock"


def holds_run(out: Path) -> bool:
    """Whether ``out`` holds what an earlier run (finished or not) wrote."""
    out = Path(out)
    done = out / "journal" / "done"
    return ((out / "journal" / "run.json").is_file() or (out / "results.json").exists()
            or (out / "grades.csv").exists() or (done.is_dir() and any(done.iterdir())))


def set_aside(out: Path) -> Path:
    """Move an earlier run's files out of the way, into ``out/previous/<time>/``; returns that folder."""
    out = Path(out)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = out / PREVIOUS_FOLDER / stamp
    number = 1
    while target.exists():
        number += 1
        target = out / PREVIOUS_FOLDER / f"{stamp}-{number}"
    target.mkdir(parents=True)
    for name in OWN_OUTPUTS:
        if (out / name).exists() or (out / name).is_symlink():
            os.replace(out / name, target / name)
    return target


def content_hash(*, path: Path | None, answers=None, refusal: str = "") -> str:
    """The SHA-256 of what grading a submission reads: the graded file (its name and bytes), the quiz answers
    file (a path, what discovery found of it, or the message saying why it cannot be read), or the reason the
    entry is refused. Links are never followed; a file is read up to one byte past the size grading accepts,
    so any change below that limit changes the hash."""
    digest = hashlib.sha256()
    for part in (path, answers):
        digest.update(b"\0file\0" + _name_of(part).encode("utf-8", "surrogateescape") + b"\0")
        if part is not None:
            digest.update(_bounded_bytes(part))
    digest.update(b"\0refusal\0" + refusal.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def _name_of(part) -> str:
    if part is None:
        return "-"
    if isinstance(part, Found):
        return part.parts[-1] if part.parts else part.root.name
    if isinstance(part, Path):
        return part.name
    return f"problem:{getattr(part, 'key', part)!s}"  # a Message: why the answers file cannot be read


def _bounded_bytes(part) -> bytes:
    if isinstance(part, Found):
        try:
            return read_found(part, limit=MAX_SOURCE_BYTES)
        except EntryError as error:
            return f"unreadable: {error.key}".encode()
    if not isinstance(part, Path):
        return repr(sorted(getattr(part, "params", {}).items())).encode("utf-8", "surrogateescape")
    path = part
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        return f"unreadable: {error.errno}".encode()
    with os.fdopen(descriptor, "rb") as file:
        return file.read(MAX_SOURCE_BYTES + 1)


class Journal:
    """The per-student result files of one output folder."""

    def __init__(self, out_dir: Path):
        self.out = Path(out_dir)
        self.root = self.out / "journal"
        self.done_dir = self.root / "done"
        self.running_dir = self.root / "running"
        self.hashes_dir = self.root / "hashes"
        self._lock: IO | None = None

    # ---- opening -------------------------------------------------------------------
    def open(self, run: dict, *, resume: bool, overwrite: bool = False) -> Path | None:
        """Lock the folder, then continue its run (``resume``, which must match ``run``) or start one.

        A new run never deletes an earlier one: ``out`` must not hold one,
        unless ``overwrite``, which moves it aside first. Returns where it went.
        """
        self._take_lock()
        moved = None
        run_file = self.root / "run.json"
        if holds_run(self.out):
            if resume:
                self._check_same_run(run_file, run)
            elif overwrite:
                moved = set_aside(self.out)
            else:
                self.close()
                raise UsageError(
                    f"{self.out} holds the results of an earlier run; add --resume to continue it, or "
                    f"--overwrite to move it to {self.out / PREVIOUS_FOLDER}/<time>/ and grade afresh "
                    "(or choose another --out)")
        self.root.mkdir(parents=True, exist_ok=True)
        self.done_dir.mkdir(exist_ok=True)
        self.running_dir.mkdir(exist_ok=True)
        self.hashes_dir.mkdir(exist_ok=True)
        atomic_write_text(run_file, json.dumps(run, indent=2, sort_keys=True) + "\n")
        return moved

    def _take_lock(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        self._lock = open(self.out / LOCK_NAME, "w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            self._lock = None
            raise UsageError(f"another `mha grade` is writing into {self.out}; wait for it or use another --out")

    def _check_same_run(self, run_file: Path, run: dict) -> None:
        try:
            previous = json.loads(run_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.close()
            raise UsageError(f"{self.out} holds results without a readable journal/run.json, so --resume "
                             "cannot continue them; use --overwrite to move them aside and grade afresh") from None
        changed = [key for key in run if previous.get(key) != run[key]]
        if changed:
            self.close()
            raise UsageError(f"{self.out} holds a run with another {', '.join(changed)}; "
                             "grade again with --overwrite instead of --resume, or choose another --out")

    def close(self) -> None:
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    # ---- finished results --------------------------------------------------------------
    def is_done(self, student: str) -> bool:
        return (self.done_dir / f"{file_key(student)}.json").is_file()

    def read(self, student: str) -> SubmissionResult:
        data = json.loads((self.done_dir / f"{file_key(student)}.json").read_text(encoding="utf-8"))
        return SubmissionResult.from_dict(data)

    def record(self, student: str, result: SubmissionResult) -> None:
        """Store a finished result (as its JSON), then forget that it was in flight (in this order)."""
        atomic_write_text(self.done_dir / f"{file_key(student)}.json",
                          json.dumps(result.to_dict(), ensure_ascii=False, allow_nan=False), durable=True)
        self.finished(student)

    # ---- what was graded ------------------------------------------------------------------
    def remember(self, student: str, digest: str) -> None:
        """Record the content hash of the submission whose result was just recorded (after the result)."""
        atomic_write_text(self.hashes_dir / f"{file_key(student)}.json",
                          json.dumps({"student": student, "sha256": digest}, ensure_ascii=False))

    def graded_hash(self, student: str) -> str | None:
        """The content hash of what ``student``'s recorded result graded; None when unknown."""
        try:
            data = json.loads((self.hashes_dir / f"{file_key(student)}.json").read_text(encoding="utf-8"))
            return str(data["sha256"]) if data.get("student") == student else None
        except (FileNotFoundError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def forget(self, student: str) -> None:
        """Drop ``student``'s recorded result (its submission changed: it is graded again)."""
        (self.hashes_dir / f"{file_key(student)}.json").unlink(missing_ok=True)
        (self.done_dir / f"{file_key(student)}.json").unlink(missing_ok=True)

    # ---- in flight -----------------------------------------------------------------------
    def attempts(self, student: str) -> int:
        """How many times grading ``student`` started without finishing."""
        try:
            data = json.loads((self.running_dir / f"{file_key(student)}.json").read_text(encoding="utf-8"))
            return int(data.get("attempts", 0))
        except (FileNotFoundError, ValueError, AttributeError):
            return 0

    def start(self, student: str) -> int:
        """Mark ``student`` as in flight; returns this attempt's number (1 for the first)."""
        attempt = self.attempts(student) + 1
        atomic_write_text(self.running_dir / f"{file_key(student)}.json",
                          json.dumps({"student": student, "attempts": attempt}, ensure_ascii=False))
        return attempt

    def abandon(self, student: str, attempt: int) -> None:
        """Undo ``start`` for a grading stopped on purpose (Ctrl-C), which says nothing about the submission."""
        marker = self.running_dir / f"{file_key(student)}.json"
        if attempt <= 1:
            marker.unlink(missing_ok=True)
        else:
            atomic_write_text(marker, json.dumps({"student": student, "attempts": attempt - 1}, ensure_ascii=False))

    def finished(self, student: str) -> None:
        """A grading that ended in this run: no longer in flight, whatever its attempts, before its result is
        stored (a crash in between grades it again as a new submission, never as a suspect)."""
        (self.running_dir / f"{file_key(student)}.json").unlink(missing_ok=True)

    def in_flight(self) -> list[str]:
        """Students whose grading started in an earlier run and never finished."""
        students = []
        for marker in sorted(self.running_dir.glob("*.json")):
            try:
                student = json.loads(marker.read_text(encoding="utf-8"))["student"]
            except (ValueError, KeyError, TypeError):
                continue
            if self.is_done(student):
                marker.unlink(missing_ok=True)
            else:
                students.append(student)
        return students
