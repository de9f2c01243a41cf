"""``mha audit``: do the suites still tell every known mistake apart?

Each module of the mutant library starts with ``# expect: <catalog id>`` (or
``# expect: correct``). Every mutant must lose points and be diagnosed with
its own id; every correct variant must keep full marks with no misconception.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from grader.grading.grade import grade_submission
from grader.paths import PROJECT_DIR

DEFAULT_LIBRARY = PROJECT_DIR / "tests" / "fixtures"


def default_libraries(assignment: str) -> list[Path]:
    """The project's own mutants and correct variants of ``assignment``."""
    if assignment == "multihead_attention":
        return [DEFAULT_LIBRARY / "mutants", DEFAULT_LIBRARY / "mutants_styles", DEFAULT_LIBRARY / "correct"]
    return [DEFAULT_LIBRARY / assignment]
_EXPECT = re.compile(r"^#\s*expect:\s*([\w-]+)", re.MULTILINE)


@dataclass(frozen=True)
class AuditFinding:
    path: str
    expected: str  # a catalog id, or "correct"
    score: float
    max_score: float
    diagnosed: tuple[str, ...]
    verdict: str  # "ok", "survives", "misdiagnosed", "loses-points", "load-error"


def expectation(path: Path) -> str | None:
    match = _EXPECT.search(path.read_text(encoding="utf-8", errors="replace")[:500])
    return match.group(1) if match else None


def audit(*, library: Path | None = None, assignment: str = "multihead_attention",
          visibility: str = "all", seed: int = 1) -> list[AuditFinding]:
    """Grade every module of ``library`` that declares an expectation, and judge it."""
    folders = [library] if library is not None else default_libraries(assignment)
    findings = []
    for path in sorted(path for folder in folders if folder.is_dir() for path in folder.rglob("*.py")):
        expected = expectation(path)
        if expected is None:
            continue
        result = grade_submission(path=path, assignment=assignment, visibility=visibility, seed=seed)
        findings.append(AuditFinding(str(path), expected, result.score, result.max_score, result.misconceptions,
                                     _verdict(expected, result)))
    return findings


def _verdict(expected: str, result) -> str:
    if result.status != "graded":
        return "load-error"
    if expected == "correct":
        return "ok" if result.score == result.max_score and not result.misconceptions else "loses-points"
    if result.score == result.max_score:
        return "survives"
    return "ok" if result.misconceptions == (expected,) else "misdiagnosed"
