"""Find the submissions of a class folder, one per student, each under an id of its own.

Accepted layouts (DESIGN.md, ``mha grade``), side by side in one folder:

    SUBMISSIONS/alice.py
    SUBMISSIONS/bob.ipynb
    SUBMISSIONS/carol/any/depth/<assignment>.py
    SUBMISSIONS/dave/<assignment>/work.ipynb     (nbgrader: submitted/<student>/<assignment>/)

Inside a student's folder the file is the one named after the assignment
(the shallowest of several; a notebook beside a script of that name),
else the only ``.py``/``.ipynb`` under a folder named after it, else the only
one at all. Hidden entries (``.name``), editor leftovers (``name~``,
``#name#``, ``~$name``) and tool folders (``__pycache__``,
``.ipynb_checkpoints``, ``__MACOSX``) are not students and are not looked into.

Nothing the grader did not get from the student is graded or read: an
entry that is a symbolic link, lies behind one, resolves outside
SUBMISSIONS, or is (or holds) a file with more than one hard link (another
file's content under a second name, perhaps one only the grader can read)
is kept as a refusal, so the student gets a ``status: error`` result saying
why. Folders are walked without recursion, at most ``MAX_DEPTH`` levels
deep.

Student ids come from the entry names through ``clean_name`` (undecodable
bytes and control characters shown as U+FFFD). Entries whose names differ
but look the same once cleaned each get a distinct id, the cleaned name plus
``~`` and a hash of the raw name (deterministic, whatever else is in the
class), and a note in their feedback saying so. Two entries with the very
same stem (``mia.py`` and ``mia.ipynb``) are one student who submitted twice.
"""

from __future__ import annotations

import hashlib
import os
import stat
import unicodedata
from collections import defaultdict
from dataclasses import dataclass, replace
from pathlib import Path

from grader.content.messages import Message
from grader.practice import ANSWERS_SUFFIX, is_answers_file
from grader.render.text_safety import REPLACEMENT, clean_name

SUFFIXES = (".py", ".ipynb")
SKIPPED_FOLDERS = {"__pycache__", ".ipynb_checkpoints", "__MACOSX", ".git"}
SKIPPED_FILES = {"Thumbs.db", "desktop.ini"}
MAX_DEPTH = 16  # folder levels inside a student's folder; nbgrader's layout needs 2
ID_MARK = "~"  # between a cleaned name and the hash that tells look-alike names apart


@dataclass(frozen=True)
class Submission:
    """One student's entry: a file to grade, or the reason it is refused."""

    student: str
    path: Path | None
    refusal: Message | None = None  # why the entry cannot be graded, rendered in the run's language
    answers: Path | None = None  # quiz answers graded with the code (grader.practice.homework)
    entry: str = ""  # the entry's name in SUBMISSIONS, as it may be shown
    notes: tuple[Message, ...] = ()  # about the entry's name, for the student's feedback

    def shown_path(self, root: Path) -> str:
        """Where the graded file is inside SUBMISSIONS, as results show it (the entry when none is graded)."""
        if self.path is None:
            return self.entry or self.student
        return "/".join(clean_name(part) for part in self.path.relative_to(root).parts)


def is_skipped(name: str) -> bool:
    """Hidden files, editor leftovers and tool folders: never a student, never looked into."""
    return (name.startswith((".", "~$", "#")) or name.endswith("~") or name in SKIPPED_FOLDERS
            or name in SKIPPED_FILES)


def discover_submissions(root: Path, *, assignment: str) -> tuple[list[Submission], list[str]]:
    """Every student's submission under ``root``, sorted by student; and the entries ignored."""
    root = Path(root)
    real_root = root.resolve()
    found: dict[str, list[Submission]] = defaultdict(list)  # raw stem -> entries
    answers: dict[str, Path | Message] = {}  # raw stem -> answers file, or why it is refused
    ignored = []
    for entry in sorted(os.scandir(root), key=lambda item: item.name):
        name = entry.name
        shown = clean_name(name)
        if is_skipped(name):
            continue
        path = Path(entry.path)
        if is_answers_file(name) and name != "answers.toml" and not entry.is_dir(follow_symlinks=False):
            answers[name[: -len(ANSWERS_SUFFIX)]] = _answers_entry(entry, shown)
        elif entry.is_symlink():
            stem = path.stem if path.suffix in SUFFIXES else name
            found[stem].append(Submission(stem, None, Message("file_symlink", {"name": shown}), entry=shown))
        elif entry.is_dir(follow_symlinks=False):
            found[name].append(_from_folder(name, path, real_root, assignment))
        elif entry.is_file(follow_symlinks=False) and path.suffix in SUFFIXES:
            found[path.stem].append(_checked(path.stem, path, real_root, entry=shown))
        else:
            ignored.append(shown)
    ignored += [clean_name(stem + ANSWERS_SUFFIX) for stem in answers if stem not in found]  # whose are they?
    submissions = []
    for stem, entries in found.items():
        if len(entries) == 1:
            submissions.append(_with_answers(entries[0], answers.get(stem)))
        else:
            names = ", ".join(sorted(entry.entry for entry in entries))
            submissions.append(Submission(stem, None, Message(
                "entry_several", {"student": clean_name(stem), "count": len(entries), "names": names}), entry=names))
    return sorted(_distinct_ids(submissions), key=lambda entry: entry.student), ignored


def discover_file(path: Path, *, assignment: str) -> tuple[list[Submission], list[str]]:
    """One file graded alone, as a class of one: ``mha grade alice.py --out DIR``.

    The student id is the file's stem, as in a class folder, and a quiz
    answers file beside it (``alice.answers.toml``) counts as it would there.
    The same refusals apply: a link, a file with several hard links.
    """
    path = Path(path)
    shown = clean_name(path.name)
    if path.is_symlink():
        entry = Submission(path.stem, None, Message("file_symlink", {"name": shown}), entry=shown)
    else:
        entry = _checked(path.stem, path, path.parent.resolve(), entry=shown)
        sheet = path.with_name(path.stem + ANSWERS_SUFFIX)
        if sheet.exists() or sheet.is_symlink():
            entry = _with_answers(entry, _answers_of(sheet))
    return _distinct_ids([entry]), []


def _answers_of(path: Path) -> Path | Message:
    shown = clean_name(path.name)
    if path.is_symlink():
        return Message("file_symlink", {"name": shown})
    links = path.lstat().st_nlink
    return Message("file_hard_link", {"name": shown, "links": links}) if links > 1 else path


def _answers_entry(entry: os.DirEntry, shown: str) -> Path | Message:
    if entry.is_symlink():
        return Message("file_symlink", {"name": shown})
    links = entry.stat(follow_symlinks=False).st_nlink
    return Message("file_hard_link", {"name": shown, "links": links}) if links > 1 else Path(entry.path)


def _with_answers(entry: Submission, answers: Path | Message | None) -> Submission:
    if entry.refusal is not None or answers is None:
        return entry
    if isinstance(answers, Message):
        return replace(entry, path=None, refusal=answers)
    return replace(entry, answers=answers)


def _distinct_ids(submissions: list[Submission]) -> list[Submission]:
    """Each entry's id: its cleaned stem, made distinct from look-alike names by a hash of the raw name.

    ``student`` holds the raw stem on the way in.
    """
    by_id: dict[str, list[Submission]] = defaultdict(list)
    for entry in submissions:
        by_id[_visible(clean_name(entry.student))].append(entry)
    named: list[tuple[str, Submission]] = []  # (raw stem, entry with its id)
    for shown, entries in by_id.items():
        if len(entries) == 1:
            entry = entries[0]
            notes = entry.notes
            if _lossy(entry.student):
                notes += (Message("note_name_cleaned", {"entry": entry.entry or shown}),)
            named.append((entry.student, replace(entry, student=shown, notes=notes)))
            continue
        together = ", ".join(sorted(entry.entry or shown for entry in entries))
        for entry in entries:
            student = _hashed(shown, entry.student, 8)
            note = Message("note_id_distinct", {"entries": together, "entry": entry.entry or shown,
                                                "student": student})
            named.append((entry.student, replace(entry, student=student, notes=entry.notes + (note,))))
    return _settle(named)


def _settle(named: list[tuple[str, Submission]]) -> list[Submission]:
    """Longer hashes for the (contrived) ids that still equal another one after the first pass."""
    counts: dict[str, int] = defaultdict(int)
    for _, entry in named:
        counts[entry.student] += 1
    settled = []
    for raw_stem, entry in named:
        if counts[entry.student] > 1:
            entry = replace(entry, student=_hashed(clean_name(raw_stem), raw_stem, 32))
        settled.append(entry)
    return settled


def _hashed(shown: str, raw_stem: str, length: int) -> str:
    digest = hashlib.sha256(raw_stem.encode("utf-8", "surrogateescape")).hexdigest()[:length]
    return f"{_visible(shown)}{ID_MARK}{digest}"


def _lossy(raw_stem: str) -> bool:
    """Whether cleaning the name lost something (not only a change of Unicode normal form)."""
    return clean_name(raw_stem) != unicodedata.normalize("NFC", raw_stem)


def _visible(student: str) -> str:
    return student if student.strip() else REPLACEMENT


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


@dataclass
class _Walk:
    """What a student's folder holds, found without recursion and without following links."""

    files: list[Path]
    links: list[Path]
    answers: list[Path]
    problem: Message | None = None


def _walk(student: str, folder: Path) -> _Walk:
    walk = _Walk([], [], [])
    seen = {_identity(folder)}
    pending = [(folder, 0)]
    while pending and walk.problem is None:
        here, depth = pending.pop()
        try:
            entries = sorted(os.scandir(here), key=lambda item: item.name)
        except OSError as bad:
            walk.problem = _unreadable(student, folder, here, bad)
            break
        for entry in entries:
            path = Path(entry.path)
            if is_skipped(entry.name):
                continue
            if entry.is_symlink():
                walk.links.append(path)
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError as bad:
                walk.problem = _unreadable(student, folder, path, bad)
                break
            shown = _inside(folder, path)
            if stat.S_ISDIR(info.st_mode):
                if (info.st_dev, info.st_ino) in seen:
                    walk.problem = Message("folder_loop", {"student": student, "name": shown})
                    break
                if depth + 1 > MAX_DEPTH:
                    walk.problem = Message("folder_too_deep", {"student": student, "limit": MAX_DEPTH})
                    break
                seen.add((info.st_dev, info.st_ino))
                pending.append((path, depth + 1))
            elif stat.S_ISREG(info.st_mode):
                if info.st_nlink > 1:
                    walk.problem = Message("folder_hard_link", {"student": student, "name": shown,
                                                                "links": info.st_nlink})
                    break
                if is_answers_file(entry.name):
                    walk.answers.append(path)
                elif path.suffix in SUFFIXES:
                    walk.files.append(path)
    return walk


def submission_in_folder(student: str, folder: Path, *, assignment: str) -> Submission:
    """The one file to grade in ``folder`` (a student's folder, or a platform's upload folder), or why none is.

    The same choice and the same refusals as for a student's folder of a class.
    """
    folder = Path(folder)
    return _from_folder(student, folder, folder.resolve(), assignment)


def _from_folder(stem: str, folder: Path, real_root: Path, assignment: str) -> Submission:
    student = clean_name(stem)
    walk = _walk(student, folder)
    if walk.problem is not None:
        return Submission(stem, None, walk.problem, entry=student)
    if not walk.files:
        if walk.links:
            return Submission(stem, None, Message("folder_no_code_links", {
                "student": student, "link": _inside(folder, sorted(walk.links)[0])}), entry=student)
        return Submission(stem, None, Message("folder_no_code", {"student": student}), entry=student)
    chosen = _choose(walk.files, assignment)
    if chosen is None:
        listed = ", ".join(_inside(folder, path) for path in sorted(walk.files)[:5])
        return Submission(stem, None, Message("folder_ambiguous", {
            "student": student, "listed": listed, "assignment": assignment}), entry=student)
    checked = _checked(stem, chosen, real_root, entry=student)
    return replace(checked, answers=walk.answers[0]) if len(walk.answers) == 1 and checked.refusal is None else checked


def _choose(candidates: list[Path], assignment: str) -> Path | None:
    named = [path for path in candidates if path.stem == assignment]
    if len(named) == 1:
        return named[0]
    if len(named) > 1:
        # a clone of the student release has exercises/<a>.py above exercises/notebooks/<a>.ipynb:
        # the shallowest is the file worked on; side by side, the notebook (nbgrader's layout)
        depth = min(len(path.parts) for path in named)
        named = [path for path in named if len(path.parts) == depth]
        notebooks = [path for path in named if path.suffix == ".ipynb"]
        return named[0] if len(named) == 1 else notebooks[0] if len(notebooks) == 1 else None
    in_folder = [path for path in candidates if assignment in path.parent.parts]
    if len(in_folder) == 1:
        return in_folder[0]
    return candidates[0] if len(candidates) == 1 else None


def _checked(stem: str, path: Path, real_root: Path, *, entry: str) -> Submission:
    shown = clean_name(path.name)
    try:
        info = path.lstat()
    except OSError:
        return Submission(stem, None, Message("file_missing", {"name": shown}), entry=entry)
    if stat.S_ISLNK(info.st_mode):
        return Submission(stem, None, Message("file_symlink", {"name": shown}), entry=entry)
    if info.st_nlink > 1:
        return Submission(stem, None, Message("file_hard_link", {"name": shown, "links": info.st_nlink}),
                          entry=entry)
    if not path.resolve().is_relative_to(real_root):
        return Submission(stem, None, Message("file_outside", {"name": shown}), entry=entry)
    return Submission(stem, path, entry=entry)


def _identity(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_dev, info.st_ino


def _inside(folder: Path, path: Path) -> str:
    return "/".join(clean_name(part) for part in path.relative_to(folder).parts)


def _unreadable(student: str, folder: Path, path: Path, error: OSError) -> Message:
    name = _inside(folder, path) if path != folder else "."
    return Message("folder_unreadable", {"student": student, "name": name, "reason": error.strerror or error})
