"""One student's entry: the file to grade in it, chosen and recorded as found, or why none can be.

Shared by ``mha grade`` (``grader.batch.discovery``: a class folder), ``mha
check`` on a file or a folder, and the Gradescope bundle (an upload folder),
so the same rules hold everywhere (docs/grading-rules.md).

Inside a student's folder the candidates are the files named after the
assignment (``<a>.py``, ``<a>.ipynb``, ``<a>.zh.ipynb``), else those under a
folder named after it, else every ``.py``/``.ipynb``; among several,
``grader.entries.choosing`` grades the one the student worked on and the
feedback names the others, set aside. Hidden entries (``.name``), editor
leftovers (``name~``, ``#name#``, ``~$name``) and tool folders
(``__pycache__``, ``.ipynb_checkpoints``, ``__MACOSX``) are not looked into.

Nothing the grader did not get from the student is graded or read: a
symbolic link, or anything but a regular file is refused, and so is a file
over the size limit. A file with several hard links is read only when each of
its names is one discovery found (``LinkCensus``): then it is a file some
student handed in, graded under each name, with a note; a name elsewhere may
be that of the solutions or the course key, so such a file is set aside
beside the student's own work, or refused alone. Folders are walked
without recursion, at most ``MAX_DEPTH`` levels deep and
``MAX_FOLDER_ENTRIES`` entries in all: past either, that one student gets an
error saying so. Each file is recorded with its identity
(``grader.files.Found``), so what is graded is what was found here,
or nothing.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path

from grader.content.messages import Message
from grader.entries.choosing import Choice, choose_graded
from grader.files import MAX_ANSWERS_BYTES, MAX_SOURCE_BYTES, Found, found_at, size_params
from grader.practice import is_answers_file
from grader.render.text_safety import clean_name

SUFFIXES = (".py", ".ipynb")
SKIPPED_FOLDERS = {"__pycache__", ".ipynb_checkpoints", "__MACOSX", ".git"}
SKIPPED_FILES = {"Thumbs.db", "desktop.ini"}
MAX_DEPTH = 16  # folder levels inside a student's folder; nbgrader's layout needs 2
MAX_FOLDER_ENTRIES = 5000  # files and folders looked at in one student's folder (a release clone holds ~300)


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


@dataclass
class LinkCensus:
    """The names discovery found of each file that has several hard links (its ``st_nlink``).

    A file with more links than names found may have one outside the class
    (the solutions, the course key): it is never read. ``census.saw`` each
    candidate and answers file first; ``outside`` then tells the one from the other.
    """

    names: dict[tuple[int, int], set[str]] = field(default_factory=dict)

    def saw(self, path: Path, info: os.stat_result) -> None:
        if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            self.names.setdefault((info.st_dev, info.st_ino), set()).add(os.fspath(path))

    def saw_entry(self, entry: os.DirEntry) -> None:
        """``saw`` an entry of a listing, if it is still there."""
        info = _lstat(entry)
        if info is not None:
            self.saw(Path(entry.path), info)

    def outside(self, info: os.stat_result) -> bool:
        """Whether the file of ``info`` has a name discovery did not find."""
        return info.st_nlink > max(1, len(self.names.get((info.st_dev, info.st_ino), ())))


def _link_refusal(shown: str, info: os.stat_result, census: LinkCensus | None) -> Message | None:
    """Why a file of several hard links is not read (a name outside what was found), or None."""
    if info.st_nlink > 1 if census is None else census.outside(info):
        return Message("file_hard_link", {"name": shown, "links": info.st_nlink})
    return None


def _link_note(shown: str, info: os.stat_result) -> tuple[Message, ...]:
    """The note of a file read although it has several names (each of them in the class)."""
    return (Message("note_hard_link", {"name": shown, "links": info.st_nlink}),) if info.st_nlink > 1 else ()


def is_skipped(name: str) -> bool:
    """Hidden files, editor leftovers and tool folders: never a student, never looked into."""
    return (name.startswith((".", "~$", "#")) or name.endswith("~") or name in SKIPPED_FOLDERS
            or name in SKIPPED_FILES)



def with_entry(result, entry: Submission, *, file: str, lang: str):
    """``result`` (a ``SubmissionResult``) naming the file graded, the candidates set aside and the entry's notes."""
    from grader.content.messages import parts_of

    notes = tuple(note.render(lang) for note in entry.notes)
    note_messages = result.note_messages if len(result.note_messages) == len(result.notes) else \
        tuple(({"plain": text},) for text in result.notes)
    return replace(result, file=file, set_aside=entry.set_aside, notes=notes + result.notes,
                   note_messages=tuple(parts_of(note) for note in entry.notes) + note_messages)


def choose_for(candidates: list[Path], assignment: str) -> Choice:
    """``choose_graded`` among ``candidates`` for ``assignment``: the one rule, with the exercise's functions."""
    from grader.grading.assignment import get_assignment

    return choose_graded(candidates=candidates, assignment=assignment,
                         functions=get_assignment(assignment).functions)


def own_work(assignment: str) -> Choice:
    """The file of ``assignment`` a student works on where they opened the release: its script
    ``exercises/<a>.py`` or a notebook of it in ``exercises/notebooks/`` (``<a>.ipynb``, ``<a>.zh.ipynb``),
    chosen as ``mha grade`` chooses (``choose_graded``); the script on a tie, being the README's first path."""
    from grader.paths import student_file

    script = student_file(assignment)
    notebooks = script.parent / "notebooks"
    candidates = [path for path in (script, notebooks / f"{assignment}.ipynb",
                                    *sorted(notebooks.glob(f"{assignment}.*.ipynb"))) if path.is_file()]
    return choose_for(candidates, assignment) if candidates else Choice(script)


def choice_note(choice: Choice, shown) -> Message | None:
    """The feedback's note on ``choice`` (``shown`` turns a path into the text outputs show); None when alone."""
    if not choice.set_aside:
        return None
    return Message("note_graded_file", {"graded": shown(choice.chosen),
                                        "others": ", ".join(shown(path) for path in choice.set_aside),
                                        "reason": Message(choice.reason, {})})


def too_large(name: str, size: int, limit: int) -> Message:
    return Message("file_too_large", size_params(name, size, limit))


def file_entry(path: Path) -> Submission:
    """One file given alone (``mha check FILE``, ``mha grade FILE``): its entry, the student id its stem."""
    path = Path(path)
    shown = clean_name(path.name)
    if path.is_symlink():
        return Submission(path.stem, None, Message("file_symlink", {"name": shown}), entry=shown)
    return checked_file(path.stem, path, path.parent, path.parent.resolve(), entry=shown)


def answers_at(root: Path, path: Path, *, census: LinkCensus | None = None) -> Found | Message:
    """The quiz answers file at ``path``, recorded like a submission, or why it cannot be read (costing the quiz).

    ``census``: the names found of files with several hard links (None: no second name is accepted)."""
    shown = clean_name(path.name)
    try:
        info = path.lstat()
    except OSError:
        return Message("file_missing", {"name": shown})
    if stat.S_ISLNK(info.st_mode):
        return Message("file_symlink", {"name": shown})
    if not stat.S_ISREG(info.st_mode):
        return Message("file_not_regular", {"name": shown})
    refusal = _link_refusal(shown, info, census)
    if refusal is not None:
        return refusal
    if info.st_size > MAX_ANSWERS_BYTES:
        return too_large(shown, info.st_size, MAX_ANSWERS_BYTES)
    return found_at(root, path, info)


def with_answers(entry: Submission, answers: Found | Message | None) -> Submission:
    """``entry`` with its answers file: a bad one costs the quiz (graded with the code), never the code."""
    return entry if answers is None else replace(entry, answers=answers)


@dataclass
class FolderWalk:
    """What a student's folder holds, found without recursion and without following links."""

    files: list[Path]
    links: list[Path]
    answers: list[Path]
    problem: Message | None = None
    infos: dict[Path, os.stat_result] = field(default_factory=dict)  # of ``files``, ``answers``, hard links

    def counted(self, census: LinkCensus) -> FolderWalk:
        """This walk, its files' names given to ``census``."""
        for path, info in self.infos.items():
            census.saw(path, info)
        return self


def _lstat(entry: os.DirEntry) -> os.stat_result | None:
    try:
        return entry.stat(follow_symlinks=False)
    except OSError:
        return None  # gone since listed


def _count_link(walk: FolderWalk, path: Path, entry: os.DirEntry) -> None:
    """Record a skipped entry that is a file of several names: a name discovery found, though never read."""
    info = _lstat(entry)
    if info is not None and stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        walk.infos[path] = info


def walk_folder(stem: str, folder: Path) -> FolderWalk:
    """What the student's ``folder`` holds (``folder_entry`` decides which file is graded)."""
    return _walk(clean_name(stem), Path(folder))


def _walk(student: str, folder: Path) -> FolderWalk:
    walk = FolderWalk([], [], [])
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
                _count_link(walk, Path(entry.path), entry)  # a second name may be kept here: it is in the class
                continue
            if entry.is_symlink():
                (walk.answers if is_answers_file(entry.name) else walk.links).append(path)  # answers_at says why
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
            elif stat.S_ISREG(info.st_mode):  # a second name of a file that is not read costs nothing
                if is_answers_file(entry.name):
                    walk.answers.append(path)
                elif path.suffix in SUFFIXES:
                    walk.files.append(path)
                elif info.st_nlink == 1:
                    continue
                walk.infos[path] = info
            elif is_answers_file(entry.name):  # a FIFO, a device, a socket: answers_at says why, never opened
                walk.answers.append(path)
    return walk


def submission_in_folder(student: str, folder: Path, *, assignment: str) -> Submission:
    """The one file to grade in ``folder`` (a student's folder, or a platform's upload folder), or why none is.

    The same choice and the same refusals as for a student's folder of a class.
    """
    folder = Path(folder)
    return folder_entry(student, folder, folder, folder.resolve(), assignment)


def folder_entry(stem: str, folder: Path, root: Path, real_root: Path, assignment: str, *,
                 walk: FolderWalk | None = None, census: LinkCensus | None = None) -> Submission:
    """The entry of the student's ``folder`` (``walk``: its ``walk_folder``, if made already).

    ``census``: the names found of files with several hard links, in the whole class; by default those
    of this folder alone."""
    student = clean_name(stem)
    if walk is None:
        walk = _walk(student, folder)
    if census is None:
        census = LinkCensus()
        walk.counted(census)
    if walk.problem is not None:
        return Submission(stem, None, walk.problem, entry=student)
    linked = [path for path in walk.files if census.outside(walk.infos[path])]  # never read, not even to choose
    walk = replace(walk, files=[path for path in walk.files if path not in linked])
    if linked and not walk.files:
        first = sorted(linked)[0]
        return Submission(stem, None, Message("folder_hard_link", {
            "student": student, "name": _inside(folder, first), "links": walk.infos[first].st_nlink}), entry=student)
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
    checked = checked_file(stem, choice.chosen, root, real_root, entry=student, census=census)
    if checked.refusal is not None:
        return checked
    note = choice_note(choice, lambda path: shown_below(root, path))
    if note is not None:
        checked = replace(checked, notes=checked.notes + (note,),
                          set_aside=tuple(shown_below(root, path) for path in choice.set_aside))
    if linked:
        names = ", ".join(shown_below(root, path) for path in sorted(linked))
        checked = replace(checked, notes=checked.notes + (Message("note_hard_link_outside", {"names": names}),),
                          set_aside=checked.set_aside + tuple(shown_below(root, path) for path in sorted(linked)))
    if len(walk.answers) == 1:
        checked = replace(checked, answers=answers_at(root, walk.answers[0], census=census))
    elif walk.answers:  # which one the student meant cannot be told: the quiz is theirs to fix, the code counts
        names = [shown_below(root, path) for path in sorted(walk.answers)]
        checked = replace(checked, answers=Message("answers_several", {"name": names[0], "count": len(names),
                                                                       "names": ", ".join(names)}))
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
        return choose_for(tier, assignment)
    if len(candidates) == 1:
        return Choice(candidates[0])
    choice = choose_for(candidates, assignment)
    # any file at all: only a clear winner (the only one changed, or implementing more) is the student's work
    return choice if choice.reason in ("choice_worked", "choice_more_functions") else None


def checked_file(stem: str, path: Path, root: Path, real_root: Path, *, entry: str,
                 census: LinkCensus | None = None) -> Submission:
    """The entry of the file at ``path``, or why it is refused; ``census`` as for ``answers_at``."""
    shown = clean_name(path.name)
    try:
        info = path.lstat()
    except OSError:
        return Submission(stem, None, Message("file_missing", {"name": shown}), entry=entry)
    if stat.S_ISLNK(info.st_mode):
        return Submission(stem, None, Message("file_symlink", {"name": shown}), entry=entry)
    if not stat.S_ISREG(info.st_mode):
        return Submission(stem, None, Message("file_not_regular", {"name": shown}), entry=entry)
    refusal = _link_refusal(shown, info, census)
    if refusal is not None:
        return Submission(stem, None, refusal, entry=entry)
    if info.st_size > MAX_SOURCE_BYTES:
        return Submission(stem, None, too_large(shown, info.st_size, MAX_SOURCE_BYTES), entry=entry)
    if not path.resolve().is_relative_to(real_root):
        return Submission(stem, None, Message("file_outside", {"name": shown}), entry=entry)
    return Submission(stem, path, entry=entry, found=found_at(root, path, info), notes=_link_note(shown, info))


def shown_below(root: Path, path: Path) -> str:
    """``path`` inside ``root``, as results show it."""
    return "/".join(clean_name(part) for part in Path(path).relative_to(root).parts)


def _identity(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_dev, info.st_ino


def _inside(folder: Path, path: Path) -> str:
    return "/".join(clean_name(part) for part in path.relative_to(folder).parts)


def _unreadable(student: str, folder: Path, path: Path, error: OSError) -> Message:
    name = _inside(folder, path) if path != folder else "."
    return Message("folder_unreadable", {"student": student, "name": name, "reason": error.strerror or error})
