"""The exercises the grader knows, found by their folders, and what it needs to grade each one.

An exercise is one folder, ``grader/assignments/<name>/``, found by its
``exercise.toml`` (folders whose name starts with ``_`` are templates, never
exercises). The spec says where the exercise comes in the curriculum, which
functions it grades (in order), which of them a quiz answer may unlock, what
``mha drill`` offers, and which of its modules ship to students; the folder's
``cases.py`` builds the cases (instructor side), its ``public/`` and
``hidden/`` hold the suites.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from grader.content.loader import load_toml
from grader.errors import ContentError, UsageError
from grader.paths import ASSIGNMENTS_DIR, DEFAULT_ASSIGNMENT, exercise_path

SPEC_FILE = "exercise.toml"


@dataclass(frozen=True)
class StandIn:
    """The body given for the inverse of a drilled function: correct, but written another way."""

    inverse: str  # the function whose solution block is replaced
    body: tuple[str, ...]  # its lines, unindented


@dataclass(frozen=True)
class Assignment:
    name: str
    functions: tuple[str, ...]  # graded functions, in the order the computation uses them
    position: int  # where it comes in the curriculum
    student_modules: tuple[str, ...] = ()  # modules of the folder that ship with the public checks
    unlockable: tuple[str, ...] = ()  # functions a quiz question may unlock (``mha check --unlock``)
    drills: tuple[str, ...] = ()  # functions ``mha drill`` offers alone
    stand_ins: tuple[tuple[str, StandIn], ...] = ()  # drilled function -> the stand-in of its inverse

    def stand_in(self, function: str) -> StandIn | None:
        return dict(self.stand_ins).get(function)

    @property
    def folder(self) -> Path:
        return ASSIGNMENTS_DIR / self.name

    @property
    def public_cases_file(self) -> Path:
        return self.folder / "public_cases.npz"

    @functools.cached_property
    def _public(self) -> dict:
        from grader.grading.store import load_cases

        return load_cases(self.public_cases_file)

    def public_cases(self) -> dict:
        """The shipped public cases (fixed inputs: a student's instant check)."""
        return self._public

    def module(self) -> ModuleType:
        """The exercise's case builder and twins, ``assignments/<name>/cases.py`` (instructor side)."""
        return importlib.import_module(f"grader.assignments.{self.name}.cases")

    def drawn_public_cases(self, seed: int) -> dict:
        """The public checks' cases with inputs drawn from ``seed`` (instructor side: graded runs)."""
        return self.module().public_cases(seed)

    def build_hidden_cases(self, seed: int) -> dict:
        """The hidden cases for one seed (instructor side)."""
        return self.module().hidden_cases(seed)


def read_spec(folder: Path) -> Assignment:
    """The exercise of ``folder``, from its ``exercise.toml``; a ContentError names what is wrong."""
    path = folder / SPEC_FILE
    data = load_toml(path)
    functions = _names(data, "functions", path, required=True)
    position = data.get("position")
    if not isinstance(position, int):
        raise ContentError(f"{path}: 'position' must be a whole number (where the exercise comes in the curriculum)")
    shipped = _names(data, "student_modules", path)
    if not all(name.endswith(".py") for name in shipped):
        raise ContentError(f"{path}: 'student_modules' must list module files of the folder, e.g. \"signatures.py\"")
    unlockable = _names(data, "unlockable", path)
    drill = data.get("drill", {})
    drills = _names(drill, "functions", path)
    stand_ins = tuple((function, _stand_in(raw, f"{path}: drill.stand_ins.{function}"))
                      for function, raw in drill.get("stand_ins", {}).items())
    for key, names in (("unlockable", unlockable), ("drill.functions", drills),
                       ("drill.stand_ins", tuple(name for pair in stand_ins for name in (pair[0], pair[1].inverse)))):
        if set(names) - set(functions):
            raise ContentError(f"{path}: '{key}' names {', '.join(sorted(set(names) - set(functions)))}, "
                               f"which 'functions' does not list")
    return Assignment(name=folder.name, functions=functions, position=position, student_modules=shipped,
                      unlockable=unlockable, drills=drills, stand_ins=stand_ins)


def _names(data: dict, key: str, path: Path, *, required: bool = False) -> tuple[str, ...]:
    names = data.get(key, [])
    if not isinstance(names, list) or not all(isinstance(name, str) and name for name in names) \
            or (required and not names):
        raise ContentError(f"{path}: '{key}' must be a list of names")
    return tuple(names)


def _stand_in(raw, where: str) -> StandIn:
    if not isinstance(raw, dict) or not isinstance(raw.get("inverse"), str) or not isinstance(raw.get("body"), str):
        raise ContentError(f"{where} needs 'inverse' (a function) and 'body' (its lines)")
    return StandIn(inverse=raw["inverse"], body=tuple(raw["body"].strip("\n").splitlines()))


def discover(root: Path = ASSIGNMENTS_DIR) -> dict[str, Assignment]:
    """Every exercise folder under ``root`` by name, in curriculum order."""
    found = [read_spec(folder) for folder in sorted(root.iterdir())
             if (folder / SPEC_FILE).is_file() and not folder.name.startswith("_")]
    return {exercise.name: exercise for exercise in sorted(found, key=lambda exercise: (exercise.position, exercise.name))}


ASSIGNMENTS: dict[str, Assignment] = discover()


def get_assignment(name: str) -> Assignment:
    try:
        return ASSIGNMENTS[name]
    except KeyError:
        known = ", ".join(sorted(ASSIGNMENTS))
        raise UsageError(f"unknown assignment {name!r}; choose one of: {known}") from None


_DEFINITION = re.compile(r"^(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)", re.MULTILINE)


def defined_names(path: Path) -> set[str]:
    """The top-level functions and classes a file (or a notebook's code cells) defines, read without running
    it; a syntax error elsewhere in the file does not hide them."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".ipynb":
        try:
            cells = json.loads(text).get("cells", [])
            text = "\n".join("".join(cell.get("source", "")) for cell in cells if cell.get("cell_type") == "code")
        except (ValueError, AttributeError, TypeError, RecursionError):
            return set()
    return set(_DEFINITION.findall(text))


def assignment_of(file: Path) -> str:
    """The exercise ``file`` belongs to: the one it is named after, else the one whose stub's functions and
    classes it defines all of (the most specific when several do), else the one it shares the most names
    with. A file that defines none of any exercise's names, or fits the default exercise as well as others,
    is checked as the default exercise; UsageError when other exercises fit equally well."""
    if file.stem in ASSIGNMENTS:
        return file.stem
    defined = defined_names(file)
    scores = []
    for name in ASSIGNMENTS:
        stub = exercise_path(name)
        wanted = defined_names(stub) if stub.is_file() else set()
        if wanted:
            shared = len(wanted & defined)
            # a full fit: the most specific stub wins; else the stub the file covers the largest part of
            scores.append((wanted <= defined, len(wanted) if wanted <= defined else shared / len(wanted), shared,
                           name))
    scores.sort(reverse=True)
    if not scores or scores[0][2] == 0:
        return DEFAULT_ASSIGNMENT
    best = scores[0]
    if len(scores) == 1 or best[:3] != scores[1][:3]:
        return best[3]
    tied = [name for *score, name in scores if tuple(score) == best[:3]]
    if DEFAULT_ASSIGNMENT in tied:
        return DEFAULT_ASSIGNMENT  # what a check without --assignment has always meant
    raise UsageError(f"cannot tell which exercise {file} is: it fits {' and '.join(sorted(tied))} equally well; "
                     f"pass --assignment NAME (one of: {', '.join(sorted(ASSIGNMENTS))})")
