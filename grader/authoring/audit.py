"""``mha audit``: do the suites still tell every known mistake apart?

The mutant library ships with the package: ``grader/authoring/mutants/
<assignment>/``, realistic modules in ``mistakes/`` and correct ones written
in other styles in ``correct/`` (the folders only sort them). Each module
starts with ``# expect: <catalog id>`` (or ``# expect: correct``), the one
source of what it should be diagnosed as. Every mutant must lose points and
be diagnosed with its own id; every correct variant must keep full marks with
no misconception; a module that does not load is a finding that says why.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path

from grader.grading.grade import grade_submission
from grader.paths import DEFAULT_ASSIGNMENT, PACKAGE_DIR

LIBRARY = PACKAGE_DIR / "authoring" / "mutants"
_EXPECT = re.compile(r"^#\s*expect:\s*([\w-]+)", re.MULTILINE)


@dataclass(frozen=True)
class AuditFinding:
    path: str
    expected: str  # a catalog id, or "correct"
    score: float
    max_score: float
    diagnosed: tuple[str, ...]
    verdict: str  # "ok", "survives", "misdiagnosed", "loses-points", "load-error"
    reason: str = ""  # why it is not ok: the load error, the checks lost, the ids found

    def to_dict(self) -> dict:
        data = asdict(self)
        data["diagnosed"] = list(self.diagnosed)
        return data


def default_library(assignment: str) -> Path:
    """The packaged mutants and correct variants of ``assignment``."""
    return LIBRARY / assignment


def expectation(path: Path) -> str | None:
    """What a library module says it is: a catalog id, ``correct``, or None (not part of the library)."""
    match = _EXPECT.search(path.read_text(encoding="utf-8", errors="replace")[:500])
    return match.group(1) if match else None


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
        verdict = _verdict(expected, result)
        findings.append(AuditFinding(str(path), expected, result.score, result.max_score, result.misconceptions,
                                     verdict, _reason(verdict, result)))
    return findings


def _verdict(expected: str, result) -> str:
    if result.status != "graded":
        return "load-error"
    if expected == "correct":
        return "ok" if result.score == result.max_score and not result.misconceptions else "loses-points"
    if result.score == result.max_score:
        return "survives"
    return "ok" if result.misconceptions == (expected,) else "misdiagnosed"


def _reason(verdict: str, result) -> str:
    if verdict == "ok":
        return ""
    if verdict == "load-error":
        return " ".join((result.error or "it could not be loaded").split())
    if verdict == "survives":
        return "every check passed"
    lost = [test.name for test in result.tests if test.outcome != "passed"]
    found = ", ".join(result.misconceptions) or "no catalogued mistake"
    return f"diagnosed as {found}; lost {len(lost)} checks ({', '.join(lost[:3])}{', ...' if len(lost) > 3 else ''})"
