"""Timed coding drills: a fresh stub in a workspace, a clock, a graded submit, a history.

The workspace holds a whole exercise module. Where the reference solutions
are installed, only the drilled function is stubbed and every other function
is the reference, so a drill of ``forward`` can rely on working heads and
attention and the score measures that one function. In a student release
(no solutions) the workspace is the full stub and every function is graded.
``all`` drills the whole module from scratch.

Nothing in the workspace gives the drilled function away unless the candidate
asks (``hints=True``): its stub has no hint, and where the drilled function
has an inverse in the module (``split_heads`` and ``combine_heads``), that
inverse is a working stand-in written another way, not the reference read
backwards. A drill stays open for further submits until it earns full marks
or its time limit runs out; every submit is recorded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

from grader.errors import ConfigError, UsageError
from grader.grading.assignment import StandIn, get_assignment
from grader.paths import DEFAULT_ASSIGNMENT, default_assignment, released_stub, solution_path
from grader.practice.texts import text
from grader.practice.user_data import data_dir, read_document, write_document
from grader.stubs import BEGIN, DEF, END, HINT, STUB_HINT, generate_stub

ALL = "all"  # the whole module from scratch
CURRENT_FILE = "drill-current.json"
HISTORY_FILE = "drill-history.json"


def drills(assignment: str = DEFAULT_ASSIGNMENT) -> tuple[str, ...]:
    """What ``mha drill`` offers for ``assignment``: the functions its spec lists, then ``all``."""
    return (*get_assignment(assignment).drills, ALL)


DRILLS = drills(default_assignment())  # the default exercise's (in a release, its own), for the command line


@dataclass(frozen=True)
class Drill:
    """The drill in progress."""

    function: str
    path: str  # the module the candidate edits
    started: float  # epoch seconds
    time_limit_minutes: float | None
    graded: tuple[str, ...] | None  # functions the submit grades; None: all of them
    hints: bool = False  # whether the workspace holds the hints
    attempts: int = 0  # submits so far
    assignment: str = DEFAULT_ASSIGNMENT  # the exercise the module belongs to
    replaced: str = ""  # when it was started: the function of the drill it replaced, unrecorded
    kept: str = ""  # where that drill's file was moved, when the new stub took its place


@dataclass(frozen=True)
class DrillRecord:
    """One submit of a drill, as kept in the history."""

    function: str
    started: float
    seconds: float
    time_limit_minutes: float | None
    overtime: bool
    status: str
    score: float
    max_score: float
    misconceptions: tuple[str, ...]
    attempt: int = 1
    hints: bool = False
    ended: bool = True  # whether this submit closed the drill (full marks, or the time ran out)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["misconceptions"] = list(self.misconceptions)
        return data


def drill_source(function: str, *, assignment: str = DEFAULT_ASSIGNMENT,
                 hints: bool = False) -> tuple[str, tuple[str, ...] | None]:
    """The workspace module for ``function`` and the functions a submit grades."""
    offered = drills(assignment)
    if function not in offered:
        raise UsageError(f"unknown drill {function!r}; choose from: {', '.join(offered)}")
    reference = solution_path(assignment)
    if reference is None:  # a student release: the whole stub, every function graded
        stub = released_stub(assignment)
        if not stub.is_file():
            raise ConfigError(f"the drill starts from the stub of {assignment}, which this install does not hold "
                              f"({stub}); a student release ships it")
        source, graded = stub.read_text(encoding="utf-8"), None
    elif function == ALL:
        source, graded = generate_stub(reference.read_text(encoding="utf-8"), origin=str(reference)), None
    else:
        stand_in = get_assignment(assignment).stand_in(function) if not hints else None
        kept = _keep_solutions_except(reference.read_text(encoding="utf-8"), function, stand_in=stand_in)
        source, graded = generate_stub(kept, origin=str(reference)), (function,)
    if not hints:
        source = "".join(line for line in source.splitlines(keepends=True) if not STUB_HINT.match(line))
    return source, graded


def _keep_solutions_except(source: str, function: str, *, stand_in: StandIn | None) -> str:
    """Unmark every solution block but ``function``'s, so only that one becomes a stub.

    With a ``stand_in`` (from the exercise's spec), the block of ``function``'s inverse is replaced by its body.
    """
    inverse, body = (stand_in.inverse, stand_in.body) if stand_in is not None else (None, ())
    kept, current, inside_other = [], None, False
    for line in source.splitlines():
        match = DEF.match(line)
        stripped = line.strip()
        if match and not inside_other:
            current = match.group(1)
        if stripped == BEGIN and current != function:
            inside_other = True
            if current == inverse:
                indent = line[: len(line) - len(line.lstrip())]
                kept.extend(indent + line for line in body)
            continue
        if inside_other and stripped == END:
            inside_other = False
            continue
        if inside_other and (HINT.search(line) or current == inverse):
            continue
        kept.append(line)
    return "\n".join(kept) + "\n"


def start_drill(*, function: str | None, workspace: Path, time_limit_minutes: float | None = None,
                seed: int | None = None, assignment: str = DEFAULT_ASSIGNMENT,
                now: float | None = None, hints: bool = False) -> Drill:
    """Write a fresh stub into ``workspace`` and start the clock.

    A running drill is replaced, unrecorded; its file, where the new stub goes, is kept beside it as
    ``<name>.previous.py`` (``Drill.replaced`` says where), so no work is lost.
    """
    running = current_drill()
    if function is None:
        choices = drills(assignment)[:-1] or (ALL,)  # an exercise whose spec names no single drill: the module
        function = choices[int(np.random.default_rng(seed).integers(len(choices)))]
    source, graded = drill_source(function, assignment=assignment, hints=hints)
    workspace.mkdir(parents=True, exist_ok=True)
    path = (workspace / f"{assignment}.py").resolve()
    kept = ""
    if running is not None and Path(running.path) == path and path.is_file():
        kept = str(path.replace(path.with_name(f"{path.stem}.previous.py")))
    path.write_text(source, encoding="utf-8")
    drill = Drill(function, str(path), time.time() if now is None else now, time_limit_minutes, graded, hints,
                  assignment=assignment)
    write_document(CURRENT_FILE, {"drill": asdict(drill)})
    return replace(drill, replaced=running.function if running else "", kept=kept)


def current_drill() -> Drill | None:
    """The drill in progress, or None."""
    raw = read_document(CURRENT_FILE, {}).get("drill")
    if not raw:
        return None
    graded = raw.get("graded")
    return Drill(raw["function"], raw["path"], float(raw["started"]), raw.get("time_limit_minutes"),
                 tuple(graded) if graded is not None else None, bool(raw.get("hints", False)),
                 int(raw.get("attempts", 0)), raw.get("assignment", DEFAULT_ASSIGNMENT))


def submit_drill(*, now: float | None = None, lang: str = "en",
                 grade: Callable | None = None) -> tuple[DrillRecord, object]:
    """Grade the running drill with the checks of ``mha check`` and record the attempt.

    The drill stays open for another submit unless this one earned full marks
    or came after the time limit (``record.ended`` says which). Returns the
    history record and the full ``SubmissionResult`` for rendering.
    """
    drill = current_drill()
    if drill is None:
        raise UsageError(text("drill_none_running", lang))
    if not Path(drill.path).is_file():
        raise UsageError(text("drill_file_gone", lang, path=drill.path, function=drill.function))
    finished = time.time() if now is None else now
    if grade is None:
        from grader.grading.grade import grade_submission as grade
    result = grade(path=Path(drill.path), assignment=drill.assignment, functions=drill.graded, lang=lang)
    seconds = round(finished - drill.started, 1)
    limit = drill.time_limit_minutes
    overtime = limit is not None and seconds > limit * 60
    solved = result.status == "graded" and result.max_score > 0 and result.score == result.max_score
    record = DrillRecord(drill.function, drill.started, seconds, limit, overtime, result.status,
                         float(result.score), float(result.max_score), tuple(result.misconceptions),
                         attempt=drill.attempts + 1, hints=drill.hints, ended=solved or overtime)
    history = [entry.to_dict() for entry in load_history()] + [record.to_dict()]
    write_document(HISTORY_FILE, {"drills": history})
    still_running = None if record.ended else asdict(replace(drill, attempts=record.attempt))
    write_document(CURRENT_FILE, {"drill": still_running})
    return record, result


def load_history() -> list[DrillRecord]:
    """Every submitted drill, oldest first."""
    records = []
    for raw in read_document(HISTORY_FILE, {"drills": []}).get("drills", []):
        raw = dict(raw, misconceptions=tuple(raw.get("misconceptions", ())))
        records.append(DrillRecord(**{key: raw[key] for key in DrillRecord.__dataclass_fields__ if key in raw}))
    return records


def best_times(history: list[DrillRecord]) -> dict[str, float]:
    """Per function, the fastest drill that earned full marks."""
    best: dict[str, float] = {}
    for record in history:
        if record.status == "graded" and record.max_score and record.score == record.max_score:
            best[record.function] = min(best.get(record.function, record.seconds), record.seconds)
    return best
