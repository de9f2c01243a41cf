"""Load the reference solutions, trusted code, in the grader's own process."""

from __future__ import annotations

import functools
import importlib.util
from types import ModuleType

from grader.errors import ConfigError
from grader.paths import DEFAULT_ASSIGNMENT, solution_path


@functools.cache
def load_reference(assignment: str = DEFAULT_ASSIGNMENT) -> ModuleType:
    """Import ``solutions/<assignment>.py`` once and return the module.

    Raises ConfigError where the solutions are not installed (a student
    release), so callers can say that hidden checks need the instructor's copy.
    """
    return fresh_reference(assignment)


def fresh_reference(assignment: str = DEFAULT_ASSIGNMENT) -> ModuleType:
    """A new, private copy of the reference module (safe to patch names in)."""
    path = solution_path(assignment)
    if path is None:
        raise ConfigError(
            f"the reference solution for {assignment!r} is not installed; "
            "hidden checks need the instructor's copy (set MHA_SOLUTIONS to its folder)"
        )
    spec = importlib.util.spec_from_file_location(f"mha_reference_{assignment}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
