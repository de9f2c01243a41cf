"""What a grading run is asked to do, as one frozen value, and what one lane is handed.

``GradingRun`` replaces the dozen keyword arguments that used to travel from
``mha grade`` through the run, the lanes and the tasks: the verb builds it
once, the run, the journal and every task read it. ``identity`` is the part
``--resume`` compares with the run it continues. A ``Task`` is one student's
share of the run, sent to a grading process (both are plain picklable data).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from grader.paths import DEFAULT_ASSIGNMENT
from grader.practice.homework import QuizPolicy
from grader.sandbox.client import Limits


@dataclass(frozen=True)
class GradingRun:
    """The settings of one `mha grade` run."""

    submissions: Path  # the class folder: one entry per student (or one file, a class of one)
    out: Path  # where the outputs and the journal go
    assignment: str = DEFAULT_ASSIGNMENT
    visibility: str = "all"  # public, hidden or all checks
    lang: str = "en"  # of the feedback and of refusals
    limits: Limits = field(default_factory=Limits)
    jobs: int | None = None  # grading processes at once (None: one per core)
    shard: tuple[int, int] | None = None  # (K, N): every N-th submission from the K-th
    formats: tuple[str, ...] = ()  # extra exports (grader.render.exports.FORMATS)
    resume: bool = False  # continue the run already in ``out``
    overwrite: bool = False  # move an earlier run in ``out`` aside (never deleted) and grade afresh
    quiz: QuizPolicy = field(default_factory=QuizPolicy)
    adjustments: Path | None = None  # CSV of late penalties, manual points, extensions (grader.batch.adjustments)
    timeout_scale: float = 1.0  # the calibrated call limits are multiplied by this
    isolation: str = "linux"  # "portable" only when asked (grader.sandbox.servers): it does not protect the grader

    @property
    def root(self) -> Path:
        """The folder the submissions' paths are shown relative to: the class folder, or the one file's folder."""
        submissions = Path(self.submissions)
        return submissions.parent if submissions.is_file() else submissions

    @property
    def title(self) -> str:
        return f"mha grade: {self.assignment}" + (f" (shard {self.shard_text})" if self.shard else "")

    @property
    def shard_text(self) -> str | None:
        return f"{self.shard[0]}/{self.shard[1]}" if self.shard else None

    def identity(self) -> dict:
        """What the journal records of this run, and ``--resume`` checks (JSON-ready)."""
        return {"submissions": str(Path(self.submissions).resolve()), "assignment": self.assignment,
                "visibility": self.visibility, "shard": self.shard_text, "lang": self.lang}


@dataclass(frozen=True)
class Task:
    """One student's submission, handed to a grading process with the run's settings."""

    student: str
    path: Path  # the file to grade
    submission: str  # its path inside SUBMISSIONS, as results show it
    run: GradingRun
    answers: object = None  # quiz answers graded with the code: a grader.files.Found, or why not (Message)
    found: object = None  # the file as discovery saw it (grader.files.Found): what the lane reads
    course_key: str | None = None  # from the process that started the run, never written to disk
    server: object = None  # address of the run's fork server; in a lane, the lane's handle on it
    calibration: dict | None = None  # the run's call limits (grader.grading.calibration), measured once
