"""Find the submissions of a class folder, one per student, each under an id of its own.

Accepted layouts (DESIGN.md, ``mha grade``), side by side in one folder:

    SUBMISSIONS/alice.py
    SUBMISSIONS/bob.ipynb
    SUBMISSIONS/carol/any/depth/<assignment>.py
    SUBMISSIONS/dave/<assignment>/work.ipynb     (nbgrader: submitted/<student>/<assignment>/)

What one entry holds, and which of its files is graded, is
``grader.entries.entry``'s (the same for ``mha check`` and the Gradescope
bundle). Entries with the same stem (``mia.py`` and ``mia.ipynb``, or a
folder ``mia/`` beside ``mia.py``) are one student's candidates, chosen by
the same rule (``grader.entries.choosing``): a file dropped beside a
classmate's entry never makes it an error, and neither does a second name
(a hard link) given to a classmate's file: a file whose every name is in the
class is graded under each. An entry that is a symbolic link is refused, so the student gets a ``status: error`` result saying why; a
quiz answers file (``<student>.answers.toml``) is recorded with its student's
entry, and a bad one costs only the quiz.

Student ids come from the entry names through ``clean_name`` (undecodable
bytes and control characters shown as U+FFFD). Entries whose names differ
but look the same once cleaned each get a distinct id, the cleaned name plus
``~`` and a hash of the raw name (deterministic, whatever else is in the
class), and a note in their feedback saying so.
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

from grader.content.messages import Message
from grader.content.usage import usage_error
from grader.entries.entry import (SUFFIXES, FolderWalk, LinkCensus, Submission, answers_at, checked_file, choose_for,
                                  file_entry, folder_entry, is_skipped, shown_below, walk_folder, with_answers)
from grader.files import Found
from grader.practice import ANSWERS_SUFFIX, is_answers_file
from grader.render.text_safety import REPLACEMENT, clean_name

ID_MARK = "~"  # between a cleaned name and the hash that tells look-alike names apart


def discover_submissions(root: Path, *, assignment: str) -> tuple[list[Submission], list[str]]:
    """Every student's submission under ``root``, sorted by student; and the entries ignored.

    Two passes: the first lists the class (each student's folder walked once) and counts the names found of
    every file with several hard links (``LinkCensus``); the second decides each entry, so a second name
    of a classmate's file is told from a second name of a file outside the class.
    """
    root = Path(root)
    real_root = root.resolve()
    census = LinkCensus()
    listed: list[tuple[str, Path, os.DirEntry, FolderWalk | None]] = []  # (kind, path, entry, its folder's walk)
    for entry in sorted(os.scandir(root), key=lambda item: item.name):
        name = entry.name
        path = Path(entry.path)
        folder = entry.is_dir(follow_symlinks=False)
        if is_skipped(name):  # never a student, but it may hold a second name of a student's file
            if folder:
                walk_folder(name, path).counted(census)
            else:
                census.saw_entry(entry)
            continue
        if folder and not is_answers_file(name):
            listed.append(("folder", path, entry, walk_folder(name, path).counted(census)))
            continue
        if not folder:
            census.saw_entry(entry)
        if is_answers_file(name) and name != "answers.toml":  # a folder or a link too: costs the quiz alone
            kind = "answers"
        elif entry.is_symlink():
            kind = "link"
        elif folder:
            kind = "other"  # a folder named answers.toml
        else:
            kind = "file" if path.suffix in SUFFIXES else "other"
        listed.append((kind, path, entry, None))
    found: dict[str, list[Submission]] = defaultdict(list)  # raw stem -> entries
    answers: dict[str, Found | Message] = {}  # raw stem -> answers file, or why it cannot be read
    ignored = []
    for kind, path, entry, walk in listed:
        name, shown = entry.name, clean_name(entry.name)
        if kind == "answers":
            answers[name[: -len(ANSWERS_SUFFIX)]] = answers_at(root, path, census=census)
        elif kind == "link":
            stem = path.stem if path.suffix in SUFFIXES else name
            found[stem].append(Submission(stem, None, Message("file_symlink", {"name": shown}), entry=shown))
        elif kind == "folder":
            found[name].append(folder_entry(name, path, root, real_root, assignment, walk=walk, census=census))
        elif kind == "file":
            found[path.stem].append(checked_file(path.stem, path, root, real_root, entry=shown, census=census))
        else:
            ignored.append(shown)
    ignored += [clean_name(stem + ANSWERS_SUFFIX) for stem in answers if stem not in found]  # whose are they?
    submissions = [_with_answers_beside(_one_of(stem, entries, root, assignment), answers.get(stem), root)
                   for stem, entries in found.items()]
    return sorted(_distinct_ids(submissions), key=lambda entry: entry.student), ignored


def _with_answers_beside(entry: Submission, beside: Found | Message | None, root: Path) -> Submission:
    """``entry`` with the answers file beside it in SUBMISSIONS, unless its own folder holds one: a file
    anyone may drop in the shared folder never replaces the student's own (it is set aside, and noted)."""
    if beside is None or entry.answers is None:
        return with_answers(entry, beside)
    name = "/".join(beside.parts) if isinstance(beside, Found) else str(beside.params.get("name", "?"))
    kept = "/".join(entry.answers.parts) if isinstance(entry.answers, Found) else \
        str(entry.answers.params.get("name", "?"))
    note = Message("note_answers_set_aside", {"kept": clean_name(kept), "other": clean_name(name)})
    return replace(entry, notes=entry.notes + (note,))


def discover_file(path: Path, *, assignment: str) -> tuple[list[Submission], list[str]]:
    """One file graded alone, as a class of one: ``mha grade alice.py --out DIR``.

    The student id is the file's stem, as in a class folder, and a quiz
    answers file beside it (``alice.answers.toml``) counts as it would there.
    The same refusals apply: a link, a file with several hard links, not a regular file.
    """
    path = Path(path)
    entry = file_entry(path)
    sheet = path.with_name(path.stem + ANSWERS_SUFFIX)
    if entry.refusal is None and (sheet.exists() or sheet.is_symlink()):
        entry = with_answers(entry, answers_at(path.parent, sheet))
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
    choice = choose_for([entry.path for entry in usable], assignment)
    chosen = next(entry for entry in usable if entry.path == choice.chosen)
    others = [shown_below(root, path) for path in choice.set_aside]
    others += [entry.entry for entry in entries if entry.refusal is not None]
    note = Message("note_graded_file", {"graded": chosen.shown_path(root), "others": ", ".join(others),
                                        "reason": Message(choice.reason if choice.set_aside else "choice_unreadable",
                                                          {})})
    return replace(chosen, notes=chosen.notes + (note,), set_aside=chosen.set_aside + tuple(others))


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
    """``"2/4"`` -> (2, 4); raises a usage error that says what a shard looks like."""
    if not text:
        return None
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise usage_error("shard_not_k_of_n", value=repr(text)) from None
    if not 1 <= index <= count:
        raise usage_error("shard_k_outside_n", value=text, index=index, count=count)
    return index, count

