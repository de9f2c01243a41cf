"""Find the submissions of a class folder, one per student.

Accepted layouts (DESIGN.md, ``mha grade``), side by side in one folder:

    SUBMISSIONS/alice.py
    SUBMISSIONS/bob.ipynb
    SUBMISSIONS/carol/any/depth/multihead_attention.py
    SUBMISSIONS/dave/multihead_attention/work.ipynb     (nbgrader: submitted/<student>/<assignment>/)

Inside a student's folder the file is the one named after the assignment,
else the only ``.py``/``.ipynb`` under a folder named after it, else the only
one at all. Nothing is followed through a symbolic link: a submission that is
a link, or lies behind one, or resolves outside SUBMISSIONS is kept as a
refusal, so the student gets a ``status: error`` result saying why.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from grader.practice.homework import ANSWERS_SUFFIX, is_answers_file
from grader.content.messages import Message

SUFFIXES = (".py", ".ipynb")
SKIPPED_FOLDERS = {"__pycache__", ".ipynb_checkpoints", "__MACOSX", ".git"}


@dataclass(frozen=True)
class Submission:
    """One student's entry: a file to grade, or the reason it is refused."""

    student: str
    path: Path | None
    refusal: Message | None = None  # why the entry cannot be graded, rendered in the run's language
    answers: Path | None = None  # quiz answers graded with the code (grader.practice.homework)


def discover_submissions(root: Path, *, assignment: str) -> tuple[list[Submission], list[str]]:
    """Every student's submission under ``root``, sorted by student; and the entries ignored."""
    root = Path(root)
    real_root = root.resolve()
    found: dict[str, list[Submission]] = {}
    answers: dict[str, Path] = {}
    ignored = []
    for entry in sorted(os.scandir(root), key=lambda item: item.name):
        name = _readable(entry.name)
        if name.startswith("."):
            continue
        path = Path(entry.path)
        if entry.is_symlink():
            student = path.stem if path.suffix in SUFFIXES else name
            found.setdefault(student, []).append(
                Submission(student, None, Message("file_symlink", {"name": name})))
        elif entry.is_dir(follow_symlinks=False):
            found.setdefault(name, []).append(_from_folder(name, path, real_root, assignment))
        elif entry.is_file(follow_symlinks=False) and is_answers_file(name) and name != "answers.toml":
            answers[_readable(name[: -len(ANSWERS_SUFFIX)])] = path
        elif entry.is_file(follow_symlinks=False) and path.suffix in SUFFIXES:
            student = _readable(path.stem)
            found.setdefault(student, []).append(_checked(student, path, real_root))
        else:
            ignored.append(name)
    submissions = []
    for student, entries in sorted(found.items()):
        if len(entries) == 1:
            entry = entries[0]
            sheet = answers.get(student) or (_answers_in(root / student) if (root / student).is_dir() else None)
            submissions.append(replace(entry, answers=sheet) if sheet is not None and entry.refusal is None
                               else entry)
        else:
            names = ", ".join(sorted({e.path.name if e.path else e.student for e in entries}))
            submissions.append(Submission(student, None, Message(
                "entry_several", {"student": student, "count": len(entries), "names": names})))
    return submissions, ignored


def _answers_in(folder: Path) -> Path | None:
    """The quiz answers file inside a student's folder, if there is exactly one (links are not followed)."""
    found = [Path(directory) / name for directory, _, files in os.walk(folder, followlinks=False)
             for name in files if is_answers_file(name) and not (Path(directory) / name).is_symlink()]
    return found[0] if len(found) == 1 else None


def select_shard(submissions: list[Submission], shard: tuple[int, int] | None) -> list[Submission]:
    """Every N-th submission starting at the K-th (``shard`` is (K, N), K from 1)."""
    if shard is None:
        return submissions
    index, count = shard
    return submissions[index - 1::count]


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"2/4"`` -> (2, 4); raises ValueError with the reason."""
    if not text:
        return None
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard expects K/N such as 1/4, got {text!r}") from None
    if not 1 <= index <= count:
        raise ValueError(f"--shard {text}: K must be between 1 and N")
    return index, count


def _from_folder(student: str, folder: Path, real_root: Path, assignment: str) -> Submission:
    candidates, links = [], []
    for directory, subfolders, files in os.walk(folder, followlinks=False):
        here = Path(directory)
        kept = []
        for sub in subfolders:
            if sub in SKIPPED_FOLDERS or sub.startswith("."):
                continue
            (links if (here / sub).is_symlink() else kept).append(here / sub)
        subfolders[:] = [path.name for path in kept]
        for name in files:
            path = here / name
            if path.suffix in SUFFIXES and not name.startswith("."):
                candidates.append(path)
    if not candidates:
        if links:
            return Submission(student, None, Message("folder_no_code_links", {
                "student": student, "link": str(links[0].relative_to(folder))}))
        return Submission(student, None, Message("folder_no_code", {"student": student}))
    chosen = _choose(candidates, assignment)
    if chosen is None:
        listed = ", ".join(str(path.relative_to(folder)) for path in sorted(candidates)[:5])
        return Submission(student, None, Message("folder_ambiguous", {
            "student": student, "listed": listed, "assignment": assignment}))
    return _checked(student, chosen, real_root)


def _choose(candidates: list[Path], assignment: str) -> Path | None:
    named = [path for path in candidates if path.stem == assignment]
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        notebooks = [path for path in named if path.suffix == ".ipynb"]
        return None if len(notebooks) != 1 else notebooks[0]
    in_folder = [path for path in candidates if assignment in path.parent.parts]
    if len(in_folder) == 1:
        return in_folder[0]
    return candidates[0] if len(candidates) == 1 else None


def _checked(student: str, path: Path, real_root: Path) -> Submission:
    if path.is_symlink():
        return Submission(student, None, Message("file_symlink", {"name": path.name}))
    resolved = path.resolve()
    if not resolved.is_relative_to(real_root):
        return Submission(student, None, Message("file_outside", {"name": path.name}))
    return Submission(student, path)


def _readable(name: str) -> str:
    """A file name as text, even when its bytes are not UTF-8."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
