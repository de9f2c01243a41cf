"""The exercises the grader knows, found by their folders, and what it needs to grade each one.

An exercise is one folder, ``grader/assignments/<name>/``, found by its
``exercise.toml`` (folders whose name starts with ``_`` are templates, never
exercises). The spec says where the exercise comes in the curriculum and which
functions it grades, in order; the folder's ``cases.py`` builds the cases
(instructor side), its ``public/`` and ``hidden/`` hold the suites.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from grader.content.loader import load_toml
from grader.errors import ContentError, UsageError
from grader.paths import ASSIGNMENTS_DIR

SPEC_FILE = "exercise.toml"


@dataclass(frozen=True)
class Assignment:
    name: str
    functions: tuple[str, ...]  # graded functions, in the order the computation uses them
    position: int  # where it comes in the curriculum

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
    functions = data.get("functions")
    if not isinstance(functions, list) or not functions or not all(isinstance(f, str) and f for f in functions):
        raise ContentError(f"{path}: 'functions' must list the graded functions, in order")
    position = data.get("position")
    if not isinstance(position, int):
        raise ContentError(f"{path}: 'position' must be a whole number (where the exercise comes in the curriculum)")
    return Assignment(name=folder.name, functions=tuple(functions), position=position)


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
