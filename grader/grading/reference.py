"""Load the reference solutions, trusted code, in the grader's own process.

This module ships in the student release (where ``solutions/`` does not): there
every loader raises ConfigError with a sentence a student can act on, and the
callers (``mha viz``, ``mha demo``, the notebooks' helpers) say what they do
instead. Nothing here imports a part the release withholds.
"""

from __future__ import annotations

import functools
import importlib.machinery
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


def reference_missing(assignment: str = DEFAULT_ASSIGNMENT) -> str:
    """The sentence said wherever the reference of ``assignment`` is needed and absent."""
    return (f"the reference solution of {assignment} is not part of this install (a student release holds "
            "none); an instructor sets MHA_SOLUTIONS to the folder of the solutions")


def reference_installed(assignment: str = DEFAULT_ASSIGNMENT) -> bool:
    """True where ``solutions/<assignment>.py`` can be loaded."""
    return solution_path(assignment) is not None


def fresh_reference(assignment: str = DEFAULT_ASSIGNMENT) -> ModuleType:
    """A new, private copy of the reference module (safe to patch names in)."""
    path = solution_path(assignment)
    if path is None:
        raise ConfigError(reference_missing(assignment))
    spec = importlib.util.spec_from_file_location(f"mha_reference_{assignment}", path)
    module = importlib.util.module_from_spec(spec)
    status = path.stat()
    # what exec_module runs, compiled once per version of the file (each twin is a copy: dozens per exercise)
    exec(_compiled(spec.name, str(path), status.st_mtime_ns, status.st_size), module.__dict__)
    return module


@functools.lru_cache(maxsize=64)
def _compiled(name: str, path: str, modified: int, size: int):
    """The code of the reference file at ``path``, as its loader's ``exec_module`` would compile it
    (``modified`` and ``size`` key the version of the file, so an edited reference is compiled again)."""
    return importlib.machinery.SourceFileLoader(name, path).get_code(name)
