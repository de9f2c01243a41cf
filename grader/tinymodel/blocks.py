"""The attention building blocks the tiny model computes with: ``softmax``, ``split_heads``, ``combine_heads``.

They are the core exercise's own, never written out here, so the model ships in
the student release without handing out that exercise's answer: where the
solutions are installed (an instructor's copy) they come from the reference;
elsewhere (a student release) from the student's own work on the core
exercise, the script ``exercises/<a>.py`` or its notebook, whichever the
student worked on (``grader.entries.entry.own_work``, the rule ``mha grade``
follows), so the trained model runs on the student's attention once
``mha check`` passes it. A notebook's code cells run in order, as the grader
runs them: its grader cells (checks, heatmaps) are left out and a cell that
raises is skipped.
"""

from __future__ import annotations

import functools
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from grader.errors import ConfigError
from grader.grading.reference import load_reference, reference_installed
from grader.paths import DEFAULT_ASSIGNMENT


@dataclass(frozen=True)
class Blocks:
    """The core module the blocks come from, and where it was found (for messages)."""

    module: ModuleType
    origin: str  # "the reference", or the student's file as found (exercises/<a>.py, or a notebook of it)
    from_reference: bool = False

    def softmax(self, x: np.ndarray) -> np.ndarray:
        return self._called("softmax", lambda: self.module.softmax(x))

    def split_heads(self, x: np.ndarray, num_heads: int) -> np.ndarray:
        """``(B, T, D)`` -> ``(B, H, T, d_k)``, by the core module's ``MultiHeadAttention``."""
        width = x.shape[-1]
        return self._called("split_heads", lambda: self.module.MultiHeadAttention(width, num_heads).split_heads(x))

    def combine_heads(self, x: np.ndarray) -> np.ndarray:
        """``(B, H, T, d_k)`` -> ``(B, T, D)``, the inverse of ``split_heads``."""
        heads, d_k = x.shape[1], x.shape[-1]
        return self._called("combine_heads",
                            lambda: self.module.MultiHeadAttention(heads * d_k, heads).combine_heads(x))

    def _called(self, name: str, call):
        try:
            return call()
        except NotImplementedError:
            raise ConfigError(f"the trained model computes with your {name} ({self.origin}), which is not "
                              f"written yet: write it, check it with mha check, then run this again") from None


def core_blocks() -> Blocks:
    """The reference's blocks where installed, else the student's own exercise's (ConfigError when absent);
    the student's file is imported again whenever it changed, so a fix shows at once in a notebook."""
    from grader.entries.entry import own_work

    if reference_installed(DEFAULT_ASSIGNMENT):
        return Blocks(load_reference(DEFAULT_ASSIGNMENT), "the reference", from_reference=True)
    path = own_work(DEFAULT_ASSIGNMENT).chosen
    if not path.is_file():
        raise ConfigError(f"the trained model computes with your own {DEFAULT_ASSIGNMENT}.py, and {path} is not "
                          "here: run this from the folder of your release (where exercises/ is)")
    stat = path.stat()
    return _student_blocks(path, path.resolve(), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4)
def _student_blocks(shown: Path, path: Path, modified: int, size: int) -> Blocks:
    name = f"mha_student_{DEFAULT_ASSIGNMENT}"
    if path.suffix == ".ipynb":
        return Blocks(_notebook_module(path, name), shown.as_posix())
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the student's own file, on the student's own machine
        raise ConfigError(f"{shown} could not be imported ({type(error).__name__}: {error}); "
                          "mha check shows where") from None
    return Blocks(module, shown.as_posix())


def _notebook_module(path: Path, name: str) -> ModuleType:
    """A module of the notebook's code cells, run in order as the grader runs them (a cell that raises is
    skipped; the grader's own cells are left out)."""
    from grader.sandbox.source import SubmissionError, calls_grader, read_submission

    try:
        source = read_submission(path)
    except SubmissionError as refused:
        raise ConfigError(f"{path}: {refused}") from None
    module = ModuleType(name)
    module.__file__ = str(path)
    for cell in source.cells:
        if calls_grader(cell.source):
            continue
        try:
            exec(compile(cell.source, cell.filename, "exec"), module.__dict__)  # noqa: S102 - the student's own
        except Exception:  # the student's own notebook, on their own machine: as in grading, the cell is skipped
            continue
    return module
