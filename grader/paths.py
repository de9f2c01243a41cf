"""Where the project's parts live: exercises, solutions, exercise folders, content.

In a checkout (or an editable install) the project folder sits above the
``grader`` package. ``MHA_SOLUTIONS`` may point elsewhere, e.g. to an
instructor's private copy of the solutions beside a student release. Code
that grades from a folder of its own (the Gradescope bundle) says so with
``overridden(Overrides(...))`` for the time it grades, not through the
process's environment.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_DIR = PACKAGE_DIR.parent
CONTENT_DIR = PACKAGE_DIR / "content"
QUESTIONS_DIR = CONTENT_DIR / "questions"  # the question bank, one TOML file per topic
# One folder per exercise: ``assignments/<name>/`` (its spec, cases, suites, texts, mutant library).
ASSIGNMENTS_DIR = PACKAGE_DIR / "assignments"
DEFAULT_ASSIGNMENT = "multihead_attention"


@dataclass(frozen=True)
class Overrides:
    """Where one grading finds its parts instead of the environment's choice (None: as the environment says)."""

    solutions: Path | None = None  # the folder of reference solutions
    config_dir: Path | None = None  # the folder of the course key file
    course_key: str | None = None  # the course key itself


_OVERRIDES: contextvars.ContextVar[Overrides] = contextvars.ContextVar("mha_path_overrides", default=Overrides())


def overrides() -> Overrides:
    """The overrides in force here (none unless inside ``overridden``)."""
    return _OVERRIDES.get()


@contextlib.contextmanager
def overridden(chosen: Overrides) -> Iterator[Overrides]:
    """Use ``chosen`` for what runs inside the ``with`` (in this thread of execution only), then what was before."""
    token = _OVERRIDES.set(chosen)
    try:
        yield chosen
    finally:
        _OVERRIDES.reset(token)


def exercises_dir() -> Path:
    """The folder of student stubs (in a checkout: ``exercises/``)."""
    return Path(os.environ.get("MHA_EXERCISES", PROJECT_DIR / "exercises"))


def solutions_dir() -> Path | None:
    """The folder of reference solutions, or None where they are not installed."""
    folder = overrides().solutions or Path(os.environ.get("MHA_SOLUTIONS", PROJECT_DIR / "solutions"))
    return folder if folder.is_dir() else None


def solution_path(assignment: str = DEFAULT_ASSIGNMENT) -> Path | None:
    """The reference module of ``assignment``, or None where solutions are absent."""
    folder = solutions_dir()
    if folder is None:
        return None
    path = folder / f"{assignment}.py"
    return path if path.is_file() else None


def exercise_path(assignment: str = DEFAULT_ASSIGNMENT) -> Path:
    """The stub module a student fills in for ``assignment``."""
    return exercises_dir() / f"{assignment}.py"


def student_file(assignment: str = DEFAULT_ASSIGNMENT) -> Path:
    """The file a student's command works on by default: ``exercises/<assignment>.py`` in the first of
    ``student_folders`` that holds it, else the stub of the checkout (which may not exist: see
    ``student_folders`` for where it was looked for)."""
    local = Path("exercises") / f"{assignment}.py"
    if local.exists():
        return local
    for folder in student_folders()[1:]:
        candidate = folder / "exercises" / f"{assignment}.py"
        if candidate.is_file():
            return candidate
    return exercise_path(assignment)


def student_folders() -> list[Path]:
    """Where a student's ``exercises/`` folder is looked for: the current folder (where a student release is
    opened), the two above it (a notebook runs in ``exercises/notebooks/``), and the folder the package was
    installed from (``pip install .`` in the release: a check typed in another terminal, in another folder)."""
    here = Path.cwd()
    folders = [here, *list(here.parents)[:2]]
    installed = installed_from()
    if installed is not None and installed not in folders:
        folders.append(installed)
    return folders


def installed_from() -> Path | None:
    """The local folder pip installed this package from, as its ``direct_url.json`` (PEP 610) records it; None
    in a checkout, for a package from an index or a wheel file, or where it is not recorded.

    Read beside the package (``site-packages/mha_lab-*.dist-info``) rather than through importlib.metadata,
    whose import alone costs a check more than the rest of this lookup."""
    import json

    for record in sorted(PACKAGE_DIR.parent.glob("mha_lab-*.dist-info")):
        try:
            recorded = json.loads((record / "direct_url.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        url = recorded.get("url") if isinstance(recorded, dict) and "dir_info" in recorded else None
        try:
            path = file_url_path(url) if isinstance(url, str) else None
        except UnicodeDecodeError:
            path = None
        if path is not None and Path(path).is_dir():
            return Path(path)
    return None


def file_url_path(url: str, *, windows: bool = os.name == "nt") -> str | None:
    """The local path of a ``file://`` URL, percent-escapes decoded (a folder named 作业), or None for another
    URL; on Windows without the slash before the drive (``file:///C:/Users/...`` is ``C:/Users/...``)."""
    from urllib.parse import unquote, urlsplit

    parts = urlsplit(url)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost") or not parts.path:
        return None
    path = unquote(parts.path, errors="strict")
    return path[1:] if windows and len(path) > 2 and path[0] == "/" and path[2] == ":" else path


def default_assignment() -> str:
    """The exercise a command works on when none is named: in a student release, the one it hands out (the
    one whose stub ships in the package, ``released_stub``), else the core exercise."""
    shipped = sorted((CONTENT_DIR / "stubs").glob("*.py")) if (CONTENT_DIR / "stubs").is_dir() else []
    return shipped[0].stem if len(shipped) == 1 else DEFAULT_ASSIGNMENT


def released_stub(assignment: str = DEFAULT_ASSIGNMENT) -> Path:
    """The untouched stub of ``assignment``: the copy a student release ships inside the package (the
    student's own ``exercises/`` file changes as they work), else the checkout's."""
    shipped = CONTENT_DIR / "stubs" / f"{assignment}.py"
    return shipped if shipped.is_file() else exercise_path(assignment)
