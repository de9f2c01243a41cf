"""``mha audit``: do the suites still tell every known mistake apart?

The mutant library ships with the package, in each exercise's folder:
``grader/assignments/<assignment>/mutants/``, realistic modules in ``mistakes/`` and correct ones written
in other styles in ``correct/`` (the folders only sort them). Each module
starts with ``# expect: <catalog id>`` (several ids separated by commas for a
module with several mistakes), ``# expect: correct``, or ``# expect:
uncatalogued`` for a mistake the catalog has no id for: the one source of what
it should be diagnosed as. Every mutant must lose points and be diagnosed with
exactly its own ids (each named, none spurious); every correct variant must
keep full marks with no misconception; an uncatalogued mistake must lose
points without any id; a module that does not load is a finding that says why.

A mutant that no rule names yet, though its ids are right, says so in a
``# known-miss: <why>`` line beside its ``# expect:``: it keeps its ids (the
corpus figures count it as missed), its verdict is ``known-miss`` while it
loses points with no spurious id and some id unnamed, and ``stale-known-miss``
(a finding) once every id is named, so the line is taken out.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from grader.grading.grade import grade_submission
from grader.paths import ASSIGNMENTS_DIR, DEFAULT_ASSIGNMENT

LIBRARY_NAME = "mutants"  # the library's folder in an exercise's folder
CORRECT, UNCATALOGUED = "correct", "uncatalogued"
_EXPECT = re.compile(r"^#\s*expect:\s*([\w-]+(?:\s*,\s*[\w-]+)*)", re.MULTILINE)
_KNOWN_MISS = re.compile(r"^#\s*known-miss:\s*(.+)$", re.MULTILINE)
ACCEPTED = ("ok", "known-miss")  # verdicts that are not findings


@dataclass(frozen=True)
class AuditFinding:
    path: str
    expected: str  # catalog ids joined by ", ", or "correct" / "uncatalogued"
    score: float
    max_score: float
    diagnosed: tuple[str, ...]
    verdict: str  # "ok", "known-miss", "survives", "unnamed", "misdiagnosed", "loses-points", "load-error",
    # "stale-known-miss"
    reason: str = ""  # why it is not ok: the load error, the checks lost, the ids found
    named: tuple[str, ...] = ()  # expected ids the grader named
    spurious: tuple[str, ...] = ()  # ids it named that the module does not have

    @property
    def expected_ids(self) -> tuple[str, ...]:
        return tuple(part.strip() for part in self.expected.split(","))

    def to_dict(self) -> dict:
        data = asdict(self)
        for name in ("diagnosed", "named", "spurious"):
            data[name] = list(getattr(self, name))
        return data


@dataclass(frozen=True)
class IdFigures:
    misconception: str
    total: int  # library modules with this mistake
    named: int  # ... where the grader named it


@dataclass(frozen=True)
class AuditSummary:
    by_id: tuple[IdFigures, ...]
    correct: int
    correct_full_marks: int
    mutants: int
    mutants_detected: int  # lost points
    spurious: int  # modules named with an id they do not have

    @property
    def named(self) -> int:
        return sum(figures.named for figures in self.by_id)

    @property
    def total(self) -> int:
        return sum(figures.total for figures in self.by_id)


def default_library(assignment: str) -> Path:
    """The packaged mutants and correct variants of ``assignment``."""
    return ASSIGNMENTS_DIR / assignment / LIBRARY_NAME


def expectation(path: Path) -> str | None:
    """What a library module says it is: catalog ids, ``correct`` or ``uncatalogued``; None: not in the library."""
    match = _EXPECT.search(path.read_text(encoding="utf-8", errors="replace")[:500])
    return ", ".join(part.strip() for part in match.group(1).split(",")) if match else None


def known_miss(path: Path) -> str | None:
    """Why no rule names a library mutant yet, from its ``# known-miss:`` line; None: it must be named."""
    match = _KNOWN_MISS.search(path.read_text(encoding="utf-8", errors="replace")[:2000])
    return match.group(1).strip() if match else None


def library_modules(folder: Path) -> list[tuple[Path, str]]:
    """Every module under ``folder`` that declares an expectation, with it, sorted by path."""
    found = [(path, expectation(path)) for path in sorted(folder.rglob("*.py"))]
    return [(path, expected) for path, expected in found if expected is not None]


def audit(*, library: Path | None = None, assignment: str = DEFAULT_ASSIGNMENT,
          visibility: str = "all", seed: int = 1) -> list[AuditFinding]:
    """Grade every module of ``library`` (by default the packaged one) that declares an expectation, and judge it."""
    findings = []
    for path, expected in library_modules(library if library is not None else default_library(assignment)):
        result = grade_submission(path=path, assignment=assignment, visibility=visibility, seed=seed)
        wanted = set(expected.split(", ")) - {CORRECT, UNCATALOGUED}
        named = tuple(sorted(wanted & set(result.misconceptions)))
        spurious = tuple(sorted(set(result.misconceptions) - wanted))
        verdict = _verdict(expected, result, wanted, named, spurious)
        reason = _reason(verdict, result, wanted, named)
        why = known_miss(path) if expected not in (CORRECT, UNCATALOGUED) else None
        if why is not None and verdict == "unnamed":
            verdict, reason = "known-miss", f"known miss ({why}): {reason}"
        elif why is not None and verdict == "ok":
            verdict, reason = "stale-known-miss", "every id is named now: take its known-miss line out"
        findings.append(AuditFinding(str(path), expected, result.score, result.max_score, result.misconceptions,
                                     verdict, reason, named, spurious))
    return findings


def _verdict(expected: str, result, wanted: set, named: tuple, spurious: tuple) -> str:
    if result.status != "graded":
        return "load-error"
    if expected == CORRECT:
        return "ok" if result.score == result.max_score and not result.misconceptions else "loses-points"
    if result.score == result.max_score:
        return "survives"
    if spurious:
        return "misdiagnosed"
    return "ok" if set(named) == wanted else "unnamed"


def _reason(verdict: str, result, wanted: set, named: tuple) -> str:
    if verdict == "ok":
        return ""
    if verdict == "load-error":
        return " ".join((result.error or "it could not be loaded").split())
    if verdict == "survives":
        return "every check passed"
    lost = [test.name for test in result.tests if test.outcome != "passed"]
    found = ", ".join(result.misconceptions) or "no catalogued mistake"
    missing = sorted(wanted - set(named))
    unnamed = f"; not named: {', '.join(missing)}" if missing else ""
    return (f"diagnosed as {found}{unnamed}; lost {len(lost)} checks "
            f"({', '.join(lost[:3])}{', ...' if len(lost) > 3 else ''})")


def summarize(findings: list[AuditFinding]) -> AuditSummary:
    """Per catalog id, how many library mutants have it and how many of those were named."""
    total, named = Counter(), Counter()
    for finding in findings:
        for misconception in finding.expected_ids:
            if misconception in (CORRECT, UNCATALOGUED):
                continue
            total[misconception] += 1
            named[misconception] += misconception in finding.named
    correct = [finding for finding in findings if finding.expected == CORRECT]
    mutants = [finding for finding in findings if finding.expected != CORRECT and finding.verdict != "load-error"]
    return AuditSummary(
        by_id=tuple(IdFigures(misconception, total[misconception], named[misconception]) for misconception in sorted(total)),
        correct=len(correct), correct_full_marks=sum(finding.verdict == "ok" for finding in correct),
        mutants=len(mutants), mutants_detected=sum(finding.score < finding.max_score for finding in mutants),
        spurious=sum(bool(finding.spurious) for finding in findings),
    )
