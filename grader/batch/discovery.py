"""Find the submissions of a class folder, one per student, each under an id of its own.

Accepted layouts (DESIGN.md, ``mha grade``), side by side in one folder:

    SUBMISSIONS/alice.py
    SUBMISSIONS/bob.ipynb
    SUBMISSIONS/carol/any/depth/multihead_attention.py
    SUBMISSIONS/dave/multihead_attention/work.ipynb     (nbgrader: submitted/<student>/<assignment>/)

Inside a student's folder the candidates are the files named after the
assignment, else those under a folder named after it, else every
``.py``/``.ipynb``; among several, ``grader.batch.choosing`` grades the one
the student worked on (changed from the stub, implementing more functions,
saved last) and the feedback names the others, set aside. Two entries with
the same stem (``mia.py`` and ``mia.ipynb``, or a folder ``mia/`` beside
``mia.py``) are one student's candidates, chosen by the same rule: a file
dropped beside a classmate's entry never makes it an error. Hidden entries (``.name``), editor leftovers (``name~``,
``#name#``, ``~$name``) and tool folders (``__pycache__``,
``.ipynb_checkpoints``, ``__MACOSX``) are not students and are not looked into.

Nothing the grader did not get from the student is graded or read: an
entry that is a symbolic link, lies behind one, resolves outside
SUBMISSIONS, or is (or holds) a file with more than one hard link (another
file's content under a second name, perhaps one only the grader can read)
is kept as a refusal, so the student gets a ``status: error`` result saying
why. Only regular files are candidates (a FIFO or a device is refused, never
opened), no larger than the submission limit. Folders are walked without
recursion, at most ``MAX_DEPTH`` levels deep and ``MAX_FOLDER_ENTRIES``
entries in all: past either, that one student gets an error saying so.
Each file is recorded with its identity (``grader.batch.opening.Found``), so
what a lane grades is what was found here, or nothing.

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

from grader.batch.choosing import Choice, choose_graded
from grader.batch.opening import MAX_ANSWERS_BYTES, Found, found_at, too_large
from grader.content.messages import Message
from grader.practice import ANSWERS_SUFFIX, is_answers_file
from grader.sandbox.source import MAX_SOURCE_BYTES
from grader.render.text_safety import REPLACEMENT, clean_name

SUFFIXES = (".py", ".ipynb")
SKIPPED_FOLDERS = {"__pycache__", ".ipynb_checkpoints", "__MACOSX", ".git"}
SKIPPED_FILES = {"Thumbs.db", "desktop.ini"}
MAX_DEPTH = 16  # folder levels inside a student's folder; nbgrader's layout needs 2
MAX_FOLDER_ENTRIES = 5000  # files and folders looked at in one student's folder (a release clone holds ~300)
ID_MARK = "~"  # between a cleaned name and the hash that tells look-alike names apart


@dataclass(frozen=True)
class Submission:
    """One student's entry: a file to grade, or the reason it is refused."""

    student: str
    path: Path | None
    refusal: Message | None = None  # why the entry cannot be graded, rendered in the run's language
    answers: Found | Message | None = None  # the quiz answers file beside the code, or why it cannot be read
    entry: str = ""  # the entry's name in SUBMISSIONS, as it may be shown
    notes: tuple[Message, ...] = ()  # about the entry's name and the file chosen, for the student's feedback
    found: Found | None = None  # the file to grade, as discovery saw it (``path`` is where it is)
    set_aside: tuple[str, ...] = ()  # the student's other candidates, as results show them

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
    answers: dict[str, Found | Message] = {}  # raw stem -> answers file, or why it cannot be read
    ignored = []
    for entry in sorted(os.scandir(root), key=lambda item: item.name):
        name = entry.name
        shown = clean_name(name)
        if is_skipped(name):
            continue
        path = Path(entry.path)
        if is_answers_file(name) and name != "answers.toml" and not entry.is_dir(follow_symlinks=False):
            answers[name[: -len(ANSWERS_SUFFIX)]] = _answers_at(root, path)
        elif entry.is_symlink():
            stem = path.stem if path.suffix in SUFFIXES else name
            found[stem].append(Submission(stem, None, Message("file_symlink", {"name": shown}), entry=shown))
        elif entry.is_dir(follow_symlinks=False):
            found[name].append(_from_folder(name, path, root, real_root, assignment))
        elif path.suffix in SUFFIXES:
            found[path.stem].append(_checked(path.stem, path, root, real_root, entry=shown))
        else:
            ignored.append(shown)
    ignored += [clean_name(stem + ANSWERS_SUFFIX) for stem in answers if stem not in found]  # whose are they?
    submissions = [_with_answers(_one_of(stem, entries, root, assignment), answers.get(stem))
                   for stem, entries in found.items()]
    return sorted(_distinct_ids(submissions), key=lambda entry: entry.student), ignored


def discover_file(path: Path, *, assignment: str) -> tuple[list[Submission], list[str]]:
    """One file graded alone, as a class of one: ``mha grade alice.py --out DIR``.

    The student id is the file's stem, as in a class folder, and a quiz
    answers file beside it (``alice.answers.toml``) counts as it would there.
    The same refusals apply: a link, a file with several hard links, not a regular file.
    """
    path = Path(path)
    shown = clean_name(path.name)
    if path.is_symlink():
        entry = Submission(path.stem, None, Message("file_symlink", {"name": shown}), entry=shown)
    else:
        entry = _checked(path.stem, path, path.parent, path.parent.resolve(), entry=shown)
        sheet = path.with_name(path.stem + ANSWERS_SUFFIX)
        if sheet.exists() or sheet.is_symlink():
            entry = _with_answers(entry, _answers_at(path.parent, sheet))
    return _distinct_ids([entry]), []


def _one_of(stem: str, entries: list[Submission], root: Path, assignment: str) -> Submission:
    """A student's entry among those sharing ``stem``: the file the student worked on, the others set aside."""
    if len(entries) == 1:
        return entries[0]
    usable = [entry for entry in entries if entry.refusal is None]
    if not usable:
        names = ", ".join(sorted(entry.entry for entry in entries))
        return replace(entries[0], notes=entries[0].notes + (Message(
            "entry_several", {"student": clean_name(stem), "count": len(entries), "names": names}),))
    choice = choose_graded(candidates=[entry.path for entry in usable], assignment=assignment)
    chosen = next(entry for entry in usable if entry.path == choice.chosen)
    others = [_shown(root, path) for path in choice.set_aside]
    others += [entry.entry for entry in entries if entry.refusal is not None]
    note = Message("note_graded_file", {"graded": chosen.shown_path(root), "others": ", ".join(others),
                                        "reason": Message(choice.reason if choice.set_aside else "choice_unreadable",
                                                          {})})
    return replace(chosen, notes=chosen.notes + (note,), set_aside=chosen.set_aside + tuple(others))


def with_entry(result, entry: Submission, *, file: str, lang: str):
    """``result`` (a ``SubmissionResult``) naming the file graded, the candidates set aside and the entry's notes."""
    from grader.content.messages import parts_of

    notes = tuple(note.render(lang) for note in entry.notes)
    note_messages = result.note_messages if len(result.note_messages) == len(result.notes) else \
        tuple(({"plain": text},) for text in result.notes)
    return replace(result, file=file, set_aside=entry.set_aside, notes=notes + result.notes,
                   note_messages=tuple(parts_of(note) for note in entry.notes) + note_messages)


def _answers_at(root: Path, path: Path) -> Found | Message:
    """The quiz answers file at ``path``, recorded like a submission, or why it cannot be read (costing the quiz)."""
    shown = clean_name(path.name)
    try:
        info = path.lstat()
    except OSError:
        return Message("file_missing", {"name": shown})
    if stat.S_ISLNK(info.st_mode):
        return Message("file_symlink", {"name": shown})
    if not stat.S_ISREG(info.st_mode):
        return Message("file_not_regular", {"name": shown})
    if info.st_nlink > 1:
        return Message("file_hard_link", {"name": shown, "links": info.st_nlink})
    if info.st_size > MAX_ANSWERS_BYTES:
        return too_large(shown, info.st_size, MAX_ANSWERS_BYTES)
    return found_at(root, path, info)


def _with_answers(entry: Submission, answers: Found | Message | None) -> Submission:
    """``entry`` with its answers file: a bad one costs the quiz (graded with the code), never the code."""
    return entry if answers is None else replace(entry, answers=answers)


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
    looked_at = 0
    while pending and walk.problem is None:
        here, depth = pending.pop()
        try:
            with os.scandir(here) as listing:
                entries = []
                for item in listing:  # read lazily: a folder of 150,000 files costs the cap, not its size
                    looked_at += 1
                    if looked_at > MAX_FOLDER_ENTRIES:
                        walk.problem = Message("folder_too_many", {"student": student, "limit": f"{MAX_FOLDER_ENTRIES:,}"})
                        return walk
                    entries.append(item)
            entries.sort(key=lambda item: item.name)
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
    return _from_folder(student, folder, folder, folder.resolve(), assignment)


def _from_folder(stem: str, folder: Path, root: Path, real_root: Path, assignment: str) -> Submission:
    student = clean_name(stem)
    walk = _walk(student, folder)
    if walk.problem is not None:
        return Submission(stem, None, walk.problem, entry=student)
    if not walk.files:
        if walk.links:
            return Submission(stem, None, Message("folder_no_code_links", {
                "student": student, "link": _inside(folder, sorted(walk.links)[0])}), entry=student)
        return Submission(stem, None, Message("folder_no_code", {"student": student}), entry=student)
    choice = _choose(walk.files, assignment)
    if choice is None:
        listed = ", ".join(_inside(folder, path) for path in sorted(walk.files)[:5])
        return Submission(stem, None, Message("folder_ambiguous", {
            "student": student, "listed": listed, "assignment": assignment}), entry=student)
    checked = _checked(stem, choice.chosen, root, real_root, entry=student)
    if checked.refusal is not None:
        return checked
    note = choice.note(lambda path: _shown(root, path))
    if note is not None:
        checked = replace(checked, notes=(note,), set_aside=tuple(_shown(root, path) for path in choice.set_aside))
    if len(walk.answers) == 1:
        checked = replace(checked, answers=_answers_at(root, walk.answers[0]))
    return checked


def _choose(candidates: list[Path], assignment: str) -> Choice | None:
    """The candidates of the first tier that has any (named after the assignment, inside a folder named after
    it, any), ordered as the layout prefers; the student's work among them (``choose_graded``)."""
    named = [path for path in candidates if path.stem.split(".")[0] == assignment]  # <a>.zh.ipynb too
    in_folder = [path for path in candidates if assignment in path.parent.parts]
    if named or in_folder:
        # a clone of the student release has exercises/<a>.py above exercises/notebooks/<a>.ipynb, and
        # nbgrader's layout a notebook beside a script: on a tie, the shallowest first, a notebook first
        tier = sorted(named or in_folder, key=lambda path: (len(path.parts), path.suffix != ".ipynb", path))
        return choose_graded(candidates=tier, assignment=assignment)
    if len(candidates) == 1:
        return Choice(candidates[0])
    choice = choose_graded(candidates=candidates, assignment=assignment)
    # any file at all: only a clear winner (the only one changed, or implementing more) is the student's work
    return choice if choice.reason in ("choice_worked", "choice_more_functions") else None


def _checked(stem: str, path: Path, root: Path, real_root: Path, *, entry: str) -> Submission:
    shown = clean_name(path.name)
    try:
        info = path.lstat()
    except OSError:
        return Submission(stem, None, Message("file_missing", {"name": shown}), entry=entry)
    if stat.S_ISLNK(info.st_mode):
        return Submission(stem, None, Message("file_symlink", {"name": shown}), entry=entry)
    if not stat.S_ISREG(info.st_mode):
        return Submission(stem, None, Message("file_not_regular", {"name": shown}), entry=entry)
    if info.st_nlink > 1:
        return Submission(stem, None, Message("file_hard_link", {"name": shown, "links": info.st_nlink}),
                          entry=entry)
    if info.st_size > MAX_SOURCE_BYTES:
        return Submission(stem, None, too_large(shown, info.st_size, MAX_SOURCE_BYTES), entry=entry)
    if not path.resolve().is_relative_to(real_root):
        return Submission(stem, None, Message("file_outside", {"name": shown}), entry=entry)
    return Submission(stem, path, entry=entry, found=found_at(root, path, info))


def _shown(root: Path, path: Path) -> str:
    return "/".join(clean_name(part) for part in Path(path).relative_to(root).parts)


def _identity(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_dev, info.st_ino


def _inside(folder: Path, path: Path) -> str:
    return "/".join(clean_name(part) for part in path.relative_to(folder).parts)


def _unreadable(student: str, folder: Path, path: Path, error: OSError) -> Message:
    name = _inside(folder, path) if path != folder else "."
    return Message("folder_unreadable", {"student": student, "name": name, "reason": error.strerror or error})
