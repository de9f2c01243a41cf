"""Checks inside a Jupyter notebook: ``from grader import check; check("split_heads")``.

The student's code lives in the kernel, but it is never evaluated here: the
source of the cells the student ran (IPython's input history, in the order
they ran) becomes a ``SubmissionSource`` that ``grade_submission`` loads in
the sandboxed worker, exactly as ``mha check`` does with a file. Cells that
call the grader themselves (checks, heatmaps) are left out, and magics and
shell lines are dropped with a note, as for a submitted notebook.

``check`` shows the diagnosis as HTML; ``autograde`` is what the test cells
of the nbgrader course call: it shows the same HTML and returns the points,
which nbgrader reads as the cell's partial credit; ``show_heads`` draws the
per-head heatmaps of the student's own ``forward`` (``grader.viz.draw``).
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

from grader.errors import MhaError, UsageError
from grader.i18n import resolve_language
from grader.paths import DEFAULT_ASSIGNMENT
from grader.results import SubmissionResult
from grader.sandbox.source import (GRADER_CALLS, Cell, SubmissionSource,  # noqa: F401 - names of this module too
                                   calls_grader)


class NoCode(Exception):
    """The kernel has run no cell with the student's code yet."""


@dataclass(frozen=True)
class CheckReport:
    """What ``check`` returns: the result, shown as HTML by Jupyter."""

    result: SubmissionResult
    html: str

    @property
    def passed(self) -> bool:
        return self.result.passed

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        failed = sum(test.outcome != "passed" for test in self.result.tests)
        return (f"<check: {self.result.score:g}/{self.result.max_score:g} points, "
                f"{failed} of {len(self.result.tests)} checks failed>")


def check(*functions: str, lang: str | None = None, assignment: str = DEFAULT_ASSIGNMENT) -> CheckReport | None:
    """Check the code run so far in this notebook: ``functions`` only, or every function.

    Returns a report that Jupyter shows as HTML; ``report.passed`` says
    whether every check passed.
    """
    if _inside_worker():
        return None  # a submission being graded: the grader runs its own checks
    from grader.render.notebook_html import result_to_html, say
    from grader.sandbox.isolation import quiet_sandbox
    from grader.sandbox.servers import chosen_isolation

    lang = resolve_language(lang)
    with quiet_sandbox():  # the isolation is in ``report.result.isolation``, not in a warning above the report
        result = grade_kernel(functions=functions, visibility="public", lang=lang, assignment=assignment,
                              isolation=chosen_isolation(), keep_calibration=True)
    title = say("check_title", lang, functions=", ".join(functions) if functions else say("every_function", lang))
    return CheckReport(result, result_to_html(result, lang, title=title))


def autograde(*functions: str, visibility: str = "public", lang: str | None = None,
              assignment: str = DEFAULT_ASSIGNMENT) -> float:
    """An nbgrader test cell: show the checks of ``functions`` and return the points earned.

    ``visibility="all"`` (set inside the cell's hidden-tests region) adds the
    hidden checks, on inputs drawn from the course key and the student id.
    Nothing is written to stderr, which nbgrader would count as a failure.
    """
    if _inside_worker():
        return 0.0
    from IPython.display import HTML, display

    from grader.render.notebook_html import result_to_html, say

    lang = resolve_language(lang)
    student = nbgrader_student()
    with contextlib.redirect_stderr(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the student's own run of a test cell works wherever they are; grading (hidden checks) is sandboxed
        result = grade_kernel(functions=functions, visibility=visibility, lang=lang, assignment=assignment,
                              student=student, isolation="auto" if visibility == "public" else "linux")
    title = say("check_title", lang, functions=", ".join(functions) if functions else say("every_function", lang))
    footer = say("cell_points" if visibility == "public" else "cell_points_hidden", lang,
                 score=result.score, max_score=result.max_score, student=student)
    display(HTML(result_to_html(result, lang, title=title, footer=footer)))
    return float(result.score)


def show_heads(sentence: str | None = None, *, heads: int = 4, d_model: int = 16, seed: int = 0,
               lang: str | None = None) -> None:
    """Draw one heatmap per head for ``sentence``, from this notebook's ``MultiHeadAttention``.

    The student's ``forward`` runs in the sandboxed worker (``grader.viz.draw``);
    heads whose weights are wrong are flagged in the figure.
    """
    if _inside_worker():
        return None
    from IPython.display import HTML, display

    from grader.render.notebook_html import say
    from grader.viz.draw import DEFAULT_SENTENCE
    from grader.viz.draw import show_heads as draw

    lang = resolve_language(lang)
    try:
        source = kernel_source()
        with tempfile.TemporaryDirectory(prefix="mha-heads-") as folder:
            path = Path(folder) / "notebook.ipynb"
            path.write_text(json.dumps(_as_notebook(source)), encoding="utf-8")
            draw(sentence or DEFAULT_SENTENCE, heads=heads, d_model=d_model, seed=seed, file=path, lang=lang)
    except NoCode:
        display(HTML(_note(say("no_code", lang))))
    except MhaError as problem:
        if "NotImplementedError" in str(problem):  # the stub's bilingual text would show both languages
            display(HTML(_note(say("heads_not_written", lang))))
        else:
            display(HTML(_note(say("heads_failed", lang, error=str(problem)))))
    return None


# ---- the code the student ran --------------------------------------------------------------
def grade_kernel(*, functions: tuple[str, ...], visibility: str, lang: str, assignment: str = DEFAULT_ASSIGNMENT,
                 student: str = "student", isolation: str = "auto", keep_calibration: bool = False) -> SubmissionResult:
    """Grade the kernel's code in the worker (``isolation``: ``grader.sandbox.servers``); ``functions`` empty
    means all of them. ``keep_calibration``: a student's check, whose call limits may come from the user's
    cache (``grade_submission``)."""
    from grader.grading.assignment import get_assignment
    from grader.grading.grade import grade_submission, plan_checks
    from grader.render.notebook_html import say
    from grader.results import load_failure

    exercise = get_assignment(assignment)
    for name in functions:
        if name not in exercise.functions:
            raise UsageError(say("unknown_function", lang, name=name, known=", ".join(exercise.functions)))
    try:
        source = kernel_source()
    except NoCode:
        plan = plan_checks(assignment=assignment, visibility=visibility, functions=tuple(functions) or None)
        return load_failure(student=student, error=say("no_code", lang), assignment=assignment,
                            max_score=plan.max_score)
    return grade_submission(source=source, assignment=assignment, visibility=visibility,
                            functions=tuple(functions) or None, student=student, lang=lang, isolation=isolation,
                            keep_calibration=keep_calibration, server=kernel_server(isolation))


# ---- one server for the kernel's checks ------------------------------------------------------------
_KERNEL: dict = {}  # "server", "isolation": the server this kernel's checks share, once started


def kernel_server(isolation: str = "auto"):
    """The server (a fork server, or the portable one: ``isolation``) this kernel's checks share, started on
    the first check and again if it died (None if it cannot start: the check then says why, as without one).
    Each check still gets a fresh worker of its own; the server only spares every check its start, NumPy's
    import included. It ends with the kernel."""
    import atexit

    from grader.sandbox.client import ForkServer, ForkServerError, start_server

    server = _KERNEL.get("server")
    if server is not None and _KERNEL.get("isolation") == isolation:
        process = getattr(server, "process", None)
        if not isinstance(server, ForkServer) or (process is not None and process.poll() is None):
            return server
    _stop_kernel_server()
    try:
        started = start_server(isolation=isolation)
    except ForkServerError:
        return None
    if "registered" not in _KERNEL:
        atexit.register(_stop_kernel_server)
        _KERNEL["registered"] = True
    _KERNEL.update(server=started, isolation=isolation)
    return started


def _stop_kernel_server() -> None:
    server = _KERNEL.pop("server", None)
    if server is not None:
        try:
            server.stop()
        except OSError:
            pass  # a server that died is already gone


def kernel_source() -> SubmissionSource:
    """The cells this kernel ran, in order, without the grader's own cells."""
    try:
        from IPython import get_ipython
    except ImportError:
        get_ipython = None  # noqa: N806 - mirrors IPython's name
    shell = get_ipython() if get_ipython is not None else None
    if shell is None or not hasattr(shell, "history_manager"):
        from grader.render.notebook_html import say

        raise UsageError(say("not_in_notebook", resolve_language(None)))
    cells, notes = [], []
    for number, text in enumerate(shell.history_manager.input_hist_raw):
        label = f"In [{number}]"
        code, dropped = strip_magics(text, label)
        if not code.strip() or calls_grader(code):
            continue
        notes.extend(dropped)
        cells.append(Cell(code, label, label))
    if not cells:
        raise NoCode()
    return SubmissionSource(cells=tuple(cells), mode="cells", notes=tuple(notes), display_name="notebook")


def strip_magics(text: str, label: str) -> tuple[str, list[str]]:
    """Blank out ``%`` and ``!`` lines and drop ``%%`` cells, as for a submitted notebook."""
    if text.lstrip().startswith("%%"):
        return "", [f"{label}: cell magic skipped (it is never run by the grader)"]
    kept, notes = [], []
    for line in text.splitlines():
        if line.lstrip().startswith(("%", "!")):
            notes.append(f"{label}: skipped `{line.strip()[:60]}` (magics and shell commands are not run)")
            kept.append("")  # keep line numbers true
        else:
            kept.append(line)
    return "\n".join(kept) + "\n", notes


def nbgrader_student() -> str:
    """The student id while nbgrader autogrades (its folder), else a fixed name."""
    if os.environ.get("NBGRADER_EXECUTION") == "autograde":
        # nbgrader runs the notebook in autograded/<student>/<assignment>/
        return Path.cwd().parent.name
    return "student"


# The scripts a grading worker runs as __main__ (grader/sandbox/worker/worker_main.py, or its fork server).
WORKER_SCRIPTS = frozenset({"worker_main.py", "forkserver.py", "portable_main.py"})


def _inside_worker() -> bool:
    """True when this code runs inside the grading worker (a submission that calls the grader)."""
    return Path(getattr(sys.modules.get("__main__"), "__file__", "") or "").name in WORKER_SCRIPTS


def _as_notebook(source: SubmissionSource) -> dict:
    cells = [{"cell_type": "code", "metadata": {}, "source": cell.source, "outputs": [], "execution_count": None}
             for cell in source.cells]
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _note(text: str) -> str:
    import html

    return f"<div class='mha-check' style='border-left:4px solid #b26a00;padding:.2rem .8rem'>{html.escape(text)}</div>"
